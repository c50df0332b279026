// Package s3event decodes the events that tell the sync worker an object
// changed: S3 event notifications delivered directly, wrapped in SQS messages
// (optionally inside an SNS envelope), and S3 events delivered by EventBridge.
// It recognises each by its shape, so one Lambda handler takes them all.
//
// The input comes from outside, so Decode promises three things for any bytes
// at all: it does not panic, a record it cannot read becomes a Problem (never a
// Change with a guessed key), and the keys it returns are S3 object keys
// exactly, decoded from the URL-encoded form S3 and SQS deliver ("+" is a
// space) but taken as they are from EventBridge, which does not encode them.
package s3event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Kind is what happened to an object.
type Kind int

const (
	Created Kind = iota + 1 // ObjectCreated:* / "Object Created"
	Removed                 // ObjectRemoved:* (incl. DeleteMarkerCreated) / "Object Deleted"
	Expired                 // LifecycleExpiration:* / "Object Deleted" with reason "Lifecycle Expiration"
)

var kindNames = map[Kind]string{Created: "created", Removed: "removed", Expired: "expired"}

func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Source is the envelope an event arrived in.
type Source int

const (
	SourceS3          Source = iota + 1 // {"Records":[{"eventSource":"aws:s3",...}]}
	SourceSQS                           // {"Records":[{"eventSource":"aws:sqs",...}]}
	SourceEventBridge                   // {"source":"aws.s3","detail-type":...}
	SourceTestEvent                     // {"Event":"s3:TestEvent",...}
)

var sourceNames = map[Source]string{SourceS3: "s3", SourceSQS: "sqs", SourceEventBridge: "eventbridge", SourceTestEvent: "s3-test-event"}

func (s Source) String() string {
	if n, ok := sourceNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Change is one object change that concerns the tiers.
type Change struct {
	Bucket    string
	Key       string // the S3 object key, decoded
	Kind      Kind
	Event     string // the event name as delivered ("ObjectCreated:Put", "Object Deleted", ...)
	Sequencer string // orders the events of one key; compare with CompareSequencer
	Size      int64  // bytes, for created objects
	ETag      string
	MessageID string // the SQS message it came in ("" unless SQS)
}

// Problem is a record that could not be read. For SQS input, MessageID names
// the message to report in batchItemFailures.
type Problem struct {
	MessageID string
	// Index is the position of the bad record: in the Records of a direct
	// notification, in the SQS batch for a message that could not be read
	// at all, or in the Records of the notification inside an SQS body.
	Index  int
	Reason string
}

func (p Problem) String() string {
	if p.MessageID != "" {
		return fmt.Sprintf("message %s record %d: %s", p.MessageID, p.Index, p.Reason)
	}
	return fmt.Sprintf("record %d: %s", p.Index, p.Reason)
}

// Batch is what one invocation carried.
type Batch struct {
	Source   Source
	Changes  []Change
	Problems []Problem
	// Ignored counts well-formed records that change no object bytes (restore,
	// transition, tagging, ACL and replication events, test events).
	Ignored int
	// MessageIDs lists every SQS message of the batch, in order.
	MessageIDs []string
	// Messages are the SQS messages of the product's own among the
	// notifications: a JSON body with a top-level "tilesieve" member naming
	// their kind (the tile function's handed-off CDN invalidations, which
	// purge decodes).
	Messages []Message
}

// Message is an SQS message of the product's own (Batch.Messages).
type Message struct {
	MessageID string
	Index     int    // its position in the SQS batch
	Kind      string // the "tilesieve" member
	Body      []byte
}

// ErrUnrecognized is returned when the input is not an event of any shape
// this package knows. Individual bad records are Problems, not errors.
var ErrUnrecognized = errors.New("s3event: unrecognised event")

// maxKeyBytes is S3's limit on an object key.
const maxKeyBytes = 1024

// probe reads just enough of a document to tell its shape.
type probe struct {
	Records    []json.RawMessage `json:"Records"`
	Source     string            `json:"source"`
	DetailType string            `json:"detail-type"`
	Detail     json.RawMessage   `json:"detail"`
	Event      string            `json:"Event"`
	// A message of the product's own (Message).
	Tilesieve string `json:"tilesieve"`
	// SNS envelope (S3 → SNS → SQS without raw message delivery).
	Type    string `json:"Type"`
	Message string `json:"Message"`
}

// Decode recognises and decodes one invocation payload.
func Decode(raw []byte) (Batch, error) {
	var p probe
	if err := json.Unmarshal(raw, &p); err != nil {
		return Batch{}, fmt.Errorf("%w: %v", ErrUnrecognized, err)
	}
	var b Batch
	switch {
	case p.Records != nil:
		b.Source = SourceS3
		for i, rec := range p.Records {
			var head struct {
				EventSource string `json:"eventSource"`
			}
			_ = json.Unmarshal(rec, &head) // a bad record is reported by its own decoder
			if head.EventSource == "aws:sqs" {
				b.Source = SourceSQS
				b.decodeSQS(i, rec)
				continue
			}
			b.decodeS3Record("", i, rec)
		}
	case p.Source == "aws.s3" && p.DetailType != "":
		b.Source = SourceEventBridge
		b.decodeEventBridge("", 0, p.DetailType, p.Detail)
	case p.Event == "s3:TestEvent":
		b.Source = SourceTestEvent
		b.Ignored++
	default:
		return Batch{}, ErrUnrecognized
	}
	return b, nil
}

func (b *Batch) problem(msgID string, i int, format string, args ...any) {
	b.Problems = append(b.Problems, Problem{MessageID: msgID, Index: i, Reason: fmt.Sprintf(format, args...)})
}

// sqsMessage is the part of an SQS record the worker reads.
type sqsMessage struct {
	MessageID   string `json:"messageId"`
	Body        string `json:"body"`
	EventSource string `json:"eventSource"`
}

func (b *Batch) decodeSQS(i int, raw json.RawMessage) {
	var m sqsMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		b.problem("", i, "sqs record: %v", err)
		return
	}
	if m.MessageID == "" {
		b.problem("", i, "sqs record without messageId")
		return
	}
	b.MessageIDs = append(b.MessageIDs, m.MessageID)
	b.decodeBody(m.MessageID, i, []byte(m.Body), 0)
}

// decodeBody decodes the body of one SQS message: an S3 notification, a
// TestEvent, an EventBridge event (a rule targeting the queue), an SNS
// envelope around one of those, or a message of the product's own.
func (b *Batch) decodeBody(msgID string, i int, body []byte, depth int) {
	var p probe
	if err := json.Unmarshal(body, &p); err != nil {
		b.problem(msgID, i, "body is not JSON: %v", err)
		return
	}
	switch {
	case p.Records != nil:
		for j, rec := range p.Records {
			b.decodeS3Record(msgID, j, rec)
		}
	case p.Source == "aws.s3" && p.DetailType != "":
		b.decodeEventBridge(msgID, i, p.DetailType, p.Detail)
	case p.Event == "s3:TestEvent":
		b.Ignored++
	case p.Tilesieve != "" && depth == 0:
		b.Messages = append(b.Messages, Message{MessageID: msgID, Index: i, Kind: p.Tilesieve, Body: body})
	case p.Type == "Notification" && p.Message != "" && depth == 0:
		b.decodeBody(msgID, i, []byte(p.Message), depth+1)
	default:
		b.problem(msgID, i, "body is not an S3 event")
	}
}

// entity is the bucket and object that an S3 notification record (its s3
// field) or an EventBridge detail names, with only the fields the worker
// reads. Key stays a string here and is checked per record, so that one bad
// key does not fail the whole document (as events.S3Object's UnmarshalJSON
// would). Notifications spell the ETag's field "eTag" and EventBridge "etag";
// encoding/json matches either to the tag, as it accepts a key that differs
// from it only in case.
type entity struct {
	Bucket struct {
		Name string `json:"name"`
	} `json:"bucket"`
	Object struct {
		Key       *string `json:"key"`
		Size      int64   `json:"size"`
		ETag      string  `json:"eTag"`
		Sequencer string  `json:"sequencer"`
	} `json:"object"`
}

// s3Record is one record of an S3 event notification.
type s3Record struct {
	EventSource string  `json:"eventSource"`
	EventName   string  `json:"eventName"`
	S3          *entity `json:"s3"`
}

func (b *Batch) decodeS3Record(msgID string, i int, raw json.RawMessage) {
	var r s3Record
	if err := json.Unmarshal(raw, &r); err != nil {
		b.problem(msgID, i, "s3 record: %v", err)
		return
	}
	if r.EventSource != "aws:s3" {
		b.problem(msgID, i, "eventSource %q is not aws:s3", clip(r.EventSource))
		return
	}
	kind, known := kindOf(r.EventName)
	if !known {
		b.problem(msgID, i, "record without eventName")
		return
	}
	if kind == 0 {
		b.Ignored++
		return
	}
	if r.S3 == nil {
		b.problem(msgID, i, "record without s3 entity")
		return
	}
	b.add(msgID, i, "record", r.S3, kind, r.EventName, true)
}

// add appends the change that e names, or a problem saying why it cannot be
// one; what names the document in problems. Notification keys are
// URL-encoded (escaped); EventBridge keys are raw.
func (b *Batch) add(msgID string, i int, what string, e *entity, kind Kind, event string, escaped bool) {
	if e.Bucket.Name == "" {
		b.problem(msgID, i, "%s without bucket name", what)
		return
	}
	if e.Object.Key == nil {
		b.problem(msgID, i, "%s without object key", what)
		return
	}
	raw, key := *e.Object.Key, *e.Object.Key
	if escaped {
		var err error
		if key, err = url.QueryUnescape(raw); err != nil {
			b.problem(msgID, i, "object key %q: bad escape", clip(raw))
			return
		}
	}
	if reason := checkKey(key); reason != "" {
		b.problem(msgID, i, "object key %q: %s", clip(raw), reason)
		return
	}
	b.Changes = append(b.Changes, Change{
		Bucket:    e.Bucket.Name,
		Key:       key,
		Kind:      kind,
		Event:     event,
		Sequencer: e.Object.Sequencer,
		Size:      e.Object.Size,
		ETag:      e.Object.ETag,
		MessageID: msgID,
	})
}

// kindOf maps an S3 notification event name to a Kind. known is false only for
// an empty name. Kind 0 with known true is an event that changes no object
// bytes (ObjectRestore:*, LifecycleTransition, IntelligentTiering,
// ObjectTagging:*, ObjectAcl:Put, Replication:*, ...): it is counted as
// ignored, not as a problem, because a bucket may legitimately send it and an
// SQS message carrying it must not end in the dead-letter queue.
func kindOf(name string) (kind Kind, known bool) {
	if name == "" {
		return 0, false
	}
	// Notifications carry no "s3:" prefix, but configurations and some
	// hand-made events do; accept both.
	name = strings.TrimPrefix(name, "s3:")
	family, _, _ := strings.Cut(name, ":")
	switch family {
	case "ObjectCreated":
		return Created, true
	case "ObjectRemoved":
		return Removed, true
	case "LifecycleExpiration":
		return Expired, true
	}
	return 0, true
}

// eventBridgeDetail is the detail of an S3 "Object Created"/"Object Deleted"
// event. Its key is the raw object key, not URL-encoded.
type eventBridgeDetail struct {
	entity
	Reason string `json:"reason"`
}

func (b *Batch) decodeEventBridge(msgID string, i int, detailType string, raw json.RawMessage) {
	var kind Kind
	switch detailType {
	case "Object Created":
		kind = Created
	case "Object Deleted":
		kind = Removed
	default:
		// Restore, tagging, ACL and storage-class events change no bytes.
		b.Ignored++
		return
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		b.problem(msgID, i, "EventBridge event without detail")
		return
	}
	var d eventBridgeDetail
	if err := json.Unmarshal(raw, &d); err != nil {
		b.problem(msgID, i, "EventBridge detail: %v", err)
		return
	}
	if kind == Removed && d.Reason == "Lifecycle Expiration" {
		kind = Expired
	}
	b.add(msgID, i, "EventBridge detail", &d.entity, kind, detailType, false)
}

// checkKey says why a decoded key cannot be an S3 object key, or "".
func checkKey(key string) string {
	switch {
	case key == "":
		return "empty key"
	case len(key) > maxKeyBytes:
		return "key longer than 1024 bytes"
	case !utf8.ValidString(key):
		return "key is not valid UTF-8"
	}
	return ""
}

// clip shortens outside input for a problem message.
func clip(s string) string {
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
