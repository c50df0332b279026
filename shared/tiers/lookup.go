package tiers

import (
	"context"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// lookup finds key in memory, then on disk, then at the origin. A copy the
// journal follower no longer vouches for is revalidated with S3, as an
// expired one is. A tile on disk too big for the memory tier is not read
// whole: its metadata is returned and r.Stream reads its body.
func (e *Engine) lookup(ctx context.Context, key string, now time.Time, r *Result) (*tile.Tile, Source, error) {
	if t, lease, ok := e.mem.Acquire(key); ok {
		r.Lease = lease // the cached copy is answered, or revalidated and answered stale
		if t.Missing {
			if now.Sub(t.StoredAt) < e.cfg.NegativeTTL && e.trusted(t, now) {
				e.stats.negativeHits.Add(1)
				return nil, FromMemory, tile.ErrNotFound
			}
			return e.fetch(ctx, key, nil, r)
		}
		if e.fresh(t, now) {
			e.stats.memoryHits.Add(1)
			return t, FromMemory, nil
		}
		return e.fetch(ctx, key, t, r)
	}
	if e.disk != nil {
		epoch := e.guard.Begin()
		if e.pending.covers(key) {
			// A purge has emptied memory of it and is detaching it from
			// disk: what the disk holds may be what it removes.
			return e.fetch(ctx, key, nil, r)
		}
		if it, ok := e.disk.Stat(key); ok && it.Size > e.mem.MaxEntry() {
			if t, body, ok := e.disk.Open(key); ok {
				if e.fresh(t, now) {
					r.Stream = body
					e.stats.diskHits.Add(1)
					return t, FromDisk, nil
				}
				// Not held in memory, so not revalidated in place: fetched
				// again whole, and the disk copy replaced.
				body.Close()
				return e.fetch(ctx, key, nil, r)
			}
		}
		if t, ok := e.disk.Get(key); ok {
			if !e.fresh(t, now) {
				return e.fetch(ctx, key, t, r)
			}
			if e.prepare != nil {
				e.prepare(key, t)
			}
			e.guard.Insert(key, epoch, func() { e.mem.Set(ownKey(key), t) })
			e.stats.diskHits.Add(1)
			return t, FromDisk, nil
		}
	}
	return e.fetch(ctx, key, nil, r)
}

// fresh reports whether a cached copy may be answered with as it is: young
// enough, and vouched for by the journal follower.
func (e *Engine) fresh(t *tile.Tile, now time.Time) bool {
	return now.Sub(t.StoredAt) < e.cfg.RevalidateAfter && e.trusted(t, now)
}

func (e *Engine) trusted(t *tile.Tile, now time.Time) bool {
	return e.Trusted(t.StoredAt, now)
}

// Trusted reports whether what S3 said at storedAt may be answered with at
// now without asking S3 again: always without a follower, else when the
// follower vouches for it (Syncer.Trusted). An origin that keeps its own
// knowledge of S3 (an archive's version) asks it too.
func (e *Engine) Trusted(storedAt, now time.Time) bool {
	return e.sy == nil || e.sy.Trusted(storedAt, now)
}
