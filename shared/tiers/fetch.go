package tiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// fill is the value of one merged fetch.
type fill struct {
	t    *tile.Tile
	src  Source
	cost tile.FetchCost // what the origin fetch cost
}

// fetch gets key from the origin, revalidating cached when it is set, and
// fills the tiers. Concurrent fetches of one key make one origin request,
// except that a request never joins a fetch that a purge of its key has
// overtaken: those bytes may be what the purge removed.
//
// cached, when set, is read under r.Lease; whatever reads it after this
// call returns (the flight's function, a revalidation in the background)
// holds a lease of its own.
func (e *Engine) fetch(ctx context.Context, key string, cached *tile.Tile, r *Result) (*tile.Tile, Source, error) {
	if cached != nil && e.originDown() && e.servableStale(key, cached, false) {
		// S3 failed moments ago: answer with the stale copy at once rather
		// than wait for S3 again, and let one revalidation run for it.
		pin := r.Lease.Clone()
		e.background.Go(func() {
			defer pin.Release()
			e.revalidateDetached(ctx, key, cached, pin)
		})
		return cached, Stale, nil
	}
	f, shared, err := e.doFetch(ctx, key, cached, r.Lease, func(fctx context.Context, epoch uint64) (fill, error) {
		fctx, cost := tile.CountFetch(fctx)
		t, src, err := e.fetchOnce(fctx, ctx, key, cached, epoch)
		return fill{t, src, cost.Load()}, err
	})
	if shared {
		e.stats.merged.Add(1)
	} else {
		r.Cost = f.cost
	}
	if err == nil {
		return f.t, f.src, nil
	}
	if cached != nil && !errors.Is(err, tile.ErrNotFound) && e.servableStale(key, cached, errors.Is(err, tile.ErrTooLarge)) {
		if !e.inOutage.Load() {
			e.log.Warn("serving stale copy", "key", key, "err", err)
		}
		return cached, Stale, nil
	}
	return nil, 0, err
}

// servableStale reports whether cached may be served stale now that S3
// failed, and counts it when it may: within stale-if-error, and either
// stale only by age or, in an outage (the journal does not answer either),
// no longer vouched for. Outside an outage a copy the journal no longer
// vouches for is never served stale: the journal answers, so a purge of it
// may be recorded there, and S3's answer is what tells. answered is an S3
// that answered with a refusal: no outage.
func (e *Engine) servableStale(key string, cached *tile.Tile, answered bool) bool {
	now := e.now()
	if now.Sub(cached.StoredAt) >= e.cfg.RevalidateAfter+e.cfg.StaleIfError {
		return false
	}
	if !e.trusted(cached, now) {
		if answered || !e.journalDown() {
			return false
		}
		e.stats.outageStale.Add(1)
		if e.inOutage.CompareAndSwap(false, true) {
			e.log.Warn("S3 and the purge journal both fail: serving cached copies stale within stale-if-error until they answer",
				"key", key, "stale_if_error", e.cfg.StaleIfError)
		}
	}
	e.stats.stale.Add(1)
	return true
}

// journalDown reports whether outage answers are allowed and the journal's
// last check failed.
func (e *Engine) journalDown() bool {
	return !e.cfg.StrictOutage && e.sy != nil && e.sy.Unreachable()
}

// outage reports whether neither the journal nor S3 answers now: the last
// check failed and S3 failed within OriginFailureWindow.
func (e *Engine) outage() bool {
	return e.journalDown() && e.originDown()
}

// originDown reports whether S3 failed within the last OriginFailureWindow.
func (e *Engine) originDown() bool {
	return e.now().UnixNano() < e.downUntil.Load()
}

// revalidateDetached revalidates cached, read under lease, in the
// background for requests that were answered stale; concurrent ones join
// one fetch.
func (e *Engine) revalidateDetached(ctx context.Context, key string, cached *tile.Tile, lease memory.Lease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.OriginTimeout)
	defer cancel()
	e.doFetch(ctx, key, cached, lease, func(fctx context.Context, epoch uint64) (fill, error) {
		t, src, err := e.fetchOnce(fctx, ctx, key, cached, epoch)
		return fill{t, src, tile.FetchCost{}}, err
	})
}

// doFetch runs fn as the merged fetch of key (flight.Group.Do). The
// function may outlive its caller, who may give up first: when it runs,
// it holds a lease of its own on cached, which its caller reads under
// lease.
func (e *Engine) doFetch(ctx context.Context, key string, cached *tile.Tile, lease memory.Lease,
	fn func(context.Context, uint64) (fill, error)) (fill, bool, error) {
	var pin memory.Lease
	if cached != nil {
		pin = lease.Clone()
	}
	f, shared, err := e.flight.Do(ctx, key, e.guard.Begin(), e.guard.Overtaken,
		func(fctx context.Context, epoch uint64) (fill, error) {
			defer pin.Release()
			return fn(fctx, epoch)
		})
	if shared {
		pin.Release() // joined another's call: this one's function never runs
	}
	return f, shared, err
}

// takeSlot waits for one of the MaxOriginFetches origin fetch slots, within
// ctx; release gives it back.
func (e *Engine) takeSlot(ctx context.Context) (release func(), err error) {
	select {
	case e.slots <- struct{}{}:
		n := e.stats.inFlight.Add(1)
		for p := e.stats.inFlightPeak.Load(); n > p && !e.stats.inFlightPeak.CompareAndSwap(p, n); p = e.stats.inFlightPeak.Load() {
		}
		return func() {
			e.stats.inFlight.Add(-1)
			<-e.slots
		}, nil
	case <-ctx.Done():
		e.stats.originErrors.Add(1)
		return nil, fmt.Errorf("tiers: waiting for one of %d origin fetch slots: %w", cap(e.slots), ctx.Err())
	}
}

// observe records an origin fetch that took d and ended with err: in the
// metrics (a 404 or 304 is an answer, not a failure), and as the end of an
// outage when S3 answered (a refusal of what it holds included).
func (e *Engine) observe(err error, d time.Duration) {
	answered := err == nil || errors.Is(err, tile.ErrNotModified) || errors.Is(err, tile.ErrNotFound)
	if e.metrics != nil {
		var merr error
		if !answered {
			merr = err
		}
		e.metrics.OriginFetch(d, merr)
	}
	if answered || refused(err) {
		e.downUntil.Store(0) // S3 answers again
		if e.inOutage.CompareAndSwap(true, false) {
			e.log.Info("S3 answers again: the outage's stale answers end")
		}
	}
}

// fetchOnce is the body of one merged fetch, started at guard epoch epoch.
// fctx is the flight's (detached from any one caller, cancelled when none
// waits any more); it is bounded by OriginTimeout and by the deadline of
// the caller that started it (first). At most MaxOriginFetches run at once.
func (e *Engine) fetchOnce(fctx, first context.Context, key string, cached *tile.Tile, epoch uint64) (*tile.Tile, Source, error) {
	fctx, cancel := context.WithTimeout(fctx, e.cfg.OriginTimeout)
	defer cancel()
	if dl, ok := first.Deadline(); ok {
		var cancelDL context.CancelFunc
		fctx, cancelDL = context.WithDeadline(fctx, dl)
		defer cancelDL()
	}
	release, err := e.takeSlot(fctx)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	etag := ""
	if cached != nil {
		etag = cached.ETag
	}
	e.stats.originFetches.Add(1)
	// A copy is as current as the moment its request left: S3 may answer
	// with the version it held then.
	sent := e.now()
	began := time.Now()
	t, err := e.origin.Get(fctx, key, etag)
	e.observe(err, time.Since(began))
	switch {
	case err == nil:
		t.StoredAt = sent
		e.store(key, t, epoch)
		e.stats.misses.Add(1)
		return t, FromOrigin, nil
	case cached != nil && errors.Is(err, tile.ErrNotModified):
		// Both tiers get the renewed copy, so a tile that later leaves
		// memory is not revalidated again when read back from disk.
		renewed := *cached
		renewed.StoredAt = sent
		// Its body is the heap's, and its answer prepared anew (store): the
		// cached copy's may be bytes off the heap that only this fetch's
		// caller holds, not the others answered with it.
		renewed.Body, renewed.Prepared = bytes.Clone(cached.Body), nil
		e.store(key, &renewed, epoch)
		e.stats.revalidated.Add(1)
		return &renewed, Revalidated, nil
	case errors.Is(err, tile.ErrNotFound):
		if cached == nil && e.cfg.NegativeTTL > 0 {
			// Remember the miss (sparse tilesets ask for missing tiles all
			// the time); an upload's purge forgets it.
			e.guard.Insert(key, epoch, func() { e.mem.Set(ownKey(key), e.remembered(sent)) })
		}
		if cached != nil {
			// The tile was deleted at the origin: forget every copy of it.
			e.guard.Purge(key, func() {
				e.mem.Delete(key)
				if e.disk != nil {
					e.disk.Delete(key)
				}
			})
		}
		return nil, 0, err
	case refused(err):
		e.stats.originErrors.Add(1)
		return nil, 0, err
	default:
		e.stats.originErrors.Add(1)
		if fctx.Err() == nil || !errors.Is(err, context.Canceled) {
			// S3 failed or timed out (not: every caller gave up): for a
			// while, stale copies go out without waiting for it again.
			e.downUntil.Store(e.now().Add(e.cfg.OriginFailureWindow).UnixNano())
		}
		return nil, 0, err
	}
}

// refused reports whether err is S3's answer refused for what it holds
// (too large, malformed, past a bound): no S3 failure.
func refused(err error) bool {
	return errors.Is(err, tile.ErrTooLarge) || errors.Is(err, tile.ErrRefused)
}

// negativeShare is how far apart the requests of misses that share one
// remembered 404 may have left.
const negativeShare = 100 * time.Millisecond

// remembered is the remembered 404 of a miss whose request left at sent:
// one Tile shared by the misses of up to negativeShare, its StoredAt the
// earliest of theirs, so none is believed longer than its own would be (it
// expires and stops being vouched for a little earlier, never later). The
// memory tier charges each entry the whole Tile all the same, so under a
// flood of missing keys the heap the tier holds stays well inside its bound,
// leaving room inside the process's memory limit for the heap's own
// overhead (fragmentation, garbage between collections).
func (e *Engine) remembered(sent time.Time) *tile.Tile {
	share := min(negativeShare, e.cfg.NegativeTTL/10)
	if n := e.negative.Load(); n != nil && !sent.Before(n.StoredAt) && sent.Sub(n.StoredAt) < share {
		return n
	}
	n := &tile.Tile{Missing: true, StoredAt: sent}
	e.negative.Store(n)
	return n
}

// ownKey is key in an allocation of its own, for the memory tier to keep: a
// key cut from a request (its path, a substring of the request line, query
// string included) would keep the whole line alive there, while the tier
// charges only the key's bytes.
func ownKey(key string) string { return strings.Clone(key) }

// store puts a fetched tile into both tiers unless a purge overtook the
// fetch. The memory tier takes it under the guard; the disk file is written
// after, outside the guard, so a purge (which blocks new lookups while it
// waits for the guard) never waits for a file and its fsync. The disk mark
// taken under the guard keeps that safe: a purge the guard orders after the
// insert removes from the disk after the mark, so the write is not
// committed (disk.ErrPurged), or is committed before the purge's removal
// and removed by it. A disk that cannot write is logged and skipped: memory
// and origin still serve.
func (e *Engine) store(key string, t *tile.Tile, epoch uint64) {
	if e.prepare != nil {
		e.prepare(key, t)
	}
	var mark disk.Mark
	if !e.guard.Insert(key, epoch, func() {
		e.mem.Set(ownKey(key), t)
		if e.disk != nil {
			mark = e.disk.Mark()
		}
	}) {
		e.stats.dropped.Add(1)
		return
	}
	if e.disk == nil {
		return
	}
	if e.diskWriteHook != nil {
		e.diskWriteHook(key)
	}
	switch err := e.disk.PutSince(mark, key, t); {
	case err == nil:
	case errors.Is(err, disk.ErrPurged):
		e.stats.dropped.Add(1)
	default:
		e.stats.diskWriteErrors.Add(1)
		e.log.Warn("disk tier write failed; serving from memory and origin", "key", key, "err", err)
	}
}
