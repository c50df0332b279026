// Package sieve is SIEVE eviction (Zhang et al., "SIEVE is Simpler than
// LRU", NSDI'24), the one implementation both tiers use: a FIFO queue of
// entries, a visited bit per entry that hits set, and a hand that walks from
// the oldest entry toward the newest, clearing bits and evicting the first
// unvisited entry. Survivors never move.
//
// The queue is intrusive: an entry type carries its Links, so queueing,
// removing and evicting allocate nothing and cost O(1) apart from the hand's
// walk. The visited bit is the entry's own, because the tiers keep it
// differently (the memory tier sets it without a lock, in a word it shares
// with the key's hash; the disk tier under its lock); the queue only reads
// and clears it, through Entry.TakeVisited.
//
// A Queue is not safe for concurrent use: its owner guards it, the links of
// its entries and (for clearing) their visited bits with one lock.
package sieve

import (
	"iter"
	"unsafe"
)

// Links are an entry's place in a Queue. An entry that is not queued has
// zero Links.
type Links[E any] struct {
	// Links point at their neighbours' Links, not at the entries, so that
	// queueing and unlinking never call into the entry type; the queue
	// finds an entry from its Links by their offset in it (see entry).
	older, newer *Links[E] // toward the tail, toward the head; nil at the ends
}

// Entry constrains what a Queue holds: pointers to an entry type E that
// carries its Links and a visited mark.
type Entry[E any] interface {
	*E
	// Links returns the entry's Links: a field of the entry itself, always
	// the same one.
	Links() *Links[E]
	// TakeVisited reports whether the entry was visited since the hand
	// last passed it, and clears that mark.
	TakeVisited() bool
}

// Queue is SIEVE's queue and hand. The zero Queue is empty and ready to use.
type Queue[E any, P Entry[E]] struct {
	head, tail *Links[E] // of the newest and the oldest entry
	// hand is the entry the hand examines next; nil means the tail (the
	// hand passed the head, or has not moved yet).
	hand *Links[E]
	// off is where the Links lie in an entry, the same in all of them. It
	// is learnt from Entry.Links whenever an entry enters an empty queue;
	// otherwise the queue goes between an entry and its Links by it alone.
	off uintptr
}

// queued returns the Links of e, an entry about to be queued.
func (q *Queue[E, P]) queued(e *E) *Links[E] {
	if q.tail == nil {
		q.learn(e)
	}
	return q.links(e)
}

// learn sets off from e's Links, which must lie within e.
func (q *Queue[E, P]) learn(e *E) {
	l := P(e).Links()
	off := uintptr(unsafe.Pointer(l)) - uintptr(unsafe.Pointer(e))
	if off > unsafe.Sizeof(*e) || unsafe.Sizeof(*e)-off < unsafe.Sizeof(*l) {
		panic("sieve: Entry.Links must return a field of its entry")
	}
	q.off = off
}

// links returns the Links of e, an entry of the queue or entering it.
func (q *Queue[E, P]) links(e *E) *Links[E] {
	return (*Links[E])(unsafe.Add(unsafe.Pointer(e), q.off))
}

// entry returns the entry whose Links l are (nil for nil): l's allocation,
// off bytes before l.
func (q *Queue[E, P]) entry(l *Links[E]) *E {
	if l == nil {
		return nil
	}
	return (*E)(unsafe.Add(unsafe.Pointer(l), -int(q.off)))
}

// Empty reports whether the queue holds no entry.
func (q *Queue[E, P]) Empty() bool { return q.tail == nil }

// Oldest returns the entry at the tail of the queue, or nil.
func (q *Queue[E, P]) Oldest() *E { return q.entry(q.tail) }

// Newest returns the entry at the head of the queue, or nil.
func (q *Queue[E, P]) Newest() *E { return q.entry(q.head) }

// Hand returns the entry under the hand, or nil when the hand is at rest:
// it then starts from the oldest entry.
func (q *Queue[E, P]) Hand() *E { return q.entry(q.hand) }

// Neighbours returns the entries queued just before (older than) and just
// after e, which is queued; nil at the ends.
func (q *Queue[E, P]) Neighbours(e *E) (older, newer *E) {
	l := q.links(e)
	return q.entry(l.older), q.entry(l.newer)
}

// All yields the entries from the oldest to the newest. The queue must not
// change meanwhile.
func (q *Queue[E, P]) All() iter.Seq[*E] {
	return func(yield func(*E) bool) {
		for l := q.tail; l != nil; l = l.newer {
			if !yield(q.entry(l)) {
				return
			}
		}
	}
}

// PushHead queues e, which is not queued, as the newest entry.
func (q *Queue[E, P]) PushHead(e *E) { q.link(q.queued(e), q.head, nil) }

// PushHand queues e, which is not queued, where the hand looks next: just
// older than the entry under the hand (as the oldest when the hand is at
// rest), with the hand on e. So e is the next victim unless it is visited
// first, and the other entries keep their order and their turn. In an
// empty queue e becomes the only entry.
func (q *Queue[E, P]) PushHand(e *E) {
	l := q.queued(e)
	if q.tail == nil {
		q.link(l, nil, nil)
		return
	}
	at := q.hand
	if at == nil {
		at = q.tail
	}
	q.link(l, at.older, at)
	q.hand = l
}

// link puts l between older and newer, neighbours or nil for an end.
func (q *Queue[E, P]) link(l, older, newer *Links[E]) {
	l.older, l.newer = older, newer
	if older != nil {
		older.newer = l
	} else {
		q.tail = l
	}
	if newer != nil {
		newer.older = l
	} else {
		q.head = l
	}
}

// Remove takes e, which is queued, off the queue. A hand on e moves to its
// newer neighbour, the entry it would have examined next.
func (q *Queue[E, P]) Remove(e *E) { q.unlink(q.links(e)) }

func (q *Queue[E, P]) unlink(l *Links[E]) {
	if q.hand == l {
		q.hand = l.newer
	}
	if l.older != nil {
		l.older.newer = l.newer
	} else {
		q.tail = l.newer
	}
	if l.newer != nil {
		l.newer.older = l.older
	} else {
		q.head = l.older
	}
	l.older, l.newer = nil, nil
}

// Evict takes the entry SIEVE evicts off the queue and returns it, or nil
// if the queue is empty. The hand walks from where it is toward the head,
// wrapping to the tail past it, and clears the visited mark of each entry
// it passes; the first entry that was not visited is the victim, and the
// hand stays on the victim's newer neighbour (at rest past the head).
func (q *Queue[E, P]) Evict() *E {
	l := q.hand
	if l == nil {
		l = q.tail
	}
	if l == nil {
		return nil
	}
	for P(q.entry(l)).TakeVisited() {
		if l = l.newer; l == nil {
			l = q.tail
		}
	}
	q.hand = l // unlink moves it on to the victim's newer neighbour
	q.unlink(l)
	return q.entry(l)
}
