package purge

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Target is what a follower purges: the tiers of one function instance.
type Target interface {
	PurgePrefix(prefix string)
	PurgeAll()
}

// FollowerConfig tunes a Follower.
type FollowerConfig struct {
	// Interval is the least time between two checks (SYNC_INTERVAL); default 1s.
	Interval time.Duration
	// Timeout bounds one check made on the request path; default 250ms.
	Timeout time.Duration
	// Retention is how far behind the head the follower may be and still read
	// what it missed; further behind it drops everything. Default: the
	// journal's Retention.
	Retention uint64
	// MaxSilence: after this long without a successful check (a frozen or
	// failing instance), the next check does not trust what it would read
	// and drops everything if anything was appended meanwhile. Default 10m.
	MaxSilence time.Duration
	// VerifyEvery is how often a check also reads the head pointer, which
	// catches entries that are gone (expired) and a journal that was reset;
	// the checks between cost one GET. Default 1m.
	VerifyEvery time.Duration
	// MaxEntries is how many entries one read takes; default 256.
	MaxEntries int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Defaults of FollowerConfig.
const (
	DefaultInterval    = time.Second
	DefaultTimeout     = 250 * time.Millisecond
	DefaultMaxSilence  = 10 * time.Minute
	DefaultVerifyEvery = time.Minute
)

// Follower keeps one function instance in step with the journal. Lambda
// freezes idle instances, so there is no background loop: checks ride on
// requests through MaybeSync, at most one per Interval, made by exactly one
// caller while the others go on without waiting.
//
// A Follower is safe for concurrent use.
type Follower struct {
	j   *Journal
	t   Target
	cfg FollowerConfig
	log *slog.Logger

	next    atomic.Int64  // unix ns before which MaybeSync does not check
	applied atomic.Uint64 // mirrors state.applied for Applied

	checks, failures, purgeAlls atomic.Uint64

	mu         sync.Mutex // guards the fields below and serialises checks
	started    bool       // the follower knows its place in the journal
	lastOK     time.Time  // last successful check
	lastVerify time.Time  // last check that read the head pointer
}

// NewFollower returns a follower of j that purges t.
func NewFollower(j *Journal, t Target, cfg FollowerConfig, log *slog.Logger) *Follower {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Retention == 0 {
		cfg.Retention = j.Retention()
	}
	if cfg.MaxSilence <= 0 {
		cfg.MaxSilence = DefaultMaxSilence
	}
	if cfg.VerifyEvery <= 0 {
		cfg.VerifyEvery = DefaultVerifyEvery
	}
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = defaultReadMax
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Follower{j: j, t: t, cfg: cfg, log: log}
}

// Start learns the journal's head at cold start and follows from there:
// nothing before it needs purging because the tiers are still empty. Call it
// before the tiers are filled. If it fails, the first check that succeeds
// later drops everything, since the tiers may by then hold bytes that an
// entry it never saw has purged.
func (f *Follower) Start(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.cfg.Now()
	f.next.Store(now.Add(f.cfg.Interval).UnixNano())
	head, err := f.j.Head(ctx)
	if err != nil {
		return err
	}
	f.started = true
	f.setApplied(head)
	f.lastOK, f.lastVerify = now, now
	f.log.Debug("purge follower started", "head", head)
	return nil
}

// MaybeSync checks the journal if Interval has passed since the last check
// and no other caller is checking. It never fails the request: a failed
// check is logged and retried an Interval later. It returns within Timeout.
func (f *Follower) MaybeSync(ctx context.Context) {
	if !f.Due() {
		return
	}
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	now := f.cfg.Now()
	if now.UnixNano() < f.next.Load() {
		return // another caller just checked
	}
	f.next.Store(now.Add(f.cfg.Interval).UnixNano())
	// The check serves the instance, not this request: the request going
	// away must not cut it short, only the Timeout does.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
	defer cancel()
	if err := f.check(cctx, now); err != nil {
		f.log.Warn("purge journal check failed", "applied", f.applied.Load(), "err", err)
	}
}

// Due reports whether a check is due: whether MaybeSync would check now,
// unless another caller is checking. It costs a clock read and an atomic
// load, so a handler can ask on every request.
func (f *Follower) Due() bool { return f.cfg.Now().UnixNano() >= f.next.Load() }

// Sync checks the journal now, waiting for a check under way to finish. ctx
// bounds it (no Timeout is added).
func (f *Follower) Sync(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.cfg.Now()
	f.next.Store(now.Add(f.cfg.Interval).UnixNano())
	return f.check(ctx, now)
}

// Applied is the sequence number of the last entry applied.
func (f *Follower) Applied() uint64 { return f.applied.Load() }

// FollowerStats counts what a follower did.
type FollowerStats struct {
	Applied   uint64 // last entry applied
	Checks    uint64 // checks made
	Failures  uint64 // checks that failed
	PurgeAlls uint64 // times it dropped everything
}

// Stats returns the follower's counters.
func (f *Follower) Stats() FollowerStats {
	return FollowerStats{
		Applied:   f.applied.Load(),
		Checks:    f.checks.Load(),
		Failures:  f.failures.Load(),
		PurgeAlls: f.purgeAlls.Load(),
	}
}

func (f *Follower) setApplied(seq uint64) { f.applied.Store(seq) }

// jump drops everything and continues from head.
func (f *Follower) jump(head uint64, reason string) {
	f.log.Warn("purge follower dropping everything", "reason", reason, "applied", f.applied.Load(), "head", head)
	f.t.PurgeAll()
	f.purgeAlls.Add(1)
	f.setApplied(head)
}

// check brings the follower up to date. f.mu is held.
func (f *Follower) check(ctx context.Context, now time.Time) error {
	f.checks.Add(1)
	err := f.doCheck(ctx, now)
	if err != nil {
		f.failures.Add(1)
		return err
	}
	f.lastOK = now
	return nil
}

func (f *Follower) doCheck(ctx context.Context, now time.Time) error {
	silent := now.Sub(f.lastOK) > f.cfg.MaxSilence
	var known uint64 // a head the pointer vouched for in this check; 0 if not read
	if !f.started || silent || now.Sub(f.lastVerify) >= f.cfg.VerifyEvery {
		head, err := f.j.Head(ctx)
		if err != nil {
			return err
		}
		f.lastVerify = now
		applied := f.applied.Load()
		switch {
		case !f.started:
			f.started = true
			f.jump(head, "first check after a failed start")
			return nil
		case head == applied:
			// Sequence numbers only rise: nothing was appended since, however
			// long we were away, so the tiers are current.
			return nil
		case head < applied:
			f.jump(head, "journal is behind this instance (reset)")
			return nil
		case silent:
			f.jump(head, "no successful check for longer than MaxSilence")
			return nil
		case head-applied > f.cfg.Retention:
			f.jump(head, "behind the retained window")
			return nil
		}
		known = head
	}
	for {
		applied := f.applied.Load()
		entries, head, err := f.j.ReadAfter(ctx, applied, f.cfg.MaxEntries)
		if err != nil {
			f.apply(entries) // what was read is valid and in order
			return err
		}
		if len(entries) == 0 {
			// Usually nothing new. But if the pointer vouched for more, the
			// entries we need are gone (expired): what they purged is lost.
			if known > applied {
				f.jump(known, "entries after this instance are gone")
			}
			return nil
		}
		if head-applied > f.cfg.Retention {
			f.jump(head, "behind the retained window")
			return nil
		}
		f.apply(entries)
		if f.applied.Load() >= max(head, known) {
			return nil
		}
	}
}

// apply purges what entries say, in order.
func (f *Follower) apply(entries []Entry) {
	for _, e := range entries {
		for _, p := range e.Prefixes {
			if p == "" {
				f.t.PurgeAll()
				continue
			}
			f.t.PurgePrefix(p)
		}
		f.setApplied(e.Seq)
		f.log.Debug("purge applied", "seq", e.Seq, "prefixes", e.Prefixes, "source", e.Source)
	}
}
