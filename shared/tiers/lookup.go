package tiers

import (
	"context"
	"time"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// lookup finds key in memory, then on disk, then at the origin. A copy the
// journal follower no longer vouches for is revalidated with S3, as an
// expired one is. A tile on disk that is not promoted into the memory tier
// (promote; never one too big for it) is not read: its metadata is
// returned and r.Stream is its body.
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
		it, ok := e.disk.Stat(key)
		if ok && !e.promote(it) {
			if t, body, ok := e.disk.Open(key); ok {
				if e.fresh(t, now) {
					r.Stream = body
					e.stats.diskHits.Add(1)
					return t, FromDisk, nil
				}
				body.Close()
				if it.Size > e.mem.MaxEntry() {
					// Not held in memory, so not revalidated in place:
					// fetched again whole, and the disk copy replaced.
					return e.fetch(ctx, key, nil, r)
				}
				// Revalidated with its body at hand, below.
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

// promote reports whether a disk hit of it is read into the memory tier
// rather than answered from its file (Result.Stream), which sends it
// without a copy through the process where the transport can (sendfile).
// A tile is promoted when the memory tier can take it and either has room
// for it without evicting, or the tile was read from disk again within as
// many disk reads as the memory tier holds entries: it came back soon
// enough to be a memory hit next time. A set larger than the memory tier
// read in a cycle is then answered from disk, rather than evicting what
// the tier holds to make room for tiles that leave before they are asked
// for again.
func (e *Engine) promote(it disk.Item) bool {
	if it.Size > e.mem.MaxEntry() {
		return false
	}
	if e.mem.Used()+it.Size+promoteSlack <= e.mem.MaxBytes() {
		return true
	}
	return it.ReadsAgo >= 0 && it.ReadsAgo < int64(e.mem.Len())
}

// promoteSlack is what promote reckons an entry weighs beyond its body.
const promoteSlack = 4 << 10

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
