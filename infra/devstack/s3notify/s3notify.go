// Package s3notify emulates S3 event notifications in front of a local S3
// endpoint. It wraps the endpoint's http.Handler; after every successful
// write that S3 reports to notification targets (PUT, browser POST, COPY,
// CompleteMultipartUpload, DELETE and multi-object delete) it builds the
// record S3 would send, in S3's own JSON shape, and delivers it to a target
// asynchronously and in order, as Lambda's asynchronous invoke does: a queue
// drained by one goroutine, with a couple of retries on error.
//
// What it promises:
//   - one notification per changed object, each with one record, as S3 sends;
//   - the notification configuration's key filter (prefix and suffix) applied
//     to the raw key;
//   - sequencers that rise with every write, and events delivered in the order
//     the writes happened: writes that emit events are serialised, so the
//     order of the records is the order of the objects' versions;
//   - size and eTag read back from the endpoint after the write, so they are
//     what a GET would see.
//
// With Config.BatchSize above 1 it delivers as the deployed stack does,
// through a queue: the notifications queued at the time (up to BatchSize)
// go to the target as one SQS event, one message per notification, and only
// the messages the target reports as failed (or all, on an error) are
// delivered again.
//
// It does not emulate versioning (no versionId, no delete markers),
// lifecycle expirations, or SNS/EventBridge destinations.
package s3notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Target receives notifications: the worker's Lambda handler.
type Target interface {
	Handle(ctx context.Context, event json.RawMessage) (any, error)
}

// StatFunc reads the size and ETag of an object as the endpoint holds it now.
type StatFunc func(ctx context.Context, bucket, key string) (size int64, etag string, err error)

// Config configures a Notifier. Zero values take the defaults.
type Config struct {
	Region string // awsRegion of the records; default us-east-1
	Prefix string // key filter: only keys starting with Prefix notify
	// AllKeys are buckets whose every change notifies, whatever Prefix
	// says (the deployed stack's EventBridge rule for the buckets of
	// SOURCES filters no key).
	AllKeys         []string
	ConfigurationID string // s3.configurationId; default "tilesieve-worker"
	// Retries after a failed delivery; default 2, as Lambda retries an
	// asynchronous invoke twice. Negative: no retries.
	Retries int
	// RetryDelay is the wait before the first retry, doubled for the next;
	// default 200ms (Lambda waits a minute, then two; a local loop should not).
	RetryDelay time.Duration
	// Timeout bounds one delivery, as a function's timeout does; default 30s.
	Timeout time.Duration
	// OnDelivery, when set, is called after each notification was delivered
	// or given up on (tests and the local stack's console use it).
	OnDelivery func(Delivery)
	// BatchSize above 1 delivers up to that many queued notifications as
	// one SQS event; default 1, one notification per invocation.
	BatchSize int
}

func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.ConfigurationID == "" {
		c.ConfigurationID = "tilesieve-worker"
	}
	if c.Retries == 0 {
		c.Retries = 2
	} else if c.Retries < 0 {
		c.Retries = 0
	}
	if c.RetryDelay <= 0 {
		c.RetryDelay = 200 * time.Millisecond
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	return c
}

// Delivery is the outcome of one notification.
type Delivery struct {
	Name     string          // event name, e.g. "ObjectCreated:Put"
	Bucket   string          // bucket name
	Key      string          // object key, decoded
	Event    json.RawMessage // the notification as delivered
	Attempts int
	Err      error // nil when the target accepted it
}

// Stats counts what a Notifier did.
type Stats struct {
	Emitted   int64 `json:"emitted"`   // notifications queued
	Filtered  int64 `json:"filtered"`  // changes outside the key filter
	Delivered int64 `json:"delivered"` // accepted by the target
	Failed    int64 `json:"failed"`    // given up on after the retries
}

// Notifier is the S3 endpoint with notifications. Serve it instead of the
// endpoint's handler. It is safe for concurrent use.
type Notifier struct {
	next   http.Handler
	stat   StatFunc
	target Target
	cfg    Config
	log    *slog.Logger

	enabled atomic.Bool

	// writeMu serialises the requests that emit events, from the write
	// through the read-back to the queueing, so records are queued in the
	// order the writes took effect. It also guards lastSeq.
	writeMu sync.Mutex
	lastSeq uint64

	mu     sync.Mutex // guards queue and closed
	queue  []item
	closed bool
	wake   chan struct{} // cap 1: the queue has work or was closed
	done   chan struct{} // closed when the delivery loop has ended

	ctx    context.Context // deliveries; cancelled when Close gives up waiting
	cancel context.CancelFunc

	emitted, filtered, delivered, failed atomic.Int64

	msgSeq int64 // SQS message ids; only the delivery loop uses it
}

// item is one queued notification, or a barrier of Flush.
type item struct {
	raw          json.RawMessage
	name, bucket string
	key          string
	barrier      chan struct{}
}

// New wraps next, the S3 endpoint's handler. stat reads objects back (size
// and ETag of created objects); target receives the notifications. The
// notifier starts enabled.
func New(next http.Handler, stat StatFunc, target Target, cfg Config, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{
		next: next, stat: stat, target: target, cfg: cfg.withDefaults(), log: log,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
	}
	n.enabled.Store(true)
	go n.loop()
	return n
}

// SetEnabled turns notifications on or off; writes made while they are off
// notify nobody (the local stack seeds its demo tileset that way).
func (n *Notifier) SetEnabled(on bool) { n.enabled.Store(on) }

// Stats returns the counters.
func (n *Notifier) Stats() Stats {
	return Stats{Emitted: n.emitted.Load(), Filtered: n.filtered.Load(), Delivered: n.delivered.Load(), Failed: n.failed.Load()}
}

// enqueue adds it to the queue; false if the notifier is closed.
func (n *Notifier) enqueue(it item) bool {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return false
	}
	n.queue = append(n.queue, it)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
	return true
}

// Flush waits until every notification queued before it was delivered or
// given up on.
func (n *Notifier) Flush(ctx context.Context) error {
	b := make(chan struct{})
	if !n.enqueue(item{barrier: b}) {
		return fmt.Errorf("s3notify: closed")
	}
	select {
	case <-b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops taking new notifications and delivers the queued ones. If ctx
// ends first, the delivery in progress is cancelled, the rest are dropped,
// and ctx's error is returned.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	n.closed = true
	pending := len(n.queue)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
	if pending > 0 {
		n.log.Info("delivering queued S3 events before stopping", "pending", pending)
	}
	select {
	case <-n.done:
		n.cancel()
		return nil
	case <-ctx.Done():
		n.cancel()
		<-n.done
		return ctx.Err()
	}
}

// loop delivers the queue in order until the notifier is closed and drained.
func (n *Notifier) loop() {
	defer close(n.done)
	for {
		n.mu.Lock()
		if len(n.queue) == 0 {
			closed := n.closed
			n.mu.Unlock()
			if closed {
				return
			}
			<-n.wake
			continue
		}
		it := n.queue[0]
		n.queue[0] = item{}
		n.queue = n.queue[1:]
		n.mu.Unlock()

		if it.barrier != nil {
			close(it.barrier)
			continue
		}
		if n.ctx.Err() != nil {
			n.failed.Add(1)
			n.log.Warn("S3 event dropped: shutting down", "event", it.name, "key", it.key)
			continue
		}
		if n.cfg.BatchSize > 1 {
			n.deliverBatch(n.takeBatch(it))
			continue
		}
		n.deliver(it)
	}
}

// takeBatch returns first and the notifications queued right behind it, up
// to BatchSize; a Flush barrier ends the batch.
func (n *Notifier) takeBatch(first item) []item {
	batch := []item{first}
	n.mu.Lock()
	defer n.mu.Unlock()
	for len(batch) < n.cfg.BatchSize && len(n.queue) > 0 && n.queue[0].barrier == nil {
		batch = append(batch, n.queue[0])
		n.queue[0] = item{}
		n.queue = n.queue[1:]
	}
	return batch
}

// errBatchItemFailure is the error of a message the target reported failed.
var errBatchItemFailure = errors.New("s3notify: reported as a batch item failure")

// deliverBatch invokes the target with the batch as one SQS event, then
// again with the messages it failed, as an event source mapping does.
func (n *Notifier) deliverBatch(batch []item) {
	start := time.Now()
	ds := make([]Delivery, len(batch))
	msgs := make([]events.SQSMessage, len(batch))
	for i, it := range batch {
		ds[i] = Delivery{Name: it.name, Bucket: it.bucket, Key: it.key, Event: it.raw}
		n.msgSeq++
		msgs[i] = events.SQSMessage{
			MessageId:      fmt.Sprintf("00000000-0000-4000-8000-%012d", n.msgSeq),
			ReceiptHandle:  fmt.Sprintf("local-%d", n.msgSeq),
			Body:           string(it.raw),
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:" + n.cfg.Region + ":000000000000:tilesieve-events",
			AWSRegion:      n.cfg.Region,
		}
	}
	pending := make([]int, len(batch)) // indexes into batch of the messages to deliver
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; attempt <= n.cfg.Retries && len(pending) > 0; attempt++ {
		if attempt > 0 && !n.backoff(attempt) {
			break
		}
		ev := events.SQSEvent{Records: make([]events.SQSMessage, 0, len(pending))}
		for _, i := range pending {
			ev.Records = append(ev.Records, msgs[i])
			ds[i].Attempts++
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			n.log.Error("SQS event not encoded", "err", err)
			break
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Timeout)
		resp, err := n.target.Handle(ctx, raw)
		cancel()
		failed := map[string]bool{}
		var items []events.SQSBatchItemFailure
		switch r := resp.(type) {
		case events.SQSEventResponse:
			items = r.BatchItemFailures
		case *events.SQSEventResponse:
			if r != nil {
				items = r.BatchItemFailures
			}
		}
		for _, f := range items {
			failed[f.ItemIdentifier] = true
		}
		var again []int
		for _, i := range pending {
			switch {
			case err != nil:
				ds[i].Err = err
			case failed[msgs[i].MessageId]:
				ds[i].Err = errBatchItemFailure
			default:
				ds[i].Err = nil
				continue
			}
			again = append(again, i)
		}
		pending = again
		if len(pending) > 0 && attempt < n.cfg.Retries {
			n.log.Warn("SQS batch delivery failed in part; retrying", "messages", len(ev.Records), "failed", len(pending), "attempt", attempt+1, "err", err)
		}
	}
	for _, d := range ds {
		if d.Err == nil {
			n.delivered.Add(1)
		} else {
			n.failed.Add(1)
			n.log.Error("S3 event dropped after retries", "event", d.Name, "bucket", d.Bucket, "key", d.Key, "attempts", d.Attempts, "err", d.Err)
		}
		if n.cfg.OnDelivery != nil {
			n.cfg.OnDelivery(d)
		}
	}
	n.log.Info("SQS batch delivered", "messages", len(batch), "took", time.Since(start).Round(time.Millisecond))
}

// backoff waits before retry attempt (1, 2, …): RetryDelay doubled each
// time. It reports false when the notifier stopped meanwhile.
func (n *Notifier) backoff(attempt int) bool {
	t := time.NewTimer(n.cfg.RetryDelay << (attempt - 1))
	defer t.Stop()
	select {
	case <-t.C:
	case <-n.ctx.Done():
	}
	return n.ctx.Err() == nil
}

// deliver invokes the target with one notification, retrying on error.
func (n *Notifier) deliver(it item) {
	d := Delivery{Name: it.name, Bucket: it.bucket, Key: it.key, Event: it.raw}
	start := time.Now()
	for attempt := 0; attempt <= n.cfg.Retries; attempt++ {
		if attempt > 0 && !n.backoff(attempt) {
			break
		}
		d.Attempts++
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Timeout)
		_, d.Err = n.target.Handle(ctx, it.raw)
		cancel()
		if d.Err == nil {
			break
		}
		if attempt < n.cfg.Retries {
			n.log.Warn("S3 event delivery failed; retrying", "event", it.name, "key", it.key, "attempt", d.Attempts, "err", d.Err)
		}
	}
	if d.Err == nil {
		n.delivered.Add(1)
		n.log.Info("S3 event delivered", "event", it.name, "bucket", it.bucket, "key", it.key,
			"attempts", d.Attempts, "took", time.Since(start).Round(time.Millisecond))
	} else {
		n.failed.Add(1)
		n.log.Error("S3 event dropped after retries", "event", it.name, "bucket", it.bucket, "key", it.key,
			"attempts", d.Attempts, "err", d.Err)
	}
	if n.cfg.OnDelivery != nil {
		n.cfg.OnDelivery(d)
	}
}

// HeadStat reads objects back with HeadObject through c.
func HeadStat(c *s3.Client) StatFunc {
	return func(ctx context.Context, bucket, key string) (int64, string, error) {
		out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return 0, "", err
		}
		return aws.ToInt64(out.ContentLength), aws.ToString(out.ETag), nil
	}
}
