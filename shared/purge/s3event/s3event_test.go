package s3event_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

// brief renders a change compactly for comparison.
func brief(c s3event.Change) string {
	s := fmt.Sprintf("%s %s %s %s", c.Kind, c.Bucket, c.Key, c.Sequencer)
	if c.MessageID != "" {
		s += " @" + c.MessageID[:4]
	}
	return s
}

// decodeFixtureCase is what one sample event decodes to.
type decodeFixtureCase struct {
	file     string
	source   s3event.Source
	changes  []string
	problems []int // indexes of the records reported
	msgProbs []string
	ignored  int
}

// decodeFixtureCases are the sample events and what each decodes to.
var decodeFixtureCases = []decodeFixtureCase{
	{
		file:    "s3-put.json",
		source:  s3event.SourceS3,
		changes: []string{"created tiles tiles/city maps/c++/100%/3/4/5.png 0067D3F4ADA1B2C3E0"},
	},
	{
		file:    "s3-delete.json",
		source:  s3event.SourceS3,
		changes: []string{"removed tiles tiles/osm/12/2048/1361.png 0067D3FD1321AB45CD"},
	},
	{
		file:    "s3-delete-marker.json",
		source:  s3event.SourceS3,
		changes: []string{"removed tiles tiles/city maps/3/4/6.png 0067D3FD1321AB45DE"},
	},
	{
		file:    "s3-lifecycle.json",
		source:  s3event.SourceS3,
		changes: []string{"expired tiles tiles/weather/radar/2025-03-08T00:00Z/5/16/10.png 0067D4C5DF00000001"},
	},
	{file: "s3-lifecycle-transition.json", source: s3event.SourceS3, ignored: 1},
	{file: "s3-test-event.json", source: s3event.SourceTestEvent, ignored: 1},
	{
		file:   "sqs-s3.json",
		source: s3event.SourceSQS,
		changes: []string{
			"created tiles tiles/osm/5/16/10.png 0067D41111111111A0 @19dd",
			"created tiles tiles/osm/5/16/11.png 0067D41111111111A1 @4a9c",
			"removed tiles tiles/osm/5/16/10.png 0067D41111111111B0 @5bad",
			"created tiles tiles/osm hd/5/16/10.png 67D41111111111B1 @6c0e",
			"created tiles tiles/osm/5/16/10.png 67D411111111119F @7d1f",
			"created tiles tiles/café/地図/2/1/1.pbf 0067D41111111111C0 @8e20",
			"created tiles tiles/iiif/page=7/100%/0,0,512,512/full/0/default.jpg 0067D41111111111C1 @9f31",
			"created tiles tiles/c++/1/0/1.png 0067D41111111111C2 @a042",
			"created tiles uploads/raw/scan 0001.tif 0067D41111111111C3 @b153",
			"created tiles _tilesieve/journal/head 0067D41111111111C4 @c264",
			"expired tiles tiles/weather/radar/2025-03-08T00:00Z/5/16/10.png 0067D41111111111C6 @e486",
			"removed tiles tiles/city maps/3/4/6.png 0067D41111111111C7 @f597",
			"created tiles tiles/osm/12/2048/1361.png 0067D41111111111C8 @06a8",
		},
		msgProbs: []string{"3f8b1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "d375fb46-f708-491a-a435-a0b1c2d3e4f5"},
		ignored:  1, // the TestEvent body
	},
	{
		file:    "eventbridge-created.json",
		source:  s3event.SourceEventBridge,
		changes: []string{"created tiles tiles/city maps/c++/3/4/5.png 0067D3F4ADA1B2C3E0"},
	},
	{
		file:    "eventbridge-deleted.json",
		source:  s3event.SourceEventBridge,
		changes: []string{"removed tiles tiles/café/100%/2/1/1.pbf 0067D3FD1321AB45EF"},
	},
	{
		// What the ExistingBucket rule delivers: EventBridge events inside SQS messages.
		file:   "sqs-eventbridge.json",
		source: s3event.SourceSQS,
		changes: []string{
			"created my-maps tiles/osm/5/16/10.png 0067D41A2B3C4D5E60 @c1f0",
			"expired my-maps tiles/weather/radar/2025-03-08T00:00Z/5/16/10.png 0067D41A2B3C4D5E61 @d2a1",
			"created my-maps tiles/city maps/c++/3/4/5.png 0067D41A2B3C4D5E62 @e3b2",
		},
	},
	{
		file:     "s3-malformed.json",
		source:   s3event.SourceS3,
		problems: []int{0},
	},
}

func TestDecodeFixtures(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeFixtureCases {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			b, err := s3event.Decode(fixtures.Read(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if b.Source != tt.source {
				t.Errorf("source: got %v, want %v", b.Source, tt.source)
			}
			var got []string
			for _, c := range b.Changes {
				got = append(got, brief(c))
			}
			if !slices.Equal(got, tt.changes) {
				t.Errorf("changes:\ngot  %q\nwant %q", got, tt.changes)
			}
			var idx []int
			var msgs []string
			for _, p := range b.Problems {
				if p.MessageID != "" {
					msgs = append(msgs, p.MessageID)
				} else {
					idx = append(idx, p.Index)
				}
				if p.Reason == "" {
					t.Errorf("problem %v has no reason", p)
				}
			}
			if !slices.Equal(idx, tt.problems) {
				t.Errorf("problem records: got %v, want %v (%v)", idx, tt.problems, b.Problems)
			}
			if !slices.Equal(msgs, tt.msgProbs) {
				t.Errorf("problem messages: got %v, want %v", msgs, tt.msgProbs)
			}
			if b.Ignored != tt.ignored {
				t.Errorf("ignored: got %d, want %d", b.Ignored, tt.ignored)
			}
		})
	}
}

func TestDecodeFixtureDetails(t *testing.T) {
	t.Parallel()
	b, err := s3event.Decode(fixtures.Read(t, "s3-put.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := b.Changes[0]
	if c.Size != 1187 || c.ETag != "0c1a3f7e5d2b8a4f6e9d0c1b2a3f4e5d" || c.Event != "ObjectCreated:Put" {
		t.Errorf("got %+v", c)
	}
	// EventBridge spells the field "etag", notifications "eTag": both decode.
	b, err = s3event.Decode(fixtures.Read(t, "eventbridge-created.json"))
	if err != nil {
		t.Fatal(err)
	}
	c = b.Changes[0]
	if c.Size != 1187 || c.ETag != "0c1a3f7e5d2b8a4f6e9d0c1b2a3f4e5d" || c.Sequencer != "0067D3F4ADA1B2C3E0" || c.Event != "Object Created" {
		t.Errorf("got %+v", c)
	}
	b, err = s3event.Decode(fixtures.Read(t, "sqs-s3.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.MessageIDs) != 16 {
		t.Errorf("message ids: got %v, want 16", b.MessageIDs)
	}
}

func TestDecodeUnrecognized(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `null`, `[]`, `"x"`, `{}`, `{"Records":null}`, `{"source":"aws.ec2","detail-type":"x"}`, `{"Event":"s3:Other"}`, `{"Records":[`} {
		if _, err := s3event.Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q): got no error", in)
		}
	}
}

func TestDecodeShapes(t *testing.T) {
	t.Parallel()
	rec := func(name, key string) string {
		return fmt.Sprintf(`{"eventSource":"aws:s3","eventName":%q,"s3":{"bucket":{"name":"tiles"},"object":{"key":%q,"sequencer":"01"}}}`, name, key)
	}
	eb := func(detailType, reason, key string) string {
		return fmt.Sprintf(`{"source":"aws.s3","detail-type":%q,"detail":{"bucket":{"name":"tiles"},"object":{"key":%q,"sequencer":"01"},"reason":%q}}`, detailType, key, reason)
	}
	sqs := func(id, body string) string {
		return fmt.Sprintf(`{"messageId":%q,"eventSource":"aws:sqs","body":%q}`, id, body)
	}
	sns := func(msg string) string {
		return fmt.Sprintf(`{"Type":"Notification","MessageId":"x","TopicArn":"arn:aws:sns:eu-west-1:1:t","Message":%q}`, msg)
	}
	tests := []struct {
		name, in string
		want     []string
		problems int
		ignored  int
	}{
		{"names", `{"Records":[` + strings.Join([]string{
			rec("ObjectCreated:CompleteMultipartUpload", "a"),
			rec("ObjectCreated:Copy", "b"),
			rec("ObjectCreated:Post", "c"),
			rec("s3:ObjectRemoved:Delete", "d"),
			rec("LifecycleExpiration:Delete", "e"),
			rec("ObjectTagging:Put", "f"),
			rec("ObjectAcl:Put", "g"),
			rec("Replication:OperationFailedReplication", "h"),
			rec("IntelligentTiering", "i"),
			rec("", "j"),
		}, ",") + `]}`, []string{"created a", "created b", "created c", "removed d", "expired e"}, 1, 4},
		{"eventbridge lifecycle", eb("Object Deleted", "Lifecycle Expiration", "a b+c%2B"), []string{"expired a b+c%2B"}, 0, 0},
		{"eventbridge restore ignored", eb("Object Restore Completed", "", "a"), nil, 0, 1},
		{"eventbridge no key", `{"source":"aws.s3","detail-type":"Object Created","detail":{"bucket":{"name":"tiles"},"object":{}}}`, nil, 1, 0},
		{"eventbridge no detail", `{"source":"aws.s3","detail-type":"Object Created"}`, nil, 1, 0},
		{"eventbridge empty key", eb("Object Created", "PutObject", ""), nil, 1, 0},
		{"sqs sns envelope", `{"Records":[` + sqs("m1", sns(`{"Records":[`+rec("ObjectCreated:Put", "x+y")+`]}`)) + `]}`, []string{"created x y"}, 0, 0},
		{"sqs eventbridge body", `{"Records":[` + sqs("m1", eb("Object Created", "PutObject", "x+y")) + `]}`, []string{"created x+y"}, 0, 0},
		{"sqs body not s3", `{"Records":[` + sqs("m1", `{"hello":1}`) + `]}`, nil, 1, 0},
		{"sqs nested sns twice", `{"Records":[` + sqs("m1", sns(sns(`{"Records":[]}`))) + `]}`, nil, 1, 0},
		{"sqs no message id", `{"Records":[{"eventSource":"aws:sqs","body":"{}"}]}`, nil, 1, 0},
		{"key too long", `{"Records":[` + rec("ObjectCreated:Put", strings.Repeat("a", 1025)) + `]}`, nil, 1, 0},
		{"record not an object", `{"Records":[1,"x",null]}`, nil, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := s3event.Decode([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range b.Changes {
				got = append(got, c.Kind.String()+" "+c.Key)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("changes: got %q, want %q", got, tt.want)
			}
			if len(b.Problems) != tt.problems {
				t.Errorf("problems: got %v, want %d", b.Problems, tt.problems)
			}
			if b.Ignored != tt.ignored {
				t.Errorf("ignored: got %d, want %d", b.Ignored, tt.ignored)
			}
		})
	}
}

func TestCompareSequencer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"0055AED6DCD90281E5", "0055AED6DCD90281E5", 0},
		{"0055AED6DCD90281E5", "0055AED6DCD90281E6", -1},
		{"55AED6DCD90281E5", "0055AED6DCD90281E5", 0}, // padding makes them equal
		{"56", "0055AED6DCD90281E5", -1},              // shorter is not newer just by sorting first
		{"0067D3F4ADA1B2C3D4", "67D3F4ADA1B2C3D3", 1},
		{"00ab", "00AB", 0},
		{"", "00", -1},
		{"01", "", 1},
		{"", "", 0},
	}
	for _, tt := range tests {
		if got := s3event.CompareSequencer(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareSequencer(%q, %q): got %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := s3event.CompareSequencer(tt.b, tt.a); got != -tt.want {
			t.Errorf("CompareSequencer(%q, %q): got %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

func TestLatestDropsStaleDuplicate(t *testing.T) {
	t.Parallel()
	b, err := s3event.Decode(fixtures.Read(t, "sqs-s3.json"))
	if err != nil {
		t.Fatal(err)
	}
	latest, dropped := s3event.Latest(b.Changes)
	if dropped != 2 {
		t.Errorf("dropped: got %d, want 2", dropped)
	}
	var got []string
	for _, c := range latest {
		if strings.HasPrefix(c.Key, "tiles/osm") && strings.Contains(c.Key, "/5/16/") {
			got = append(got, brief(c))
		}
	}
	// Three changes to osm/5/16/10.png in three messages: the delete has
	// the highest sequencer, whatever the order of delivery.
	want := []string{
		"created tiles tiles/osm/5/16/11.png 0067D41111111111A1 @4a9c",
		"removed tiles tiles/osm/5/16/10.png 0067D41111111111B0 @5bad",
		"created tiles tiles/osm hd/5/16/10.png 67D41111111111B1 @6c0e",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// FuzzDecode checks Decode's promises on arbitrary input: no panic, and every
// change carries a plausible S3 key that is exactly what its record said.
func FuzzDecode(f *testing.F) {
	entries, err := fs.ReadDir(fixtures.FS, ".")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(fixtures.Read(f, e.Name()))
	}
	f.Add([]byte(`{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"a%2"}}}]}`))
	f.Add([]byte(`{"Records":[{"eventSource":"aws:sqs","messageId":"m","body":"{\"Type\":\"Notification\",\"Message\":\"{}\"}"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := s3event.Decode(in)
		if err != nil {
			if len(b.Changes)+len(b.Problems) != 0 {
				t.Fatalf("error %v with a non-empty batch", err)
			}
			return
		}
		// Differential check against aws-lambda-go's decoding of the same
		// document, where it succeeds: every change of a direct notification
		// is one of its records, in order, with the same decoded key.
		var ref events.S3Event
		if b.Source == s3event.SourceS3 && json.Unmarshal(in, &ref) == nil {
			i := 0
			for _, c := range b.Changes {
				for i < len(ref.Records) && !(ref.Records[i].S3.Bucket.Name == c.Bucket &&
					ref.Records[i].S3.Object.URLDecodedKey == c.Key &&
					ref.Records[i].S3.Object.Sequencer == c.Sequencer) {
					i++
				}
				if i == len(ref.Records) {
					t.Fatalf("change %+v is not a record aws-lambda-go sees", c)
				}
				i++
			}
		}
		for _, c := range b.Changes {
			if c.Key == "" || len(c.Key) > 1024 || !utf8.ValidString(c.Key) {
				t.Fatalf("implausible key %q", c.Key)
			}
			if c.Bucket == "" {
				t.Fatalf("change without bucket: %+v", c)
			}
			if c.Kind < s3event.Created || c.Kind > s3event.Expired {
				t.Fatalf("bad kind %v", c.Kind)
			}
			if b.Source == s3event.SourceS3 {
				// A key from a notification must be the unescaping of a
				// string in the input: escaping it again and unescaping gives
				// it back, and it appears in the input in some encoded form.
				if u, err := url.QueryUnescape(url.QueryEscape(c.Key)); err != nil || u != c.Key {
					t.Fatalf("key %q does not round-trip", c.Key)
				}
			}
		}
		for _, p := range b.Problems {
			if p.Reason == "" {
				t.Fatalf("problem without reason: %+v", p)
			}
		}
	})
}

// TestDecodeOwnMessages: an SQS body with a top-level "tilesieve" member is
// one of the product's own messages, passed on whole with its kind; inside
// an SNS envelope it is not (the product never sends through SNS), and
// neither kind of body disturbs the S3 notifications beside it.
func TestDecodeOwnMessages(t *testing.T) {
	t.Parallel()
	own := `{"tilesieve":"invalidate","invalidation":{"targets":["osm/"],"batch_id":"b"}}`
	s3body := `{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"tiles"},"object":{"key":"tiles/osm/1/0/0.png","sequencer":"01"}}}]}`
	sns, _ := json.Marshal(map[string]string{"Type": "Notification", "Message": own})
	tests := []struct {
		name         string
		bodies       []string
		wantMessages []s3event.Message
		wantChanges  int
		wantProblems int
	}{
		{"own message", []string{own}, []s3event.Message{{MessageID: "m-0", Index: 0, Kind: "invalidate", Body: []byte(own)}}, 0, 0},
		{"beside a notification", []string{s3body, own}, []s3event.Message{{MessageID: "m-1", Index: 1, Kind: "invalidate", Body: []byte(own)}}, 1, 0},
		{"inside SNS", []string{string(sns)}, nil, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ev events.SQSEvent
			for i, b := range tt.bodies {
				ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m-%d", i), EventSource: "aws:sqs", Body: b})
			}
			raw, _ := json.Marshal(ev)
			b, err := s3event.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(b.Messages, tt.wantMessages, func(a, b s3event.Message) bool {
				return a.MessageID == b.MessageID && a.Index == b.Index && a.Kind == b.Kind && string(a.Body) == string(b.Body)
			}) {
				t.Errorf("messages: got %+v, want %+v", b.Messages, tt.wantMessages)
			}
			if len(b.Changes) != tt.wantChanges || len(b.Problems) != tt.wantProblems {
				t.Errorf("got %d changes, %d problems; want %d, %d", len(b.Changes), len(b.Problems), tt.wantChanges, tt.wantProblems)
			}
		})
	}
}
