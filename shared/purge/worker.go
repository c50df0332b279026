package purge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tilesieve/tilesieve/shared/cdn"
	"github.com/tilesieve/tilesieve/shared/s3event"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Invalidator purges the CDN for coalesced targets (directories and single
// keys), coalescing further through fit when the CDN's budget of paths in
// progress is short; *cdn.Invalidator is one.
type Invalidator interface {
	InvalidateTargets(ctx context.Context, targets []string, batchID string, fit cdn.Fit) (cdn.Outcome, error)
}

// WorkerMetrics is what a Worker reports about each invocation;
// *obs.WorkerMetrics is one. Handle flushes it once, at the end of the
// invocation.
type WorkerMetrics interface {
	// Notifications counts the change records of a batch (Result.Changes).
	Notifications(n int)
	// Prefixes counts the purge prefixes left after coalescing.
	Prefixes(n int)
	// JournalAppend records one append and whether it failed.
	JournalAppend(elapsed time.Duration, err error)
	// InvalidationsIssued counts CDN paths CloudFront accepted.
	InvalidationsIssued(paths int)
	// InvalidationsThrottled counts the times CloudFront held a batch
	// back (cdn.Outcome.Throttled).
	InvalidationsThrottled(n int)
	Flush(now time.Time) error
}

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	Bucket      string // TILES_BUCKET: changes in other buckets are ignored
	TilesPrefix string // TILES_PREFIX: objects outside it are not tiles
	Coalesce    CoalesceConfig
	// SettleDelay is how long the worker waits between recording a purge in
	// the journal and purging the CDN. With SYNC_INTERVAL plus the follower's
	// check timeout, every function instance has applied the entry before the
	// CDN comes back for the tiles, so it cannot refill the CDN with the old
	// bytes from an instance that has not caught up yet. 0 does not wait.
	SettleDelay time.Duration
	// Sleep waits d or until ctx ends; tests inject a clock through it.
	// Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Metrics receives each batch's numbers; nil reports none.
	Metrics WorkerMetrics
	// Now is the clock of the metrics (append latency, flush time);
	// default time.Now.
	Now func() time.Time
}

// Worker is the sync worker's logic: decode an event, coalesce the changed
// tile keys into prefixes, record them as one journal entry, and invalidate
// the CDN for them. Handling is idempotent: a redelivered batch appends
// another, harmless entry and reuses its CDN caller reference.
//
// A Worker is safe for concurrent use.
type Worker struct {
	cfg WorkerConfig
	j   *Journal
	cdn Invalidator
	log *slog.Logger
}

// NewWorker returns a worker. cdn may be nil (no CDN to purge).
func NewWorker(cfg WorkerConfig, j *Journal, inv Invalidator, log *slog.Logger) *Worker {
	if e, ok := inv.(interface{ Enabled() bool }); ok && !e.Enabled() {
		inv = nil // no distribution: do not wait SettleDelay for nothing
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Worker{cfg: cfg, j: j, cdn: inv, log: log}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Result is what one batch did.
type Result struct {
	Source   s3event.Source
	Changes  int // changes decoded
	Relevant int // changes to tiles of the bucket
	Stale    int // stale duplicates dropped by sequencer
	Ignored  int // events that change no bytes, other buckets, non-tile keys
	Problems []s3event.Problem
	Prefixes []string // what was purged
	Seq      uint64   // the journal entry, 0 if none
	Paths    []string // CDN paths invalidated (or meant to be, when Err is the CDN's)
	// Throttled counts the times CloudFront held the invalidation back
	// (throttling answers, waits for its budget of paths in progress).
	Throttled int
	Failed    []string // SQS message IDs to report as failures
	Err       error    // why the purge could not be recorded, if it could not
}

// Handle is the Lambda handler. For SQS input it answers with the batch item
// failures (malformed messages, and every message with a change if the purge
// could not be recorded) and no error; for a direct or EventBridge invoke it
// returns an error when the purge could not be recorded, so Lambda retries.
// It flushes the metrics before it returns: Lambda may freeze the
// environment as soon as it has.
func (w *Worker) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	defer w.flush(ctx)
	b, err := s3event.Decode(raw)
	if err != nil {
		w.log.ErrorContext(ctx, "event not recognised", "err", err, "bytes", len(raw))
		return nil, err
	}
	res := w.Process(ctx, b)
	if b.Source == s3event.SourceSQS {
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for _, id := range res.Failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, nil
	}
	return nil, res.Err
}

func (w *Worker) flush(ctx context.Context) {
	if err := w.cfg.Metrics.Flush(w.cfg.Now()); err != nil {
		w.log.WarnContext(ctx, "metrics not written", "err", err)
	}
}

// Process handles a decoded batch. It records the batch's metrics but does
// not flush them (Handle does).
func (w *Worker) Process(ctx context.Context, b s3event.Batch) Result {
	res := Result{Source: b.Source, Changes: len(b.Changes), Ignored: b.Ignored, Problems: b.Problems}
	var relevant []s3event.Change
	withChange := map[string]bool{} // SQS message ids that carry a tile change
	for _, c := range b.Changes {
		if c.Bucket != w.cfg.Bucket || strings.HasPrefix(c.Key, w.j.Prefix()) {
			// The journal's own objects are skipped even if TILES_PREFIX
			// contains them, or every append would trigger another.
			res.Ignored++
			continue
		}
		key, ok := tile.KeyFromObject(w.cfg.TilesPrefix, c.Key)
		if !ok {
			res.Ignored++
			continue
		}
		c.Key = key
		relevant = append(relevant, c)
		if c.MessageID != "" {
			withChange[c.MessageID] = true
		}
	}
	res.Relevant = len(relevant)
	latest, stale := s3event.Latest(relevant)
	res.Stale = stale
	keys := make([]string, 0, len(latest))
	for _, c := range latest {
		keys = append(keys, c.Key)
		keys = append(keys, Derived(c.Key)...)
	}
	res.Prefixes = Coalesce(keys, w.cfg.Coalesce)
	w.cfg.Metrics.Notifications(res.Changes)
	w.cfg.Metrics.Prefixes(len(res.Prefixes))

	if len(res.Prefixes) > 0 {
		res.Err = w.purge(ctx, latest, &res)
	}

	failed := map[string]bool{}
	for _, p := range b.Problems {
		if p.MessageID != "" {
			failed[p.MessageID] = true
		}
	}
	if res.Err != nil {
		for id := range withChange {
			failed[id] = true
		}
	}
	for _, id := range b.MessageIDs {
		if failed[id] {
			res.Failed = append(res.Failed, id)
			delete(failed, id) // once, even if the batch repeats an id
		}
	}
	w.report(ctx, res)
	return res
}

// purge records the prefixes and invalidates the CDN.
func (w *Worker) purge(ctx context.Context, changes []s3event.Change, res *Result) error {
	source := "worker " + res.Source.String()
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		source += " " + lc.AwsRequestID
	}
	start := w.cfg.Now()
	e, err := w.j.Append(ctx, res.Prefixes, source)
	w.cfg.Metrics.JournalAppend(w.cfg.Now().Sub(start), err)
	if err != nil {
		return fmt.Errorf("purge: record %d prefixes: %w", len(res.Prefixes), err)
	}
	res.Seq = e.Seq
	if w.cdn == nil {
		return nil
	}
	if w.cfg.SettleDelay > 0 {
		if err := w.cfg.Sleep(ctx, w.cfg.SettleDelay); err != nil {
			return fmt.Errorf("purge: before invalidating the CDN: %w", err)
		}
	}
	out, err := w.cdn.InvalidateTargets(ctx, res.Prefixes, BatchID(changes), w.cfg.Coalesce.Fit)
	res.Paths, res.Throttled = out.Paths, out.Throttled
	w.cfg.Metrics.InvalidationsThrottled(out.Throttled)
	if err != nil {
		// Recorded for the instances but not for the CDN (refused, or no
		// budget left within the deadline): fail the batch so it comes
		// back; the journal gets a harmless second entry then.
		return err
	}
	w.cfg.Metrics.InvalidationsIssued(len(out.Paths))
	return nil
}

// Derived lists what else a change of key changes, beyond key itself: an
// archive NAME.pmtiles is the tileset NAME/ and its TileJSON NAME.json, and
// a tile directory's NAME/metadata.json is that TileJSON too.
func Derived(key string) []string {
	if name, ok := strings.CutSuffix(key, ".pmtiles"); ok && name != "" && !strings.Contains(name, "/") {
		return []string{name + "/", name + ".json"}
	}
	if name, ok := strings.CutSuffix(key, "/metadata.json"); ok && name != "" && !strings.Contains(name, "/") {
		return []string{name + ".json"}
	}
	return nil
}

// noMetrics is WorkerConfig.Metrics when none is given.
type noMetrics struct{}

func (noMetrics) Notifications(int)                  {}
func (noMetrics) Prefixes(int)                       {}
func (noMetrics) JournalAppend(time.Duration, error) {}
func (noMetrics) InvalidationsIssued(int)            {}
func (noMetrics) InvalidationsThrottled(int)         {}
func (noMetrics) Flush(time.Time) error              { return nil }

// BatchID names a batch by its changes (bucket, key and sequencer of each), so
// a redelivered batch gets the same CDN caller reference and a new change a
// new one.
func BatchID(changes []s3event.Change) string {
	lines := make([]string, 0, len(changes))
	for _, c := range changes {
		lines = append(lines, c.Bucket+"\x00"+c.Key+"\x00"+c.Sequencer)
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (w *Worker) report(ctx context.Context, res Result) {
	for i, p := range res.Problems {
		if i == 20 {
			w.log.WarnContext(ctx, "more malformed records", "count", len(res.Problems)-i)
			break
		}
		w.log.WarnContext(ctx, "malformed record", "message_id", p.MessageID, "index", p.Index, "reason", p.Reason)
	}
	attrs := []any{
		"source", res.Source.String(), "changes", res.Changes, "relevant", res.Relevant,
		"stale", res.Stale, "ignored", res.Ignored, "problems", len(res.Problems),
		"prefixes", res.Prefixes, "seq", res.Seq, "cdn_paths", len(res.Paths), "cdn_throttled", res.Throttled,
		"failed_messages", len(res.Failed),
	}
	switch {
	case res.Err != nil:
		w.log.ErrorContext(ctx, "purge not recorded", append(attrs, "err", res.Err)...)
	case len(res.Prefixes) == 0:
		w.log.InfoContext(ctx, "nothing to purge", attrs...)
	default:
		w.log.InfoContext(ctx, "purged", attrs...)
	}
}

// Validate checks a WorkerConfig.
func (c WorkerConfig) Validate() error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, errors.New("purge: worker needs a bucket"))
	}
	if c.TilesPrefix != "" {
		if err := tile.ValidatePrefix(c.TilesPrefix); err != nil || !strings.HasSuffix(c.TilesPrefix, "/") {
			errs = append(errs, fmt.Errorf("purge: tiles prefix %q must be empty or a directory ending in /", c.TilesPrefix))
		}
	}
	if c.SettleDelay < 0 {
		errs = append(errs, errors.New("purge: settle delay is negative"))
	}
	return errors.Join(errs...)
}
