package purge

import (
	"context"
	"log/slog"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/internal/retry"
	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// Invalidator purges the CDN for targets (directories, open prefixes and
// single keys, see cdn.Paths), shrinking the batch through shrink when the
// CDN's budget of paths in progress is short; *cdn.Invalidator is one.
type Invalidator interface {
	InvalidateTargets(ctx context.Context, targets []string, batchID string, shrink cdn.Shrink) (cdn.Outcome, error)
}

// PurgerConfig configures a Purger.
type PurgerConfig struct {
	// Coalesce shrinks a batch when the CDN's budget is short.
	Coalesce CoalesceConfig
	// SettleDelay is how long the sequence waits between recording a purge
	// in the journal and purging the CDN. With SYNC_INTERVAL plus the
	// follower's check timeout, every function instance has applied the
	// entry before the CDN comes back for the tiles, so it cannot refill the
	// CDN with the old bytes from an instance that has not caught up yet.
	// 0 does not wait.
	SettleDelay time.Duration
	// CDN is invalidated after the settle delay; nil (or a disabled
	// *cdn.Invalidator) has no CDN, and then nothing waits.
	CDN Invalidator
	// Handoff, when set, receives the invalidation of each Purge instead of
	// CDN: the settle delay and the budget are then the receiver's.
	Handoff Handoff
	// Sleep waits d or until ctx ends; tests inject a clock through it.
	// Default retry.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Metrics receives the journal appends and CDN outcomes; nil reports
	// none. The Purger never flushes it.
	Metrics WorkerMetrics
	// Now is the clock of the metrics (append latency); default time.Now.
	Now func() time.Time
}

// Validate checks a PurgerConfig.
func (c PurgerConfig) Validate() error {
	return defaults.NotNegative("purge", "SettleDelay", c.SettleDelay)
}

// Purger runs the purge sequence, the same for every source of purges (the
// admin API through Purge, S3 changes through a Worker): it records the
// prefixes as one journal entry, which every function instance applies,
// then waits the settle delay and invalidates the CDN within its budget, or
// hands the invalidation to the worker to do so.
//
// A Purger is safe for concurrent use.
type Purger struct {
	cfg PurgerConfig
	j   *journal.Journal
	log *slog.Logger
}

// NewPurger returns the purge sequence over journal j.
func NewPurger(j *journal.Journal, cfg PurgerConfig, log *slog.Logger) *Purger {
	if e, ok := cfg.CDN.(interface{ Enabled() bool }); ok && !e.Enabled() {
		cfg.CDN = nil // no distribution: do not wait SettleDelay for nothing
	}
	if cfg.Sleep == nil {
		cfg.Sleep = retry.Sleep
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	cfg.Now = defaults.Clock(cfg.Now)
	return &Purger{cfg: cfg, j: j, log: defaults.Logger(log)}
}

// Request is one purge.
type Request struct {
	// Prefixes are what every tier purges: each covers every key it is a
	// prefix of. Coalesced, derived names included (see PrefixRequest).
	Prefixes []string
	// Keys says that the Prefixes that are not directories are single keys
	// (S3 changes: exact CDN paths); false makes them open prefixes (the
	// admin API's "osm/1" is osm/1/… and osm/10/…: wildcard CDN paths).
	Keys bool
	// Source names the purge in the journal entry.
	Source string
	// BatchID names the batch for the CDN: the same BatchID and paths give
	// the same caller reference, so a retried batch is invalidated once.
	BatchID string
}

// PrefixRequest is the purge of every key under prefix, as the admin API
// asks for it: the prefix and the names it derives (see tilename.DerivedOfPrefix),
// coalesced, as open prefixes.
func PrefixRequest(prefix, source, id string) Request {
	return Request{
		Prefixes: Coalesce(append([]string{prefix}, tilename.DerivedOfPrefix(prefix)...), CoalesceConfig{}),
		Source:   source,
		BatchID:  id,
	}
}

// targets are r's prefixes as CDN targets.
func (r Request) targets() []string {
	t := make([]string, 0, len(r.Prefixes))
	for _, p := range r.Prefixes {
		if !r.Keys && !cdn.IsWildcard(p) {
			p += "*"
		}
		t = append(t, p)
	}
	return t
}

// Outcome is what Purge did.
type Outcome struct {
	Seq uint64 // the journal entry
	// Targets are the CDN targets of the purge (Invalidation.Targets).
	Targets []string
	// Paths are the CDN paths invalidated (or meant to be, when the error
	// is the CDN's); none when the invalidation was handed off.
	Paths []string
	// Throttled counts the times CloudFront held the invalidation back.
	Throttled int
	// HandedOff says that the invalidation went to the worker.
	HandedOff bool
}

// Purge records r in the journal, then invalidates the CDN after the settle
// delay, or hands the invalidation off when the Purger has a Handoff. An
// error of the journal means nothing was recorded and the CDN was left
// alone; an error after it (Seq is set) means the instances will purge but
// the CDN may not have been.
func (p *Purger) Purge(ctx context.Context, r Request) (Outcome, error) {
	return p.run(ctx, sequence{own: &r, handoff: p.cfg.Handoff})
}
