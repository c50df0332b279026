// Package follower keeps one function instance in step with the purge
// journal (package journal): it reads the journal's head and applies each
// new entry's prefixes to the instance's tiers. Lambda freezes idle
// instances, so there is no background loop: checks ride on requests.
//
// It promises:
//
//   - At most one check per interval, and a check is one GET of the head (a
//     304 when nothing changed), whatever the backlog.
//   - It fails closed: a copy older than the last good check by more than
//     Interval+Timeout is not trusted (Follower.Trusted), so it is
//     revalidated with S3.
//   - Its position persists with the disk tier, saved only once every purge
//     up to it has reached the disk for good, so a process restarted over a
//     kept disk tier applies what it missed before the disk answers.
//   - A journal it cannot follow from its position (wiped, a new id, behind
//     it, past its window, another entry at a number it applied) drops both
//     tiers rather than trust what it cannot read.
//   - Over tiers that start empty its first check need not hold up init
//     (Follower.Defer), and no purge recorded since it began is missed.
package follower

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

// Target is what a follower purges: the tiers of one function instance
// (*tiers.Engine is one).
type Target interface {
	// Purge removes every tile under prefix ("" is everything) from the
	// tiers and reports how many keys it dropped, which the follower passes
	// to its Observer. An error means a copy may outlive a restart (a file
	// that could not be unlinked): the follower then does not record the
	// purge as applied on disk, so the next process applies it again.
	Purge(prefix string) (keys int, err error)
}

// Observer is told what a Follower's checks do; *obs.TileMetrics is one.
// Its methods are called with the follower's lock held, so they must be
// quick and must not call back into the Follower.
type Observer interface {
	// JournalCheck is called after every check of the journal (at Start,
	// MaybeSync and Sync): how long it took, and its error (nil for a
	// check that found nothing new, a 304, as for one that applied
	// entries).
	JournalCheck(elapsed time.Duration, err error)
	// PurgesApplied is called when a check applied journal entries to the
	// tiers: how many entries, the keys they dropped (as the Target
	// counted them), and the age of the newest entry applied (the
	// journal lag: the time since the entry was recorded). A check that
	// dropped both tiers for a journal it could not follow counts the
	// entries it covered.
	PurgesApplied(purges, keysDropped int, newestAge time.Duration)
}

// Config tunes a Follower.
type Config struct {
	// Interval is the least time between two checks (SYNC_INTERVAL); default 1s.
	Interval time.Duration
	// Timeout bounds one check (SYNC_TIMEOUT); default 1s. A copy is trusted
	// for Interval+Timeout after the last check that succeeded (or after it
	// was fetched, if later); past that it is revalidated with S3.
	Timeout time.Duration
	// Position keeps the follower's place in the journal with the disk
	// tier, so a process restarted over a kept disk tier applies what it
	// missed before the disk answers. Nil for an instance without a disk
	// tier (its tiers start empty).
	Position journal.PositionStore
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Observer, if set, is told of every check and of the purges applied.
	Observer Observer
}

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultTimeout  = time.Second
)

// ClockMargin is how far behind this instance's clock a journal writer's
// may run: the first check of a deferred follower (Defer) applies every
// entry recorded since it began, less this margin, as entries carry the
// writer's clock.
const ClockMargin = time.Minute

// Follower keeps one function instance in step with the journal: checks
// ride on requests through MaybeSync, and Trusted tells the server which
// cached copies it may answer with.
//
// A Follower is safe for concurrent use.
type Follower struct {
	j   *journal.Journal
	t   Target
	cfg Config
	log *slog.Logger

	next    atomic.Int64  // unix ns at which a check is due
	took    atomic.Int64  // ns the last successful check took (on the follower's clock)
	lastOK  atomic.Int64  // unix ns at which the last successful check started; 0: none yet
	vouched atomic.Int64  // unix ns up to which every purge recorded is applied: lastOK, or Defer's start before any check succeeded
	applied atomic.Uint64 // mirrors pos.Seq for Stats
	failing atomic.Bool   // the last check failed
	// pending is set by Defer until a check succeeds; looked records that
	// a lookup asked Trusted meanwhile (so a fill may have begun).
	pending, looked atomic.Bool

	checks, unchanged, failures, purgeAlls atomic.Uint64

	mu         sync.Mutex       // guards the fields below and serialises checks
	pos        journal.Position // the last entry applied to the tiers
	known      bool             // the tiers hold nothing older than pos (false: a kept disk tier of unknown position)
	etag       string           // the head's version when last read
	diskBehind bool             // a purge did not fully reach the disk: pos is not saved until a purge of everything does
	fresh      bool             // during Start without a disk tier, or StartEmpty: the tiers are empty, nothing to apply
	deferred   bool             // begun by Defer: the first good check applies what was recorded since began
	began      time.Time        // when Defer was called
}

// New returns a follower of j that purges t.
func New(j *journal.Journal, t Target, cfg Config, log *slog.Logger) *Follower {
	cfg.Interval = defaults.Positive(cfg.Interval, DefaultInterval)
	cfg.Timeout = defaults.Positive(cfg.Timeout, DefaultTimeout)
	cfg.Now = defaults.Clock(cfg.Now)
	return &Follower{j: j, t: t, cfg: cfg, log: defaults.Logger(log), known: cfg.Position == nil}
}

// Start reads the journal at cold start, before the disk tier is trusted
// or staging begins: with a kept disk tier it applies every purge since the
// position saved with it (or drops the disk tier when that position is
// unknown, out of the journal's window, or names an entry the journal no
// longer holds at that number). Call it before the tiers serve.
// If it fails, copies are trusted only as Trusted allows until a check
// succeeds, and that check applies what was missed.
func (f *Follower) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cfg.Position != nil {
		pos, ok, err := f.cfg.Position.Load()
		switch {
		case err != nil:
			f.log.Warn("purge follower: saved journal position unreadable; the disk tier will be dropped", "err", err)
		case ok:
			f.pos, f.known = pos, true
			f.applied.Store(pos.Seq)
		}
	}
	return f.firstCheck(ctx, f.cfg.Position == nil)
}

// StartEmpty is Start over tiers that hold nothing yet, a disk tier among
// them (empty, with no saved position), for an init that must still read
// the journal before it goes on (to stage tiles into the disk tier): no
// purge recorded so far can concern them, so the head it reads becomes the
// position, saved with the disk tier, as at a Start without a disk tier;
// nothing is dropped. Start would find the position unknown and drop both
// tiers, empty as they are. If the read fails, the first good check drops
// both tiers, as after a failed Start over a kept disk tier: what init put
// in them meanwhile may be older than a purge recorded since.
func (f *Follower) StartEmpty(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.firstCheck(ctx, true)
}

// firstCheck is a start's read of the journal; fresh says the tiers hold
// nothing, so the head becomes the position with nothing applied. f.mu is
// held.
func (f *Follower) firstCheck(ctx context.Context, fresh bool) error {
	f.fresh = fresh
	defer func() { f.fresh = false }()
	return f.checkNow(ctx, f.cfg.Now())
}

// Defer begins a follower whose tiers hold nothing yet (no disk tier, or an
// empty one with no saved position, and no staging) without reading the
// journal: call it instead of Start, so that init does not wait for S3, and
// start the first check beside init (tiers.Engine.CheckBeside); it is due at
// once. Until a check succeeds, copies are vouched for as after a check
// that began at now: every one was fetched since.
//
// When no lookup began before the first good check read the head, that
// check takes the head as its position, as Start does over empty tiers.
// Otherwise it cannot: a fill whose GET began before the read may hold
// bytes that an entry at or below the head purges (the object replaced
// after the GET began, the entry recorded before the head was read), and
// nothing would ever apply that entry. So it applies every entry recorded
// since now − ClockMargin: such an entry was recorded after the fill's GET
// began, so after now. When the head no longer holds every entry since then
// (a busy journal's window), it drops both tiers instead. Either way a fill
// still under way leaves its bytes in no tier (the engine's purge rule).
// The cost is refilling what the tiers took in before the first check
// under those entries' prefixes.
func (f *Follower) Defer(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.known, f.deferred, f.began = true, true, now
	f.vouched.Store(now.UnixNano())
	f.next.Store(now.UnixNano())
	f.pending.Store(true)
}

// MaybeSync checks the journal if a check is soon due (Soon) and no other
// caller is checking. It never fails the request: a failed check is logged,
// and Trusted stops vouching for cached copies once the last good check is
// too old. It returns within Timeout.
func (f *Follower) MaybeSync(ctx context.Context) {
	if now := f.cfg.Now(); !f.Soon(now) {
		if !f.checkedRecently(now) {
			// A check is under way (it moved the due time when it began)
			// and nothing is vouched for until it ends: wait for it, at
			// most Timeout, rather than send cached copies to S3.
			f.mu.Lock()
			//lint:ignore SA2001 waiting for the check that holds the lock is the point
			f.mu.Unlock()
		}
		return
	}
	if !f.mu.TryLock() {
		// Another caller is checking. If the last good check is too old to
		// vouch for anything, wait for that check (at most Timeout) rather
		// than send every cached tile to S3 for revalidation.
		if !f.checkedRecently(f.cfg.Now()) {
			f.mu.Lock()
			//lint:ignore SA2001 the lock is taken only to wait for the check under way to end
			f.mu.Unlock()
		}
		return
	}
	defer f.mu.Unlock()
	now := f.cfg.Now()
	if !f.Soon(now) {
		return // another caller just checked
	}
	// The check serves the instance, not this request: the request going
	// away must not cut it short, only the Timeout does.
	if err := f.checkNow(context.WithoutCancel(ctx), now); err != nil {
		f.log.Warn("purge journal check failed; cached copies older than the last good check are revalidated", "applied", f.applied.Load(), "err", err)
	}
}

// Due reports whether a check is due at now: Interval has passed since the
// last one began. It costs an atomic load, so a handler can ask on every
// request with the time it already read.
func (f *Follower) Due(now time.Time) bool { return now.UnixNano() >= f.next.Load() }

// Soon reports whether MaybeSync would check at now, unless another caller
// is checking: when a check is due, or within its lead of being due. The
// lead is four times what the last successful check took, at most half the
// Interval, so a check started beside an answer is usually done before one
// is due (at the price of checking that much more often: about 9% at 20 ms a
// check and a 1 s Interval). It costs two atomic loads.
func (f *Follower) Soon(now time.Time) bool {
	lead := min(4*f.took.Load(), int64(f.cfg.Interval/2))
	return now.UnixNano() >= f.next.Load()-lead
}

// Sync checks the journal now, waiting for a check under way to finish. ctx
// bounds it, and so does Timeout.
func (f *Follower) Sync(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkNow(ctx, f.cfg.Now())
}

// Trusted reports whether a cached copy fetched from S3 at storedAt may be
// served at now without asking S3: whether every purge recorded up to
// now−(Interval+Timeout) is known to have been applied to it. That holds
// when the last good check started after that time, or when the copy was
// fetched after it. It costs a few atomic loads.
func (f *Follower) Trusted(storedAt, now time.Time) bool {
	if f.pending.Load() && !f.looked.Load() {
		f.looked.Store(true) // every lookup asks before it fills (see Defer)
	}
	return f.checkedRecently(now) || storedAt.UnixNano() > f.horizon(now)
}

func (f *Follower) horizon(now time.Time) int64 {
	return now.UnixNano() - int64(f.cfg.Interval+f.cfg.Timeout)
}

// checkedRecently reports whether the last good check is recent enough to vouch
// for every cached copy.
func (f *Follower) checkedRecently(now time.Time) bool {
	ok := f.vouched.Load()
	return ok != 0 && ok > f.horizon(now)
}

// Unreachable reports whether the last check failed (an S3 error, a
// timeout, or a head that could not be read): with S3 failing too, the
// tiers answer what they hold stale (tiers.Config.StrictOutage). It costs
// an atomic load.
func (f *Follower) Unreachable() bool { return f.failing.Load() }

// Applied is the sequence number of the last entry applied.
func (f *Follower) Applied() uint64 { return f.applied.Load() }

// Stats counts what a follower did.
type Stats struct {
	Applied   uint64    `json:"applied"`    // last entry applied
	Checks    uint64    `json:"checks"`     // checks made
	Unchanged uint64    `json:"unchanged"`  // checks answered 304
	Failures  uint64    `json:"failures"`   // checks that failed
	PurgeAlls uint64    `json:"purge_alls"` // times it dropped everything
	LastOK    time.Time `json:"last_ok"`    // start of the last successful check
}

// Stats returns the follower's counters.
func (f *Follower) Stats() Stats {
	s := Stats{
		Applied:   f.applied.Load(),
		Checks:    f.checks.Load(),
		Unchanged: f.unchanged.Load(),
		Failures:  f.failures.Load(),
		PurgeAlls: f.purgeAlls.Load(),
	}
	if ns := f.lastOK.Load(); ns != 0 {
		s.LastOK = time.Unix(0, ns).UTC()
	}
	return s
}

// checkNow begins a check at now: the next one is due Interval later, and
// Timeout bounds this one. f.mu is held.
func (f *Follower) checkNow(ctx context.Context, now time.Time) error {
	f.next.Store(now.Add(f.cfg.Interval).UnixNano())
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	return f.check(ctx, now)
}

// check reads the head and applies it. start is when the check began: a
// success vouches for every purge recorded before it. f.mu is held.
func (f *Follower) check(ctx context.Context, start time.Time) (err error) {
	if f.cfg.Observer != nil {
		defer func() { f.cfg.Observer.JournalCheck(f.cfg.Now().Sub(start), err) }()
	}
	f.checks.Add(1)
	snap, err := f.j.Read(ctx, f.etag)
	switch {
	case errors.Is(err, journal.ErrUnchanged):
		f.unchanged.Add(1)
	case err != nil:
		f.failures.Add(1)
		f.failing.Store(true)
		return err
	default:
		f.applySnapshot(snap)
		f.etag = snap.ETag
	}
	f.lastOK.Store(start.UnixNano())
	f.vouched.Store(start.UnixNano())
	f.took.Store(int64(max(0, f.cfg.Now().Sub(start))))
	f.failing.Store(false)
	return nil
}
