package tileserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tilesieve/tilesieve/shared/disk"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// source is the tier that answered, as X-Cache names it.
type source uint8

const (
	srcMemory source = iota + 1
	srcDisk
	srcOrigin
	srcRevalidated
	srcStale
)

func (s source) String() string {
	switch s {
	case srcMemory:
		return "HIT-MEMORY"
	case srcDisk:
		return "HIT-DISK"
	case srcOrigin:
		return "MISS"
	case srcRevalidated:
		return "REVALIDATED"
	case srcStale:
		return "STALE"
	}
	return "MISS"
}

// lookupBeside is lookup while the journal check that closes synced runs
// (a nil synced: none runs). It returns once both are done, and looks again
// if the check applied a purge meanwhile and the tile came from memory or
// disk: what was found may be what the purge removed. A tile from S3 is as
// fresh as the check could make it.
func (s *Server) lookupBeside(ctx context.Context, key string, now time.Time, synced <-chan struct{}, stream **disk.Body) (*tile.Tile, source, error) {
	if synced == nil {
		return s.lookup(ctx, key, now, stream)
	}
	epoch := s.guard.begin()
	t, src, err := s.lookup(ctx, key, now, stream)
	<-synced
	if s.guard.begin() != epoch && (src == srcMemory || src == srcDisk || src == srcStale) {
		s.stats.relooked.Add(1)
		if *stream != nil {
			(*stream).Close()
			*stream = nil
		}
		return s.lookup(ctx, key, s.now(), stream)
	}
	return t, src, err
}

// lookup finds key in memory, then on disk, then at the origin. A copy the
// journal follower no longer vouches for is revalidated with S3, as an
// expired one is. A tile on disk too big for the memory tier is not read
// whole: its metadata is returned and *stream reads its body.
func (s *Server) lookup(ctx context.Context, key string, now time.Time, stream **disk.Body) (*tile.Tile, source, error) {
	if t, ok := s.mem.Get(key); ok {
		if t.Missing {
			if now.Sub(t.StoredAt) < s.negativeTTL && s.trusted(t, now) {
				s.stats.negativeHits.Add(1)
				return nil, srcMemory, origin.ErrNotFound
			}
			return s.fetch(ctx, key, nil)
		}
		if s.fresh(t, now) {
			s.stats.memoryHits.Add(1)
			return t, srcMemory, nil
		}
		return s.fetch(ctx, key, t)
	}
	if s.disk != nil {
		epoch := s.guard.begin()
		if it, ok := s.disk.Stat(key); ok && it.Size > s.mem.MaxEntry() {
			if t, body, ok := s.disk.Open(key); ok {
				if s.fresh(t, now) {
					*stream = body
					s.stats.diskHits.Add(1)
					return t, srcDisk, nil
				}
				// Not held in memory, so not revalidated in place: fetched
				// again whole, and the disk copy replaced.
				body.Close()
				return s.fetch(ctx, key, nil)
			}
		}
		if t, ok := s.disk.Get(key); ok {
			if !s.fresh(t, now) {
				return s.fetch(ctx, key, t)
			}
			s.prepare(key, t)
			s.guard.insert(key, epoch, func() { s.mem.Set(key, t) })
			s.stats.diskHits.Add(1)
			return t, srcDisk, nil
		}
	}
	return s.fetch(ctx, key, nil)
}

// fresh reports whether a cached copy may be answered with as it is: young
// enough, and vouched for by the journal follower.
func (s *Server) fresh(t *tile.Tile, now time.Time) bool {
	return now.Sub(t.StoredAt) < s.cfg.RevalidateAfter && s.trusted(t, now)
}

func (s *Server) trusted(t *tile.Tile, now time.Time) bool {
	return s.sy == nil || s.sy.Trusted(t.StoredAt, now)
}

// fetch gets key from the origin, revalidating cached when it is set, and
// fills the tiers. Concurrent fetches of one key make one origin request,
// except that a request never joins a fetch that a purge of its key has
// overtaken: those bytes may be what the purge removed.
func (s *Server) fetch(ctx context.Context, key string, cached *tile.Tile) (*tile.Tile, source, error) {
	if cached != nil && s.originDown() && s.servableStale(cached) {
		// S3 failed moments ago: answer with the stale copy at once rather
		// than wait for S3 again, and let one revalidation run for it.
		s.stats.stale.Add(1)
		s.background.Go(func() { s.revalidateDetached(ctx, key, cached) })
		return cached, srcStale, nil
	}
	t, src, shared, err := s.flight.do(ctx, key, s.guard.begin(), s.guard.overtaken,
		func(fctx context.Context, epoch uint64) (*tile.Tile, source, error) {
			return s.fetchOnce(fctx, ctx, key, cached, epoch)
		})
	if shared {
		s.stats.merged.Add(1)
	}
	if err == nil {
		return t, src, nil
	}
	if cached != nil && !errors.Is(err, origin.ErrNotFound) && s.servableStale(cached) {
		s.stats.stale.Add(1)
		s.log.Warn("serving stale copy", "key", key, "err", err)
		return cached, srcStale, nil
	}
	return nil, 0, err
}

// servableStale reports whether cached may be served stale when S3 fails:
// within stale-if-error, and stale only by age. A copy the journal no
// longer vouches for is never served stale: a purge may have removed it.
func (s *Server) servableStale(cached *tile.Tile) bool {
	now := s.now()
	return now.Sub(cached.StoredAt) < s.cfg.RevalidateAfter+s.staleIfError && s.trusted(cached, now)
}

// originDown reports whether S3 failed within the last OriginFailureWindow.
func (s *Server) originDown() bool {
	return s.now().UnixNano() < s.downUntil.Load()
}

// revalidateDetached revalidates cached in the background for requests
// that were answered stale; concurrent ones join one fetch.
func (s *Server) revalidateDetached(ctx context.Context, key string, cached *tile.Tile) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.OriginTimeout)
	defer cancel()
	s.flight.do(ctx, key, s.guard.begin(), s.guard.overtaken,
		func(fctx context.Context, epoch uint64) (*tile.Tile, source, error) {
			return s.fetchOnce(fctx, ctx, key, cached, epoch)
		})
}

// fetchOnce is the body of one merged fetch, started at guard epoch epoch.
// fctx is the flight's (detached from any one caller, cancelled when none
// waits any more); it is bounded by OriginTimeout and by the deadline of
// the caller that started it (first). At most MaxOriginFetches run at once.
func (s *Server) fetchOnce(fctx, first context.Context, key string, cached *tile.Tile, epoch uint64) (*tile.Tile, source, error) {
	fctx, cancel := context.WithTimeout(fctx, s.cfg.OriginTimeout)
	defer cancel()
	if dl, ok := first.Deadline(); ok {
		var cancelDL context.CancelFunc
		fctx, cancelDL = context.WithDeadline(fctx, dl)
		defer cancelDL()
	}
	select {
	case s.slots <- struct{}{}:
		n := s.stats.inFlight.Add(1)
		for p := s.stats.inFlightPeak.Load(); n > p && !s.stats.inFlightPeak.CompareAndSwap(p, n); p = s.stats.inFlightPeak.Load() {
		}
		defer func() {
			s.stats.inFlight.Add(-1)
			<-s.slots
		}()
	case <-fctx.Done():
		s.stats.originErrors.Add(1)
		return nil, 0, fmt.Errorf("tileserver: waiting for one of %d origin fetch slots: %w", cap(s.slots), fctx.Err())
	}
	etag := ""
	if cached != nil {
		etag = cached.ETag
	}
	s.stats.originFetches.Add(1)
	// A copy is as current as the moment its request left: S3 may answer
	// with the version it held then.
	sent := s.now()
	began := time.Now()
	t, err := s.origin.Get(fctx, key, etag)
	if s.metrics != nil {
		merr := err
		if errors.Is(err, origin.ErrNotFound) || errors.Is(err, origin.ErrNotModified) {
			merr = nil // an answer, not a failure
		}
		s.metrics.OriginFetch(time.Since(began), merr)
	}
	if err == nil || errors.Is(err, origin.ErrNotModified) || errors.Is(err, origin.ErrNotFound) {
		s.downUntil.Store(0) // S3 answers again
	}
	switch {
	case err == nil:
		t.ContentType = contentTypeFor(key, t.ContentType)
		t.StoredAt = sent
		s.store(key, t, epoch)
		s.stats.misses.Add(1)
		return t, srcOrigin, nil
	case cached != nil && errors.Is(err, origin.ErrNotModified):
		// Both tiers get the renewed copy, so a tile that later leaves
		// memory is not revalidated again when read back from disk.
		renewed := *cached // its prepared answer stays right: same bytes, same version
		renewed.StoredAt = sent
		s.store(key, &renewed, epoch)
		s.stats.revalidated.Add(1)
		return &renewed, srcRevalidated, nil
	case errors.Is(err, origin.ErrNotFound):
		if cached == nil && s.negativeTTL > 0 {
			// Remember the miss (sparse tilesets ask for missing tiles all
			// the time); an upload's purge forgets it.
			s.guard.insert(key, epoch, func() { s.mem.Set(key, &tile.Tile{Missing: true, StoredAt: sent}) })
		}
		if cached != nil {
			// The tile was deleted at the origin: forget every copy of it.
			s.guard.purge(key, func() {
				s.mem.Delete(key)
				if s.disk != nil {
					s.disk.Delete(key)
				}
			})
		}
		return nil, 0, err
	case errors.Is(err, origin.ErrTooLarge):
		s.stats.originErrors.Add(1)
		return nil, 0, err
	default:
		s.stats.originErrors.Add(1)
		if fctx.Err() == nil || !errors.Is(err, context.Canceled) {
			// S3 failed or timed out (not: every caller gave up): for a
			// while, stale copies go out without waiting for it again.
			s.downUntil.Store(s.now().Add(s.cfg.OriginFailureWindow).UnixNano())
		}
		return nil, 0, err
	}
}

// store puts a fetched tile into both tiers unless a purge overtook the fetch.
// A disk that cannot write is logged and skipped: memory and origin still serve.
func (s *Server) store(key string, t *tile.Tile, epoch uint64) {
	s.prepare(key, t)
	ok := s.guard.insert(key, epoch, func() {
		s.mem.Set(key, t)
		if s.disk == nil {
			return
		}
		if err := s.disk.Put(key, t); err != nil {
			s.stats.diskWriteErrors.Add(1)
			s.log.Warn("disk tier write failed; serving from memory and origin", "key", key, "err", err)
		}
	})
	if !ok {
		s.stats.dropped.Add(1)
	}
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || origin.IsTimeout(err)
}
