package follower

import (
	"time"

	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

// applySnapshot brings the tiers from f.pos to snap. f.mu is held.
func (f *Follower) applySnapshot(snap journal.Snapshot) {
	next := journal.Position{Journal: snap.Journal, Seq: snap.Seq}
	if e, ok := snap.At(snap.Seq); ok {
		next.Entry = journal.EntryDigest(e)
	}
	if f.fresh {
		// The tiers hold nothing yet: the head is where they are.
		f.moveTo(next)
		f.save()
		return
	}
	drop, from := f.dropReason(snap)
	if !f.deferred && next == f.pos && drop == "" {
		return
	}
	ok := true
	var applied appliedCount
	switch {
	case f.deferred:
		// looked is read after the head: a lookup that had not asked by
		// now begins its GET after the head was read.
		f.deferred = false
		if f.looked.Load() {
			ok = f.applySince(snap, f.began.Add(-ClockMargin), &applied)
		}
		f.pending.Store(false)
	case drop != "":
		f.log.Warn("purge follower dropping both tiers", "reason", drop, "position", f.pos, "journal", next)
		ok = f.dropAfter(snap, from, &applied)
	default:
		for _, e := range snap.Entries {
			if e.Seq > f.pos.Seq {
				ok = f.apply(e, &applied) && ok
			}
		}
	}
	f.report(applied)
	f.moveTo(next)
	if ok && !f.diskBehind {
		f.save()
	}
}

// dropReason says why the tiers cannot be brought from f.pos to snap entry
// by entry, so that both must be dropped, or "" when they can. from is the
// last entry whose purge the tiers hold: a drop covers the entries after
// it. f.mu is held.
func (f *Follower) dropReason(snap journal.Snapshot) (reason string, from uint64) {
	from = f.pos.Seq
	switch {
	case !f.known:
		return "the kept disk tier's journal position is unknown", from
	case snap.Missing:
		if f.pos.Journal != "" {
			return "the journal is gone (wiped or reset)", from
		}
	case f.pos.Journal != "" && snap.Journal != f.pos.Journal:
		return "a new journal", from
	case snap.Seq < f.pos.Seq:
		return "the journal is behind this instance", from
	case f.pos.Seq+1 < snap.Oldest():
		return "entries since this instance's position are out of the journal's window", from
	default:
		// The entry this instance applied last, if the head still holds
		// it, must be the one it applied: a different one there means a
		// writer overwrote the head (a store that ignores conditional
		// writes), and its purge, and perhaps others, never reached here.
		if e, ok := snap.At(f.pos.Seq); ok && f.pos.Seq > 0 && journal.EntryDigest(e) != f.pos.Entry {
			if f.pos.Entry == "" {
				return "the entry this instance applied last is unknown (a position saved without it)", from - 1
			}
			return "a different entry at a sequence number this instance applied", from - 1
		}
	}
	return "", from
}

// dropAfter drops both tiers, for the entries of snap after from (every
// entry of another journal), and reports whether the disk let go of every
// file. f.mu is held.
func (f *Follower) dropAfter(snap journal.Snapshot, from uint64, a *appliedCount) bool {
	ok := f.purgeAll(a)
	sameJournal := f.known && f.pos.Journal == snap.Journal
	for _, e := range snap.Entries {
		if !sameJournal || e.Seq > from {
			a.entry(e)
		}
	}
	return ok
}

// report tells the Observer what one check applied. f.mu is held.
func (f *Follower) report(a appliedCount) {
	if f.cfg.Observer == nil || a.entries == 0 {
		return
	}
	var lag time.Duration
	if !a.newest.IsZero() {
		// A worker's clock ahead of this one's is no lag.
		lag = max(0, f.cfg.Now().Sub(a.newest))
	}
	f.cfg.Observer.PurgesApplied(a.entries, a.keys, lag)
}

// moveTo makes next the position of the tiers. f.mu is held.
func (f *Follower) moveTo(next journal.Position) {
	f.pos, f.known = next, true
	f.applied.Store(next.Seq)
}

// apply purges one entry's prefixes and reports whether the disk let go of
// every file. f.mu is held.
func (f *Follower) apply(e journal.Entry, a *appliedCount) bool {
	ok := true
	for _, p := range e.Prefixes {
		if p == "" {
			ok = f.purgeAll(a) && ok
			continue
		}
		if err := f.purgePrefix(p, a); err != nil {
			f.log.Warn("purge not fully applied on disk; it is applied again after a restart", "seq", e.Seq, "prefix", p, "err", err)
			f.diskBehind, ok = true, false
		}
	}
	a.entry(e)
	f.log.Debug("purge applied", "seq", e.Seq, "prefixes", e.Prefixes, "source", e.Source)
	return ok
}

// applySince is the first good check of a deferred follower after a lookup
// began (see Defer): it applies every entry of snap recorded since since,
// or drops both tiers when snap may not hold all of them. A missing head
// has nothing to apply, as for a follower that never saw a journal. f.mu
// is held.
func (f *Follower) applySince(snap journal.Snapshot, since time.Time, a *appliedCount) bool {
	// Every entry since since is held when the oldest one held is older,
	// or when the head holds the journal from its first entry.
	held := snap.Oldest() <= 1 || len(snap.Entries) > 0 && !snap.Entries[0].Time.IsZero() && snap.Entries[0].Time.Before(since)
	if !held {
		f.log.Debug("purge follower dropping what the tiers took in before the first check: the journal's head no longer holds every entry since this instance began")
		ok := f.purgeAll(a)
		for _, e := range snap.Entries {
			if recordedSince(e, since) {
				a.entry(e)
			}
		}
		return ok
	}
	ok := true
	for _, e := range snap.Entries {
		if recordedSince(e, since) {
			ok = f.apply(e, a) && ok
		}
	}
	return ok
}

// recordedSince reports whether e was recorded at or after t by its
// writer's clock; an entry without a time counts as recorded since.
func recordedSince(e journal.Entry, t time.Time) bool { return e.Time.IsZero() || !e.Time.Before(t) }

// appliedCount is what one check applied, for the Observer.
type appliedCount struct {
	entries, keys int
	newest        time.Time // the Time of the newest entry applied
}

func (a *appliedCount) entry(e journal.Entry) {
	a.entries++
	if e.Time.After(a.newest) {
		a.newest = e.Time
	}
}

// purgePrefix purges one prefix from the tiers, counting the keys dropped.
func (f *Follower) purgePrefix(p string, a *appliedCount) error {
	n, err := f.t.Purge(p)
	a.keys += n
	return err
}

// purgeAll drops both tiers and reports whether the disk let go of every
// file. f.mu is held.
func (f *Follower) purgeAll(a *appliedCount) bool {
	f.purgeAlls.Add(1)
	if err := f.purgePrefix("", a); err != nil {
		f.log.Warn("dropping the tiers left files on disk; they are dropped again after a restart", "err", err)
		f.diskBehind = true
		return false
	}
	f.diskBehind = false // nothing older than this survives on disk
	return true
}

func (f *Follower) save() {
	if f.cfg.Position == nil {
		return
	}
	if err := f.cfg.Position.Save(f.pos); err != nil {
		f.log.Warn("purge follower: journal position not saved; a restart applies these purges again", "err", err)
	}
}
