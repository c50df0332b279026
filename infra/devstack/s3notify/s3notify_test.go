package s3notify_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/quick"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/tilesieve/tilesieve/infra/devstack/s3notify"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

func TestEncodeKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"tiles/osm/12/2048/1361.png", "tiles/osm/12/2048/1361.png"},
		{"tiles/city maps/3/4/5.png", "tiles/city+maps/3/4/5.png"},
		{"tiles/c++/1/0/1.png", "tiles/c%2B%2B/1/0/1.png"},
		{"tiles/a b+c/0/0/0.png", "tiles/a+b%2Bc/0/0/0.png"},
		{"tiles/café/地図/2/1/1.pbf", "tiles/caf%C3%A9/%E5%9C%B0%E5%9B%B3/2/1/1.pbf"},
		{"tiles/iiif/page=7/100%/0,0,512,512/full/0/default.jpg", "tiles/iiif/page%3D7/100%25/0%2C0%2C512%2C512/full/0/default.jpg"},
	} {
		if got := s3notify.EncodeKey(tc.in); got != tc.want {
			t.Errorf("EncodeKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	roundTrip := func(s string) bool {
		got, err := url.QueryUnescape(s3notify.EncodeKey(s))
		return err == nil && got == s
	}
	if err := quick.Check(roundTrip, nil); err != nil {
		t.Error(err)
	}
}

// recorder is a Target that keeps what it was sent and can fail on demand.
type recorder struct {
	mu     sync.Mutex // guards events and fail
	events []json.RawMessage
	fail   int // fail this many calls first
}

func (r *recorder) Handle(_ context.Context, ev json.RawMessage) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		return nil, errors.New("injected failure")
	}
	r.events = append(r.events, append(json.RawMessage(nil), ev...))
	return nil, nil
}

func (r *recorder) take() []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

type fixture struct {
	n   *s3notify.Notifier
	rec *recorder
	c   *s3.Client
	url string
}

func start(t *testing.T, cfg s3notify.Config) *fixture {
	t.Helper()
	srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles", "other"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	var n *s3notify.Notifier
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)
	c := srv.Client(hs.URL)
	cfg.RetryDelay = time.Millisecond
	n = s3notify.New(srv.Handler(), s3notify.HeadStat(srv.Client(hs.URL)), rec, cfg, nil)
	t.Cleanup(func() { n.Close(context.Background()) })
	return &fixture{n: n, rec: rec, c: c, url: hs.URL}
}

// flushed waits for the queue and decodes what the target got, one change
// per notification.
func (f *fixture) flushed(t *testing.T) []s3event.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var out []s3event.Change
	for _, raw := range f.rec.take() {
		b, err := s3event.Decode(raw)
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if b.Source != s3event.SourceS3 || len(b.Changes) != 1 || len(b.Problems) != 0 {
			t.Fatalf("notification %s: got %+v, want one S3 record", raw, b)
		}
		out = append(out, b.Changes[0])
	}
	return out
}

func put(t *testing.T, c *s3.Client, key, body string) string {
	t.Helper()
	etag := s3localtest.Put(t, c, "tiles", key, []byte(body), "image/png", "")
	return strings.Trim(etag, `"`)
}

func TestRecordShape(t *testing.T) {
	t.Parallel()
	f := start(t, s3notify.Config{Region: "eu-west-1", Prefix: "tiles/"})
	put(t, f.c, "tiles/a b+c/1/0/0.png", "png")
	f.n.Flush(context.Background())
	raws := f.rec.take()
	if len(raws) != 1 {
		t.Fatalf("got %d notifications, want 1", len(raws))
	}
	var ev map[string]any
	if err := json.Unmarshal(raws[0], &ev); err != nil {
		t.Fatal(err)
	}
	rec := ev["Records"].([]any)[0].(map[string]any)
	s3m := rec["s3"].(map[string]any)
	obj := s3m["object"].(map[string]any)
	bucket := s3m["bucket"].(map[string]any)
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"eventVersion", rec["eventVersion"], "2.1"},
		{"eventSource", rec["eventSource"], "aws:s3"},
		{"awsRegion", rec["awsRegion"], "eu-west-1"},
		{"eventName", rec["eventName"], "ObjectCreated:Put"},
		{"principalId", rec["userIdentity"].(map[string]any)["principalId"], "AWS:" + s3local.DefaultAccessKey},
		{"sourceIPAddress", rec["requestParameters"].(map[string]any)["sourceIPAddress"], "127.0.0.1"},
		{"s3SchemaVersion", s3m["s3SchemaVersion"], "1.0"},
		{"bucket.name", bucket["name"], "tiles"},
		{"bucket.arn", bucket["arn"], "arn:aws:s3:::tiles"},
		{"object.key", obj["key"], "tiles/a+b%2Bc/1/0/0.png"},
		{"object.size", obj["size"], float64(3)},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if tm, err := time.Parse("2006-01-02T15:04:05.000Z", rec["eventTime"].(string)); err != nil || time.Since(tm) > time.Minute {
		t.Errorf("eventTime %v: %v", rec["eventTime"], err)
	}
	if e := obj["eTag"].(string); len(e) != 32 || strings.Contains(e, `"`) {
		t.Errorf("eTag %q: want 32 hex digits without quotes", e)
	}
	if rid := rec["responseElements"].(map[string]any)["x-amz-request-id"]; rid == "" {
		t.Error("no x-amz-request-id")
	}
	if seq := obj["sequencer"].(string); len(seq) != 18 || strings.Trim(seq, "0123456789ABCDEF") != "" {
		t.Errorf("sequencer %q: want 18 hex digits", seq)
	}
}

func TestEveryWriteNotifiesInOrder(t *testing.T) {
	t.Parallel()
	f := start(t, s3notify.Config{Prefix: "tiles/"})
	ctx := context.Background()
	tag := put(t, f.c, "tiles/demo/0/0/0.png", "zero")
	put(t, f.c, "outside/0/0/0.png", "ignored by the filter")
	put(t, f.c, "tiles/demo/1/0/0.png", "one")

	// COPY.
	if _, err := f.c.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: aws.String("tiles"), Key: aws.String("tiles/copy of/1/1/1.png"),
		CopySource: aws.String("tiles/tiles/demo/0/0/0.png"),
	}); err != nil {
		t.Fatal(err)
	}

	// CompleteMultipartUpload (5 MiB part + a small last one).
	mpu, err := f.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("tiles"), Key: aws.String("tiles/big/2/0/0.png")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, body := range [][]byte{bytes.Repeat([]byte("x"), 5<<20), []byte("tail")} {
		out, err := f.c.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String("tiles"), Key: aws.String("tiles/big/2/0/0.png"), UploadId: mpu.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body),
		})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	if _, err := f.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String("tiles"), Key: aws.String("tiles/big/2/0/0.png"), UploadId: mpu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}); err != nil {
		t.Fatal(err)
	}

	// POST (browser form upload, signed in the header).
	postForm(t, f.url, "tiles/posted/3/1/2.png", "form body")

	// DELETE, and a multi-delete in which one key is refused (wrong ETag).
	if _, err := f.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("tiles"), Key: aws.String("tiles/demo/1/0/0.png")}); err != nil {
		t.Fatal(err)
	}
	put(t, f.c, "tiles/keep/0/0/0.png", "kept")
	out, err := f.c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("tiles"), Delete: &types.Delete{
		Quiet: aws.Bool(true),
		Objects: []types.ObjectIdentifier{
			{Key: aws.String("tiles/demo/0/0/0.png")},
			{Key: aws.String("tiles/keep/0/0/0.png"), ETag: aws.String(`"00000000000000000000000000000000"`)},
			{Key: aws.String("tiles/copy of/1/1/1.png")},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 {
		t.Fatalf("multi-delete: got %d errors, want the one refused key", len(out.Errors))
	}

	got := f.flushed(t)
	want := []struct{ name, key string }{
		{"ObjectCreated:Put", "tiles/demo/0/0/0.png"},
		{"ObjectCreated:Put", "tiles/demo/1/0/0.png"},
		{"ObjectCreated:Copy", "tiles/copy of/1/1/1.png"},
		{"ObjectCreated:CompleteMultipartUpload", "tiles/big/2/0/0.png"},
		{"ObjectCreated:Post", "tiles/posted/3/1/2.png"},
		{"ObjectRemoved:Delete", "tiles/demo/1/0/0.png"},
		{"ObjectCreated:Put", "tiles/keep/0/0/0.png"},
		{"ObjectRemoved:Delete", "tiles/demo/0/0/0.png"},
		{"ObjectRemoved:Delete", "tiles/copy of/1/1/1.png"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d notifications %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Event != w.name || got[i].Key != w.key || got[i].Bucket != "tiles" {
			t.Errorf("notification %d: got %s %s, want %s %s", i, got[i].Event, got[i].Key, w.name, w.key)
		}
		if i > 0 && s3event.CompareSequencer(got[i-1].Sequencer, got[i].Sequencer) >= 0 {
			t.Errorf("notification %d: sequencer %s does not rise after %s", i, got[i].Sequencer, got[i-1].Sequencer)
		}
	}
	if got[0].ETag != tag || got[0].Size != 4 {
		t.Errorf("PUT record: got eTag %q size %d, want %q 4", got[0].ETag, got[0].Size, tag)
	}
	if got[2].ETag != tag || got[2].Size != 4 {
		t.Errorf("COPY record: got eTag %q size %d, want the source's %q 4", got[2].ETag, got[2].Size, tag)
	}
	// (gofakes3 gives a completed upload a plain MD5 ETag, not S3's "<md5>-<parts>".)
	if got[3].Size != 5<<20+4 || got[3].ETag == "" {
		t.Errorf("multipart record: got eTag %q size %d, want an ETag and %d bytes", got[3].ETag, got[3].Size, 5<<20+4)
	}
	if got[4].Size != int64(len("form body")) {
		t.Errorf("POST record: got size %d, want %d", got[4].Size, len("form body"))
	}
	if got[5].Size != 0 || got[5].ETag != "" {
		t.Errorf("DELETE record: got size %d eTag %q, want neither", got[5].Size, got[5].ETag)
	}
	if st := f.n.Stats(); st.Emitted != 9 || st.Delivered != 9 || st.Filtered != 1 || st.Failed != 0 {
		t.Errorf("stats: got %+v", st)
	}
}

// postForm uploads body under key with a browser-style form POST, signed in
// the Authorization header (the endpoint checks SigV4 on every request).
func postForm(t *testing.T, base, key, body string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("key", key)
	mw.WriteField("Content-Type", "image/png")
	fw, _ := mw.CreateFormFile("file", "tile.png")
	fw.Write([]byte(body))
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/tiles", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: s3local.DefaultAccessKey, SecretAccessKey: s3local.DefaultSecretKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", s3local.DefaultRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST upload: %s", resp.Status)
	}
}

func TestFailedWritesDoNotNotify(t *testing.T) {
	t.Parallel()
	f := start(t, s3notify.Config{})
	ctx := context.Background()
	// Copy of a missing source, complete of an unknown upload.
	if _, err := f.c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("tiles"), Key: aws.String("x"), CopySource: aws.String("tiles/missing")}); err == nil {
		t.Fatal("copy of a missing object succeeded")
	}
	if _, err := f.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("tiles"), Key: aws.String("x"), UploadId: aws.String("nope"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: aws.String(`"x"`), PartNumber: aws.Int32(1)}}}}); err == nil {
		t.Fatal("complete of an unknown upload succeeded")
	}
	// Reads and part uploads change no object.
	put(t, f.c, "k", "v")
	f.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("k")})
	if got := f.flushed(t); len(got) != 1 || got[0].Key != "k" {
		t.Fatalf("got %+v, want only the one PUT", got)
	}
}

func TestRetriesAndDisable(t *testing.T) {
	t.Parallel()
	f := start(t, s3notify.Config{})
	f.rec.fail = 2 // two failures, then the third attempt succeeds
	put(t, f.c, "a", "1")
	if got := f.flushed(t); len(got) != 1 {
		t.Fatalf("got %d, want the event delivered on its third attempt", len(got))
	}
	f.n.SetEnabled(false)
	put(t, f.c, "b", "2")
	f.n.SetEnabled(true)
	if got := f.flushed(t); len(got) != 0 {
		t.Fatalf("got %+v while disabled, want nothing", got)
	}
	f.rec.fail = 3
	put(t, f.c, "c", "3")
	f.flushed(t)
	if st := f.n.Stats(); st.Failed != 1 || st.Delivered != 1 {
		t.Errorf("stats: got %+v, want 1 delivered, 1 failed", st)
	}
}

// sqsTarget decodes SQS batches, holds the first one until released, and
// reports a chosen key's message failed the first time it sees it.
type sqsTarget struct {
	release chan struct{}
	mu      sync.Mutex // guards the fields below
	calls   int
	sizes   []int
	keys    []string // accepted, in order
	failKey string
	failed  bool
}

func (s *sqsTarget) Handle(_ context.Context, raw json.RawMessage) (any, error) {
	<-s.release
	b, err := s3event.Decode(raw)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if b.Source != s3event.SourceSQS || len(b.Problems) > 0 {
		return nil, fmt.Errorf("got %v with %v, want an SQS batch", b.Source, b.Problems)
	}
	s.sizes = append(s.sizes, len(b.MessageIDs))
	// A pointer, as a typed Lambda handler returns it.
	resp := &events.SQSEventResponse{}
	for _, c := range b.Changes {
		if c.Key == s.failKey && !s.failed {
			s.failed = true
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: c.MessageID})
			continue
		}
		s.keys = append(s.keys, c.Key)
	}
	return resp, nil
}

// TestSQSBatches checks BatchSize: what queues up while the target is busy
// is delivered as SQS batches of at most BatchSize, and a message the target
// reports failed is delivered again, alone.
func TestSQSBatches(t *testing.T) {
	t.Parallel()
	srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles"}})
	if err != nil {
		t.Fatal(err)
	}
	target := &sqsTarget{release: make(chan struct{}), failKey: "k3"}
	var n *s3notify.Notifier
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)
	c := srv.Client(hs.URL)
	n = s3notify.New(srv.Handler(), s3notify.HeadStat(c), target, s3notify.Config{BatchSize: 4, RetryDelay: time.Millisecond}, nil)
	t.Cleanup(func() { n.Close(context.Background()) })

	// k0 is taken alone while nothing else is queued; the target holds it
	// until the other writes have queued behind it.
	put(t, c, "k0", "0")
	for i := 1; i < 10; i++ {
		put(t, c, fmt.Sprintf("k%d", i), "x")
	}
	close(target.release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	sorted := slices.Clone(target.keys)
	slices.Sort(sorted)
	if want := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"}; !slices.Equal(sorted, want) {
		t.Errorf("accepted keys: got %v, want %v once each", sorted, want)
	}
	// At least six notifications were queued when the target let the first
	// batch go, so a full batch follows; k3 comes twice.
	total := 0
	for _, s := range target.sizes {
		total += s
	}
	if slices.Max(target.sizes) != 4 || total != 11 {
		t.Errorf("batch sizes: got %v, want batches of at most 4, one full, 11 messages in all", target.sizes)
	}
	if st := n.Stats(); st.Delivered != 10 || st.Failed != 0 {
		t.Errorf("stats: got %+v, want 10 delivered", st)
	}
}

// TestAllKeysBuckets: the prefix filters the keys of the buckets that are
// not in AllKeys; those notify of every change, as an EventBridge rule
// that names only buckets does.
func TestAllKeysBuckets(t *testing.T) {
	t.Parallel()
	f := start(t, s3notify.Config{Prefix: "tiles/", AllKeys: []string{"other"}})
	for _, o := range []struct{ bucket, key string }{
		{"tiles", "tiles/a/1/0/0.png"},
		{"tiles", "elsewhere/a/1/0/0.png"},
		{"other", "maps/a/1/0/0.png"},
		{"other", "x"},
	} {
		s3localtest.Put(t, f.c, o.bucket, o.key, []byte("v"), "image/png", "")
	}
	var got []string
	for _, c := range f.flushed(t) {
		got = append(got, c.Bucket+"/"+c.Key)
	}
	if want := []string{"tiles/tiles/a/1/0/0.png", "other/maps/a/1/0/0.png", "other/x"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if st := f.n.Stats(); st.Filtered != 1 {
		t.Errorf("filtered %d, want 1", st.Filtered)
	}
}
