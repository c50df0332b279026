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
	// from is the last entry the tiers hold the purge of: a drop covers
	// the entries after it.
	from := f.pos.Seq
	var drop string
	switch {
	case !f.known:
		drop = "the kept disk tier's journal position is unknown"
	case snap.Missing:
		if f.pos.Journal != "" {
			drop = "the journal is gone (wiped or reset)"
		}
	case f.pos.Journal != "" && snap.Journal != f.pos.Journal:
		drop = "a new journal"
	case snap.Seq < f.pos.Seq:
		drop = "the journal is behind this instance"
	case f.pos.Seq+1 < snap.Oldest():
		drop = "entries since this instance's position are out of the journal's window"
	default:
		// The entry this instance applied last, if the head still holds
		// it, must be the one it applied: a different one there means a
		// writer overwrote the head (a store that ignores conditional
		// writes), and its purge, and perhaps others, never reached here.
		if e, ok := snap.At(f.pos.Seq); ok && f.pos.Seq > 0 && journal.EntryDigest(e) != f.pos.Entry {
			drop = "a different entry at a sequence number this instance applied"
			if f.pos.Entry == "" {
				drop = "the entry this instance applied last is unknown (a position saved without it)"
			}
			from = f.pos.Seq - 1
		}
	}
	if f.fresh {
		f.pos, f.known = next, true
		f.applied.Store(next.Seq)
		f.save()
		return
	}
	if !f.deferred && next == f.pos && drop == "" {
		return
	}
	ok := true
	applied := appliedCount{}
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
		ok = f.purgeAll(&applied)
		sameJournal := f.known && f.pos.Journal == snap.Journal
		for _, e := range snap.Entries {
			if !sameJournal || e.Seq > from {
				applied.entry(e)
			}
		}
	default:
		for _, e := range snap.Entries {
			if e.Seq > f.pos.Seq {
				ok = f.apply(e, &applied) && ok
			}
		}
	}
	if f.cfg.Observer != nil && applied.entries > 0 {
		var lag time.Duration
		if !applied.newest.IsZero() {
			// A worker's clock ahead of this one's is no lag.
			lag = max(0, f.cfg.Now().Sub(applied.newest))
		}
		f.cfg.Observer.PurgesApplied(applied.entries, applied.keys, lag)
	}
	f.pos, f.known = next, true
	f.applied.Store(next.Seq)
	if ok && !f.diskBehind {
		f.save()
	}
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
