// Package tiers is the tile engine: a key is answered from the memory tier,
// then the disk tier, then the origin, and a miss fills the tiers above the
// one that answered. It knows nothing of HTTP; shared/tileserver is the HTTP
// contract on top of it.
//
// What it promises:
//
//   - Concurrent misses of one key make one origin request, and at most
//     MaxOriginFetches origin requests run at once.
//   - A fill that began before a purge of its key was applied leaves its
//     bytes in no tier, and no lookup that starts after the purge joins it.
//   - A purge never holds up lookups for a disk write: fills write their
//     files outside the lock a purge takes, the purge detaches its prefix
//     from the disk tier after releasing it, and a purge that lands first
//     wins over a fill's write.
//   - With a journal follower (Engine.Follow), a cached copy is answered only
//     while the follower vouches for it (fail closed), and the follower's
//     check runs beside the lookup (see Engine.Get).
//   - When the origin fails, a copy within Config.StaleIfError of its
//     revalidation age is answered stale; for OriginFailureWindow after a
//     failure, such copies go out at once and one revalidation runs in the
//     background (Drain waits for those).
//   - In an outage, when neither the journal nor S3 answers (the follower's
//     last check failed and an origin fetch failed), copies the journal no
//     longer vouches for are answered stale too, within the same
//     StaleIfError, and without waiting for either while OriginFailureWindow
//     is open; Config.StrictOutage turns that off. A copy a purge removed is
//     in no tier, and one S3 answered "not found" for is removed, so neither
//     is ever answered stale.
//   - A 404 from the origin is remembered for Config.NegativeTTL (misses
//     whose requests left within 100 ms of each other share one remembered
//     404, believed from the first of them: never longer than their own).
//
// An Engine is safe for concurrent use.
package tiers

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/flight"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/guard"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Origin is where tiles come from on a miss: S3, through shared/origin.
type Origin interface {
	// Get fetches key; with ifNoneMatch set, tile.ErrNotModified means the
	// cached copy is still current. tile.ErrNotFound means no such tile.
	Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error)
}

// Syncer brings an instance up to date with the purge journal; it runs on the
// request path (Lambda freezes idle instances, so nothing runs between
// requests) and must return quickly whatever happens. The journal follower
// (follower.Follower) is one.
type Syncer interface {
	// Due reports, cheaply, whether a check is due at now: the bound after
	// an upload asks for one before the answer.
	Due(now time.Time) bool
	// Soon reports, cheaply, whether MaybeSync would check at now: when a
	// check is due, and ahead of that by about the time a check takes, so
	// that one started beside an answer is done before it is due.
	Soon(now time.Time) bool
	// MaybeSync checks the journal if a check is soon due (Soon) and
	// applies what it finds, through the engine's Purge.
	MaybeSync(ctx context.Context)
	// Trusted reports, cheaply, whether a copy fetched from S3 at storedAt
	// may be answered with at now: false when the journal could not be read
	// for long enough that a purge of it may have been missed. Such a copy
	// is revalidated with S3 instead (fail closed).
	Trusted(storedAt, now time.Time) bool
	// Unreachable reports, cheaply, whether the last check of the journal
	// failed or timed out (the journal does not answer).
	Unreachable() bool
}

// Metrics records the engine's origin fetches; *obs.TileMetrics is one.
type Metrics interface {
	OriginFetch(elapsed time.Duration, err error)
}

// Defaults of Config.
const (
	DefaultRevalidateAfter     = time.Hour
	DefaultOriginTimeout       = 10 * time.Second
	DefaultMaxOriginFetches    = 64
	DefaultOriginFailureWindow = 5 * time.Second
)

// Config is the engine's behaviour.
type Config struct {
	RevalidateAfter     time.Duration // age after which a cached copy is revalidated; default DefaultRevalidateAfter
	OriginTimeout       time.Duration // deadline of one origin fetch; default DefaultOriginTimeout
	MaxOriginFetches    int           // origin fetches at once; default DefaultMaxOriginFetches
	OriginFailureWindow time.Duration // after an origin failure, how long stale copies go out without waiting; default DefaultOriginFailureWindow, negative off
	// StaleIfError is how long past RevalidateAfter a copy may still be
	// answered when the origin fails; 0: never.
	StaleIfError time.Duration
	// NegativeTTL is how long a 404 is remembered in the memory tier; 0:
	// not remembered.
	NegativeTTL time.Duration
	// StrictOutage keeps copies the journal no longer vouches for from
	// being answered stale even when S3 fails too: an S3 outage is then an
	// outage of every tile the journal cannot vouch for.
	StrictOutage bool
	Now          func() time.Time // default time.Now
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	return errors.Join(
		defaults.NotNegative("tiers", "RevalidateAfter", c.RevalidateAfter),
		defaults.NotNegative("tiers", "OriginTimeout", c.OriginTimeout),
		defaults.NotNegative("tiers", "StaleIfError", c.StaleIfError),
		defaults.NotNegative("tiers", "NegativeTTL", c.NegativeTTL),
		defaults.NotNegative("tiers", "MaxOriginFetches", c.MaxOriginFetches))
}

// Deps are the parts the engine composes. Memory and Origin are required;
// the rest may be nil.
type Deps struct {
	Memory  *memory.Cache
	Disk    *disk.Store // nil: no disk tier
	Origin  Origin
	Metrics Metrics // nil records nothing
	Logger  *slog.Logger
	// Prepare, when set, is given every tile before it enters the memory
	// tier, so that what it keeps in Tile.Prepared is charged with the tile
	// and a hit formats nothing. A hook rather than preparing lazily on the
	// first hit: a tile prepared after it entered the tier would hold heap
	// the tier's bound never counted, and a hit stays free of allocations.
	Prepare func(key string, t *tile.Tile)
}

// Source is the tier that answered.
type Source uint8

// The tiers a Result comes from.
const (
	FromMemory  Source = iota + 1 // the memory tier
	FromDisk                      // the disk tier
	FromOrigin                    // the origin: a miss
	Revalidated                   // a cached copy the origin confirmed
	Stale                         // a cached copy answered because the origin failed
)

func (s Source) String() string {
	switch s {
	case FromMemory:
		return "memory"
	case FromDisk:
		return "disk"
	case FromOrigin:
		return "origin"
	case Revalidated:
		return "revalidated"
	case Stale:
		return "stale"
	}
	return "none"
}

// ErrPanic marks a fetch that panicked.
var ErrPanic = flight.ErrPanic

// Engine is the tier engine.
type Engine struct {
	cfg     Config
	mem     *memory.Cache
	disk    *disk.Store
	origin  Origin
	metrics Metrics
	log     *slog.Logger
	now     func() time.Time
	prepare func(key string, t *tile.Tile)
	purged  []func(prefix string) // OnPurge's
	sy      Syncer                // Follow's; nil: every copy is trusted
	// negative is the remembered 404 that misses share (see remembered).
	negative atomic.Pointer[tile.Tile]

	flight     flight.Group[fill]
	derived    flight.Group[*tile.Tile] // Derived's
	guard      guard.Guard
	slots      chan struct{}  // one per origin fetch in flight
	downUntil  atomic.Int64   // unix ns until which the origin counts as down
	inOutage   atomic.Bool    // an outage episode is under way (logged once when it begins)
	checking   atomic.Bool    // a journal check started by Get runs
	background sync.WaitGroup // revalidations run for lookups answered stale, and journal checks run beside answers
	stats      counters
	pending    pendingDisk // purges whose disk detach is still to run

	// diskWriteHook, when set (by tests), runs before a fill writes its
	// disk file.
	diskWriteHook func(key string)
	// purgeHook, when set (by tests and benchmarks), runs inside a purge's
	// guard as it takes effect (held true) and as it ends (held false).
	purgeHook func(held bool)
	// detachHook, when set (by tests), runs after a purge's guard, before
	// its disk detach.
	detachHook func()
}

// counters are the engine's statistics.
type counters struct {
	memoryHits, diskHits, misses, revalidated, stale atomic.Int64
	outageStale                                      atomic.Int64 // stale answers the journal no longer vouched for
	negativeHits                                     atomic.Int64 // 404s answered from a remembered miss
	originFetches, originErrors, merged              atomic.Int64
	dropped                                          atomic.Int64 // fills not inserted because a purge overtook them
	diskWriteErrors                                  atomic.Int64
	inFlight, inFlightPeak                           atomic.Int64 // origin fetches running now, and the most at once
}

// New builds the engine.
func New(cfg Config, d Deps) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Memory == nil || d.Origin == nil {
		return nil, errors.New("tiers: Memory and Origin are required")
	}
	cfg.RevalidateAfter = cmp.Or(cfg.RevalidateAfter, DefaultRevalidateAfter)
	cfg.OriginTimeout = cmp.Or(cfg.OriginTimeout, DefaultOriginTimeout)
	cfg.MaxOriginFetches = cmp.Or(cfg.MaxOriginFetches, DefaultMaxOriginFetches)
	cfg.OriginFailureWindow = cmp.Or(cfg.OriginFailureWindow, DefaultOriginFailureWindow) // negative: off
	now := defaults.Clock(cfg.Now)
	log := defaults.Logger(d.Logger)
	e := &Engine{
		cfg: cfg, mem: d.Memory, disk: d.Disk, origin: d.Origin, metrics: d.Metrics,
		log: log, now: now, prepare: d.Prepare,
		slots: make(chan struct{}, cfg.MaxOriginFetches),
	}
	return e, nil
}

// Follow makes sy the engine's journal follower: Get consults it, and it
// purges through the engine (follower.Follower is one). Without one, every
// cached copy is trusted. The follower is built over the engine, so it is
// set here, once, before the first lookup.
func (e *Engine) Follow(sy Syncer) { e.sy = sy }

// OnPurge runs fn inside every purge of prefix, while no fill inserts: for
// what a caller derived from the tiles it covers (rendered documents, an
// opened archive). Register before the first lookup.
func (e *Engine) OnPurge(fn func(prefix string)) { e.purged = append(e.purged, fn) }

// Result is what Get found.
type Result struct {
	Tile   *tile.Tile
	Source Source
	// Stream, when set, is the body of a tile too big for the memory tier,
	// read from its disk file; Tile is its metadata (no Body). The caller
	// reads and closes it.
	Stream *disk.Body
	// Cost is what this lookup's origin fetch cost: the S3 requests and
	// bytes of its answer (opening an archive is not counted) and its pixel
	// work; zero for a lookup a tier answered or that joined another's fetch.
	Cost tile.FetchCost
	// Lease keeps Tile's body from being reused while it is read: a memory
	// hit of a body kept off the heap (memory.Config.OffHeap) is those
	// bytes themselves. Release it once the answer is written.
	Lease memory.Lease
}

// Release lets the memory tier reuse the bytes of r.Tile; r.Tile's body
// must not be read after. Releasing again does nothing.
func (r *Result) Release() { r.Lease.Release() }

// Get answers key at now: from memory, disk or the origin, filling the
// tiers on the way. The caller releases the Result once it has written the
// answer (Result.Release). tile.ErrNotFound means no such tile (Source says
// whether a remembered 404 answered); other errors are the origin's, a
// timeout, or one wrapping ErrPanic.
//
// With a follower, the journal check is kept off the answer while the
// follower vouches for every cached copy (the last good check began less
// than Interval + Timeout ago): a request that finds a check soon due
// (Syncer.Soon, ahead of the due time by a few of the journal's round
// trips) or due starts it beside the answer and does not wait for it, so
// no such request pays the journal's round trip. Under steady traffic the
// check is done before it is due, and a purge reaches the answers within
// Interval and the check's duration; with no request in between, within
// Interval + Timeout, the bound. When the follower vouches for no copy at
// all, Get waits for the check first (fail closed), unless the last check
// failed (the copy is then revalidated with S3 while the next check runs
// beside it) or neither the journal nor S3 answered moments ago
// (Config.StrictOutage).
//
// On Lambda the process may be frozen as soon as the invocation returns,
// with a check started beside it still in flight. Correctness never
// depends on it ending: a check vouches only from the moment it began and
// only once it succeeded, so a frozen one vouches for nothing new; after
// the thaw its deadline has passed and it ends at once, and the next
// request is either still vouched for (and starts a check beside it) or
// past the window (and waits). Drain waits for checks still running.
func (e *Engine) Get(ctx context.Context, key string, now time.Time) (Result, error) {
	if sy := e.sy; sy != nil {
		switch {
		case sy.Trusted(time.Time{}, now):
			// Every cached copy is still vouched for: a check soon due, or
			// due, runs beside the answer and never delays it.
			if sy.Soon(now) {
				e.syncDetached(ctx)
			}
		case e.outage():
			// Neither the journal nor S3 answered moments ago: what the
			// tiers hold goes out stale at once, and the check runs beside
			// it for the requests that follow.
			e.syncDetached(ctx)
		case sy.Unreachable():
			// The last check failed: waiting for the next would cost up to
			// its whole timeout and most likely vouch for nothing. It runs
			// beside the request instead, and every copy the follower no
			// longer vouches for is revalidated with S3 (fail closed all
			// the same), which S3's answer makes as fresh as a check would.
			e.syncDetached(ctx)
		default:
			sy.MaybeSync(ctx)
			now = e.now() // the check took time: judge copies after it
		}
	}
	var r Result
	var err error
	r.Tile, r.Source, err = e.lookup(ctx, key, now, &r)
	return r, err
}

// syncDetached runs the follower's check without making the caller wait,
// at most one at a time; Drain waits for it.
func (e *Engine) syncDetached(ctx context.Context) {
	if !e.checking.CompareAndSwap(false, true) {
		return
	}
	ctx = context.WithoutCancel(ctx)
	e.background.Go(func() {
		defer e.checking.Store(false)
		e.sy.MaybeSync(ctx)
	})
}

// CheckBeside starts the follower's check without waiting for it (at most
// one at a time; Drain waits for it): a follower begun without reading the
// journal (follower.Follower.Defer) reads it beside init. Without a follower
// it does nothing.
func (e *Engine) CheckBeside(ctx context.Context) {
	if e.sy != nil {
		e.syncDetached(ctx)
	}
}

// Check runs the follower's check for a request that reads no tile: when
// the follower vouches for no cached copy, and, with ifDue, when a check is
// due. Without a follower it does nothing.
func (e *Engine) Check(ctx context.Context, now time.Time, ifDue bool) {
	if e.sy != nil && (!e.sy.Trusted(time.Time{}, now) || ifDue && e.sy.Due(now)) {
		e.sy.MaybeSync(ctx)
	}
}

// Purge removes every tile under prefix ("" is everything) from both tiers,
// and keeps fills under way from putting them back or handing them to
// lookups that start after it. It reports how many entries left the tiers;
// its error reports disk files that could not be unlinked, which would come
// back after a restart. It is what the journal follower drives
// (follower.Target).
func (e *Engine) Purge(prefix string) (int, error) {
	memN, diskN, err := e.PurgeTiers(prefix)
	e.log.Debug("purged", "prefix", prefix, "memory_entries", memN, "disk_entries", diskN)
	return memN + diskN, err
}

// PurgeTiers is Purge, counting each tier's entries apart.
//
// Under the guard it only empties the memory tier and records the prefix as
// pending on disk; the disk tier's index is detached after the guard, so
// new lookups never wait for the disk's lock (which a fill's rename holds,
// and a rename can wait for other files' fsyncs). Until the detach is done,
// lookups that start after the purge do not read the disk for keys under
// the prefix (pendingDisk), and a fill's disk write since then is not
// committed or is removed by the detach (disk.PutSince).
func (e *Engine) PurgeTiers(prefix string) (memN, diskN int, err error) {
	e.guard.Purge(prefix, func() {
		if e.purgeHook != nil {
			e.purgeHook(true)
			defer e.purgeHook(false)
		}
		memN, _ = e.mem.DeletePrefix(prefix)
		if e.disk != nil {
			e.pending.add(prefix)
		}
		for _, fn := range e.purged {
			fn(prefix)
		}
	})
	if e.disk == nil {
		return memN, 0, nil
	}
	if e.detachHook != nil {
		e.detachHook()
	}
	detached := e.disk.Detach(prefix)
	e.pending.remove(prefix)
	// The files are unlinked last: a purge of many files must not hold up
	// fills and disk hits of other keys while it unlinks.
	return memN, detached.Entries, detached.Unlink()
}

// pendingDisk is the prefixes purged from memory whose disk detach has not
// run yet.
type pendingDisk struct {
	n        atomic.Int64 // len(prefixes), read without the lock on every disk lookup
	mu       sync.Mutex   // guards prefixes
	prefixes []string     // a multiset: concurrent purges may name one prefix
}

func (p *pendingDisk) add(prefix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefixes = append(p.prefixes, prefix)
	p.n.Store(int64(len(p.prefixes)))
}

func (p *pendingDisk) remove(prefix string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.prefixes, prefix); i >= 0 {
		p.prefixes = slices.Delete(p.prefixes, i, i+1)
	}
	p.n.Store(int64(len(p.prefixes)))
}

// covers reports whether a pending detach covers key.
func (p *pendingDisk) covers(key string) bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pre := range p.prefixes {
		if strings.HasPrefix(key, pre) {
			return true
		}
	}
	return false
}

// Drain waits for the revalidations started in the background for lookups
// answered stale (each bounded by OriginTimeout) and for journal checks
// running beside answers (each bounded by the follower's timeout); call it
// at shutdown.
func (e *Engine) Drain() { e.background.Wait() }

// Stats are the engine's counters and its tiers' statistics.
type Stats struct {
	MemoryHits, DiskHits, Misses, Revalidated, Stale, NegativeHits int64
	// OutageStale counts the Stale answers given in an outage: copies the
	// journal no longer vouched for, answered because S3 failed too.
	OutageStale                               int64
	OriginFetches, OriginErrors, MergedMisses int64
	DroppedFills, DiskWriteErrors             int64
	// OriginInFlight is the origin fetches running now; OriginInFlightPeak
	// the most at once (at most MaxOriginFetches).
	OriginInFlight, OriginInFlightPeak int64

	Memory memory.Stats
	Disk   *disk.Stats // nil without a disk tier
}

// Stats returns the counters.
func (e *Engine) Stats() Stats {
	c := &e.stats
	st := Stats{
		MemoryHits: c.memoryHits.Load(), DiskHits: c.diskHits.Load(), Misses: c.misses.Load(),
		Revalidated: c.revalidated.Load(), Stale: c.stale.Load(), NegativeHits: c.negativeHits.Load(), OutageStale: c.outageStale.Load(),
		OriginFetches: c.originFetches.Load(), OriginErrors: c.originErrors.Load(), MergedMisses: c.merged.Load(),
		DroppedFills: c.dropped.Load(), DiskWriteErrors: c.diskWriteErrors.Load(),
		OriginInFlight: c.inFlight.Load(), OriginInFlightPeak: c.inFlightPeak.Load(),
		Memory: e.mem.Stats(),
	}
	if e.disk != nil {
		ds := e.disk.Stats()
		st.Disk = &ds
	}
	return st
}
