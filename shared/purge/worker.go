package purge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// WorkerMetrics is what a Worker and its Purger report about each
// invocation; *obs.WorkerMetrics is one. Worker.Flush writes it once, at the
// end of the invocation.
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
	Bucket      string // the default source's bucket (TILES_BUCKET), which holds the journal
	TilesPrefix string // the default source's prefix: its objects outside it are not tiles
	// Sources maps changed objects to tile keys (SOURCES): a change in any
	// source's bucket purges the keys that read it, and one that no source
	// reads is ignored. Nil: Bucket and TilesPrefix alone.
	Sources  *sources.Table
	Coalesce CoalesceConfig
	// Metrics receives each batch's numbers (give the Purger the same, for
	// its journal and CDN numbers); nil reports none.
	Metrics WorkerMetrics
	// Now is the clock of the metrics' flush; default time.Now.
	Now func() time.Time
}

// Worker is the sync worker's logic over decoded batches: coalesce the
// changed tile keys into prefixes and purge them through the Purger (one
// journal entry, then the CDN after the settle delay), and apply the CDN
// invalidations the tile function handed over. Handling is idempotent: a
// redelivered batch appends another, harmless entry and reuses its CDN
// caller reference.
//
// A Worker is safe for concurrent use.
type Worker struct {
	cfg WorkerConfig
	p   *Purger
	log *slog.Logger
}

// NewWorker returns a worker purging through p.
func NewWorker(cfg WorkerConfig, p *Purger, log *slog.Logger) *Worker {
	log = defaults.Logger(log)
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	cfg.Now = defaults.Clock(cfg.Now)
	if cfg.Sources == nil {
		cfg.Sources = sources.New(sources.Default{Bucket: cfg.Bucket, Prefix: cfg.TilesPrefix}, nil)
	}
	return &Worker{cfg: cfg, p: p, log: log}
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
	// Invalidations counts the handed-over CDN invalidations applied;
	// HandoffErrs the ones that failed (their messages are in Failed).
	Invalidations int
	HandoffErrs   int
	Failed        []string // SQS message IDs to report as failures
	Err           error    // why the purge could not be recorded, if it could not
}

// Flush writes the metrics of the invocation. Call it once, when the
// invocation is done: Lambda may freeze the environment as soon as it is.
func (w *Worker) Flush(ctx context.Context) {
	if err := w.cfg.Metrics.Flush(w.cfg.Now()); err != nil {
		w.log.WarnContext(ctx, "metrics not written", "err", err)
	}
}

// Process handles a decoded batch: Failed lists the SQS messages to report
// as failed (malformed ones, every message with a change when the purge could
// not be recorded, the handed-over invalidations that failed), and Err says
// why the purge could not be recorded. It records the batch's metrics but
// does not flush them (Flush does).
func (w *Worker) Process(ctx context.Context, b s3event.Batch) Result {
	res := Result{Source: b.Source, Changes: len(b.Changes), Ignored: b.Ignored, Problems: b.Problems}
	var relevant []s3event.Change
	withChange := map[string]bool{} // SQS message ids that carry a tile change
	// The journal's own objects are skipped even if TILES_PREFIX or a
	// source contains them, or every append would trigger another.
	journal := sources.Journal{Bucket: w.cfg.Bucket, Prefix: w.p.j.Prefix()}
	for _, c := range b.Changes {
		keys := w.cfg.Sources.TileKeys(c.Bucket, c.Key, journal)
		if len(keys) == 0 {
			res.Ignored++
			continue
		}
		for _, key := range keys {
			c.Key = key
			relevant = append(relevant, c)
		}
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
		keys = append(keys, tilename.Derived(c.Key)...)
	}
	res.Prefixes = Coalesce(keys, w.cfg.Coalesce)
	w.cfg.Metrics.Notifications(res.Changes)
	w.cfg.Metrics.Prefixes(len(res.Prefixes))

	failed := map[string]bool{}
	handed := w.handedOver(ctx, b, &res)
	if len(res.Prefixes) > 0 || len(handed) > 0 {
		res.Err = w.purge(ctx, latest, handed, &res, failed)
	}
	for _, p := range res.Problems {
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

// handed is an invalidation the tile function handed over.
type handed struct {
	inv       Invalidation
	messageID string
}

// handedOver decodes the handed-over invalidations of b; a malformed one is
// a problem, which fails its message.
func (w *Worker) handedOver(ctx context.Context, b s3event.Batch, res *Result) []handed {
	var out []handed
	for _, m := range b.Messages {
		inv, err := DecodeInvalidation(m.Kind, m.Body)
		if err != nil {
			res.Problems = append(res.Problems, s3event.Problem{MessageID: m.MessageID, Index: m.Index, Reason: err.Error()})
			continue
		}
		if !w.p.invalidatesCDN() {
			// No CDN here: nothing to do, and nothing to retry.
			w.log.InfoContext(ctx, "handed-over invalidation ignored: no CDN", "targets", inv.Targets, "seq", inv.Seq)
			res.Ignored++
			continue
		}
		out = append(out, handed{inv: inv, messageID: m.MessageID})
	}
	return out
}

// purge runs the purge sequence for the batch: its own prefixes, recorded
// under the worker's name, and the handed-over invalidations (the tile
// function recorded those before it handed them over), after one settle
// delay. It returns the error of the batch's own purge; a failed handed-over
// invalidation fails its message instead.
func (w *Worker) purge(ctx context.Context, changes []s3event.Change, handed []handed, res *Result, failed map[string]bool) error {
	s := sequence{handed: make([]Invalidation, len(handed))}
	for i, h := range handed {
		s.handed[i] = h.inv
	}
	s.done = func(i int, out cdn.Outcome, err error) {
		h := handed[i]
		res.Throttled += out.Throttled
		if err != nil {
			w.log.WarnContext(ctx, "handed-over invalidation failed", "targets", h.inv.Targets, "seq", h.inv.Seq, "source", h.inv.Source, "err", err)
			failed[h.messageID] = true
			res.HandoffErrs++
			return
		}
		res.Invalidations++
		w.log.InfoContext(ctx, "handed-over invalidation applied", "paths", out.Paths, "seq", h.inv.Seq, "source", h.inv.Source)
	}
	if len(res.Prefixes) > 0 {
		source := "worker " + res.Source.String()
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			source += " " + lc.AwsRequestID
		}
		s.own = &Request{Prefixes: res.Prefixes, Keys: true, Source: source, BatchID: batchID(changes)}
	}
	// A batch recorded for the instances but not for the CDN (refused, or
	// no budget left within the deadline) fails, so it comes back; the
	// journal gets a harmless second entry then.
	out, err := w.p.run(ctx, s)
	res.Seq, res.Paths = out.Seq, out.Paths
	res.Throttled += out.Throttled
	return err
}

// noMetrics is the metrics when none are given.
type noMetrics struct{}

func (noMetrics) Notifications(int)                  {}
func (noMetrics) Prefixes(int)                       {}
func (noMetrics) JournalAppend(time.Duration, error) {}
func (noMetrics) InvalidationsIssued(int)            {}
func (noMetrics) InvalidationsThrottled(int)         {}
func (noMetrics) Flush(time.Time) error              { return nil }

// batchID names a batch by its changes (bucket, key and sequencer of each), so
// a redelivered batch gets the same CDN caller reference and a new change a
// new one.
func batchID(changes []s3event.Change) string {
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
		"handed_over", res.Invalidations, "handoff_errors", res.HandoffErrs, "failed_messages", len(res.Failed),
	}
	switch {
	case res.Err != nil:
		w.log.ErrorContext(ctx, "purge not recorded", append(attrs, "err", res.Err)...)
	case len(res.Prefixes) == 0 && res.Invalidations == 0 && res.HandoffErrs == 0:
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
		if tile.ValidateDir(c.TilesPrefix) != nil {
			errs = append(errs, fmt.Errorf("purge: tiles prefix %q must be empty or a directory ending in /", c.TilesPrefix))
		}
	}
	return errors.Join(errs...)
}
