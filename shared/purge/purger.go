package purge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
	"github.com/tilesieve/tilesieve/shared/wait"
)

// Invalidator purges the CDN for targets (directories, open prefixes and
// single keys, see cdn.Paths), shrinking the batch through shrink when the
// CDN's budget of paths in progress is short; *cdn.Invalidator is one.
type Invalidator interface {
	InvalidateTargets(ctx context.Context, targets []string, batchID string, shrink cdn.Shrink) (cdn.Outcome, error)
}

// Handoff passes a CDN invalidation to the sync worker, which applies it
// after the settle delay within the CDN's budget. The tile function hands
// its admin purges over this way so that only the worker talks to the CDN.
type Handoff interface {
	Hand(ctx context.Context, inv Invalidation) error
}

// PurgerConfig configures a Purger.
type PurgerConfig struct {
	// Coalesce shrinks a batch when the CDN's budget is short.
	Coalesce CoalesceConfig
	// SettleDelay is how long the pipeline waits between recording a purge
	// in the journal and purging the CDN. With SYNC_INTERVAL plus the
	// follower's check timeout, every function instance has applied the
	// entry before the CDN comes back for the tiles, so it cannot refill the
	// CDN with the old bytes from an instance that has not caught up yet.
	// 0 does not wait.
	SettleDelay time.Duration
	// CDN is invalidated after the settle delay; nil (or a disabled
	// *cdn.Invalidator) has no CDN, and then nothing waits.
	CDN Invalidator
	// Handoff, when set, receives each invalidation instead of CDN: the
	// settle delay and the budget are then the receiver's.
	Handoff Handoff
	// Sleep waits d or until ctx ends; tests inject a clock through it.
	// Default wait.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Metrics receives the journal appends and CDN outcomes; nil reports
	// none. The Purger never flushes it.
	Metrics WorkerMetrics
	// Now is the clock of the metrics (append latency); default time.Now.
	Now func() time.Time
}

// Purger is the purge pipeline, the same for every source of purges (S3
// changes through the worker, the admin API): it records the prefixes as one
// journal entry, which every tile function instance applies, then waits the
// settle delay and invalidates the CDN within its budget, or hands the
// invalidation to the worker to do so.
//
// A Purger is safe for concurrent use.
type Purger struct {
	cfg PurgerConfig
	j   *journal.Journal
	log *slog.Logger
}

// NewPurger returns the pipeline over journal j.
func NewPurger(j *journal.Journal, cfg PurgerConfig, log *slog.Logger) *Purger {
	if e, ok := cfg.CDN.(interface{ Enabled() bool }); ok && !e.Enabled() {
		cfg.CDN = nil // no distribution: do not wait SettleDelay for nothing
	}
	if cfg.Sleep == nil {
		cfg.Sleep = wait.Sleep
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	cfg.Now = defaults.Clock(cfg.Now)
	return &Purger{cfg: cfg, j: j, log: defaults.Logger(log)}
}

// Journal is the journal the Purger records in.
func (p *Purger) Journal() *journal.Journal { return p.j }

// InvalidatesCDN reports whether the Purger invalidates a CDN itself (and
// so waits the settle delay before it does).
func (p *Purger) InvalidatesCDN() bool { return p.cfg.CDN != nil }

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

// Invalidation is the CDN stage of a purge: what the Purger invalidates
// after the settle delay, and what the tile function hands to the worker.
type Invalidation struct {
	// Targets are the CDN targets: directories, single keys, and open
	// prefixes marked by a trailing "*" (cdn.Paths).
	Targets []string `json:"targets"`
	BatchID string   `json:"batch_id"`
	// Seq is the journal entry the invalidation follows, for the logs.
	Seq    uint64 `json:"seq,omitempty"`
	Source string `json:"source,omitempty"`
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
// delay (or hands the invalidation off). An error of the journal means
// nothing was recorded and the CDN was left alone; an error after it (Seq is
// set) means the instances will purge but the CDN may not have been.
func (p *Purger) Purge(ctx context.Context, r Request) (Outcome, error) {
	var out Outcome
	e, err := p.Record(ctx, r.Prefixes, r.Source)
	if err != nil {
		return out, err
	}
	out.Seq = e.Seq
	inv := Invalidation{Targets: r.targets(), BatchID: r.BatchID, Seq: e.Seq, Source: r.Source}
	out.Targets = inv.Targets
	switch {
	case p.cfg.Handoff != nil:
		if err := p.cfg.Handoff.Hand(ctx, inv); err != nil {
			return out, fmt.Errorf("purge: hand the CDN invalidation to the worker: %w", err)
		}
		out.HandedOff = true
		return out, nil
	case p.cfg.CDN == nil:
		return out, nil
	}
	if err := p.Settle(ctx); err != nil {
		return out, err
	}
	co, err := p.InvalidateNow(ctx, inv)
	out.Paths, out.Throttled = co.Paths, co.Throttled
	return out, err
}

// Record appends one journal entry of prefixes.
func (p *Purger) Record(ctx context.Context, prefixes []string, source string) (journal.Entry, error) {
	start := p.cfg.Now()
	e, err := p.j.Append(ctx, prefixes, source)
	p.cfg.Metrics.JournalAppend(p.cfg.Now().Sub(start), err)
	if err != nil {
		return e, fmt.Errorf("purge: record %d prefixes: %w", len(prefixes), err)
	}
	return e, nil
}

// Settle waits the settle delay, when there is a CDN to invalidate after it.
func (p *Purger) Settle(ctx context.Context) error {
	if p.cfg.CDN == nil || p.cfg.SettleDelay <= 0 {
		return nil
	}
	if err := p.cfg.Sleep(ctx, p.cfg.SettleDelay); err != nil {
		return fmt.Errorf("purge: before invalidating the CDN: %w", err)
	}
	return nil
}

// InvalidateNow invalidates the CDN for inv within its budget, without the
// settle delay: the caller has waited it (Settle) since the journal entry.
func (p *Purger) InvalidateNow(ctx context.Context, inv Invalidation) (cdn.Outcome, error) {
	if p.cfg.CDN == nil || len(inv.Targets) == 0 {
		return cdn.Outcome{}, nil
	}
	out, err := p.cfg.CDN.InvalidateTargets(ctx, inv.Targets, inv.BatchID, p.cfg.Coalesce.Shrink)
	p.cfg.Metrics.InvalidationsThrottled(out.Throttled)
	if err != nil {
		return out, err
	}
	p.cfg.Metrics.InvalidationsIssued(len(out.Paths))
	return out, nil
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

// messageKind marks a handed-off invalidation among the S3 notifications on
// the worker's queue (s3event.Message.Kind).
const messageKind = "invalidate"

// message is the body of a handed-off invalidation on the worker's queue.
type message struct {
	Tilesieve    string       `json:"tilesieve"` // messageKind
	Invalidation Invalidation `json:"invalidation"`
}

// Message encodes inv as the body of a message to the worker's queue, which
// the worker's event decoder (s3event) tells apart from S3 notifications.
func (inv Invalidation) Message() ([]byte, error) {
	return json.Marshal(message{Tilesieve: messageKind, Invalidation: inv})
}

// DecodeInvalidation decodes a handed-off invalidation (Invalidation.Message)
// and checks it: it comes from a queue, so it is outside input.
func DecodeInvalidation(kind string, body []byte) (Invalidation, error) {
	if kind != messageKind {
		return Invalidation{}, fmt.Errorf("purge: message kind %q is not %q", kind, messageKind)
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return Invalidation{}, fmt.Errorf("purge: invalidation message: %w", err)
	}
	inv := m.Invalidation
	if len(inv.Targets) == 0 {
		return inv, errors.New("purge: invalidation message without targets")
	}
	if inv.BatchID == "" {
		return inv, errors.New("purge: invalidation message without a batch id")
	}
	for _, t := range inv.Targets {
		if err := tile.ValidatePrefix(strings.TrimSuffix(t, "*")); err != nil {
			return inv, fmt.Errorf("purge: invalidation target %q: %w", t, err)
		}
	}
	return inv, nil
}
