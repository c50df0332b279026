package purge

import (
	"context"
	"fmt"

	"github.com/tilesieve/tilesieve/shared/purge/cdn"
)

// sequence is one run of the purge sequence, the order every purge takes
// whatever its source:
//
//  1. record: one journal entry of own's prefixes, which every function
//     instance applies to its tiers;
//  2. settle: wait SettleDelay, so that no instance that has not applied
//     the entry yet can refill the CDN with the old bytes;
//  3. invalidate: the CDN, within its budget of paths in progress.
//
// With handoff set, own's steps 2 and 3 are the receiver's (the tile
// function's admin purges go to the worker this way). A worker's batch may
// also carry handed, invalidations that the tile function recorded and
// handed over: they take steps 2 and 3 with own, after the same single
// wait, and each ends in done, so that one failing fails its message alone.
type sequence struct {
	own     *Request       // the purge to record; nil: none
	handoff Handoff        // set: own's invalidation is handed off
	handed  []Invalidation // recorded already: settled and invalidated with own
	// done is told how handed[i] ended; nil when handed is empty.
	done func(i int, out cdn.Outcome, err error)
}

// run runs s. It returns what own's purge did and its error: of the
// journal (nothing recorded, nothing invalidated), of the hand-off, or of
// the settle wait or the CDN (recorded, the CDN perhaps not invalidated).
func (p *Purger) run(ctx context.Context, s sequence) (Outcome, error) {
	var out Outcome
	var pending *Invalidation // own's, recorded and waiting for the CDN
	var err error             // own's
	if s.own != nil {
		var inv Invalidation
		if inv, err = p.record(ctx, *s.own); err == nil {
			out.Seq, out.Targets = inv.Seq, inv.Targets
			pending = &inv
		}
	}
	if pending != nil && s.handoff != nil {
		if err = s.handoff.Hand(ctx, *pending); err != nil {
			return out, fmt.Errorf("purge: hand the CDN invalidation to the worker: %w", err)
		}
		out.HandedOff, pending = true, nil
	}
	if p.cfg.CDN == nil || (pending == nil && len(s.handed) == 0) {
		return out, err
	}
	if serr := p.settle(ctx); serr != nil {
		for i := range s.handed {
			s.done(i, cdn.Outcome{}, serr)
		}
		if pending != nil {
			err = serr
		}
		return out, err
	}
	if pending != nil {
		var co cdn.Outcome
		co, err = p.invalidate(ctx, *pending)
		out.Paths, out.Throttled = co.Paths, co.Throttled
	}
	for i, inv := range s.handed {
		co, herr := p.invalidate(ctx, inv)
		s.done(i, co, herr)
	}
	return out, err
}

// record appends r as one journal entry and returns the invalidation that
// follows it.
func (p *Purger) record(ctx context.Context, r Request) (Invalidation, error) {
	start := p.cfg.Now()
	e, err := p.j.Append(ctx, r.Prefixes, r.Source)
	p.cfg.Metrics.JournalAppend(p.cfg.Now().Sub(start), err)
	if err != nil {
		return Invalidation{}, fmt.Errorf("purge: record %d prefixes: %w", len(r.Prefixes), err)
	}
	return Invalidation{Targets: r.targets(), BatchID: r.BatchID, Seq: e.Seq, Source: r.Source}, nil
}

// settle waits the settle delay.
func (p *Purger) settle(ctx context.Context) error {
	if p.cfg.SettleDelay <= 0 {
		return nil
	}
	if err := p.cfg.Sleep(ctx, p.cfg.SettleDelay); err != nil {
		return fmt.Errorf("purge: before invalidating the CDN: %w", err)
	}
	return nil
}

// invalidate invalidates the CDN for inv within its budget; the caller has
// waited the settle delay since the journal entry.
func (p *Purger) invalidate(ctx context.Context, inv Invalidation) (cdn.Outcome, error) {
	if len(inv.Targets) == 0 {
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

// invalidatesCDN reports whether the Purger invalidates a CDN itself.
func (p *Purger) invalidatesCDN() bool { return p.cfg.CDN != nil }
