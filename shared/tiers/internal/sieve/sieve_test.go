package sieve_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/internal/sieve"
)

// item is a queue entry for the tests. Its Links are not its first field,
// so that the queue's way back from Links to entry is tested.
type item struct {
	key     int
	visited bool
	links   sieve.Links[item]
}

func (it *item) Links() *sieve.Links[item] { return &it.links }

func (it *item) TakeVisited() bool {
	v := it.visited
	it.visited = false
	return v
}

// ref is SIEVE on a slice, written to be obviously right rather than fast:
// the reference the Queue is checked against.
type ref struct {
	keys    []int  // oldest first
	visited []bool // of keys[i]
	hand    int    // the index the hand examines next; -1 at rest (the oldest)

	spared, wraps int // entries the hand spared, and times it wrapped
}

func (r *ref) pushHead(k int) {
	r.keys = append(r.keys, k)
	r.visited = append(r.visited, false)
}

func (r *ref) pushHand(k int) {
	if len(r.keys) == 0 {
		r.pushHead(k)
		return
	}
	at := max(r.hand, 0)
	r.keys = slices.Insert(r.keys, at, k)
	r.visited = slices.Insert(r.visited, at, false)
	r.hand = at
}

// remove deletes keys[i]; a hand on it moves to the next newer entry, which
// slides into index i, or comes to rest if there is none.
func (r *ref) remove(i int) {
	switch {
	case r.hand > i:
		r.hand--
	case r.hand == i && i == len(r.keys)-1:
		r.hand = -1
	}
	r.keys = slices.Delete(r.keys, i, i+1)
	r.visited = slices.Delete(r.visited, i, i+1)
}

func (r *ref) evict() (int, bool) {
	if len(r.keys) == 0 {
		return 0, false
	}
	i := max(r.hand, 0)
	for r.visited[i] {
		r.visited[i] = false
		r.spared++
		if i++; i == len(r.keys) {
			i = 0
			r.wraps++
		}
	}
	k := r.keys[i]
	r.hand = i
	r.remove(i)
	return k, true
}

// harness drives a Queue and a ref with the same operations.
type harness struct {
	t     *testing.T
	q     sieve.Queue[item, *item]
	r     ref
	items map[int]*item
	next  int // the key of the next new entry
	// capacity, if not 0, bounds the queue as a cache would: a new entry
	// first evicts until there is room.
	capacity int
}

func newHarness(t *testing.T, capacity int) *harness {
	return &harness{t: t, r: ref{hand: -1}, items: map[int]*item{}, capacity: capacity}
}

// apply runs one operation, chosen by op, on an entry chosen by arg.
func (h *harness) apply(op, arg byte) {
	h.t.Helper()
	n := len(h.r.keys)
	switch op % 10 {
	case 0, 1, 2: // a new entry: at the head, or (one in three) at the hand
		for h.capacity > 0 && len(h.r.keys) >= h.capacity {
			h.evict()
		}
		it := &item{key: h.next}
		h.next++
		h.items[it.key] = it
		if op%10 == 2 {
			h.q.PushHand(it)
			h.r.pushHand(it.key)
		} else {
			h.q.PushHead(it)
			h.r.pushHead(it.key)
		}
	case 3, 4, 5, 6, 7: // a hit
		if n > 0 {
			i := int(arg) % n
			h.items[h.r.keys[i]].visited = true
			h.r.visited[i] = true
		}
	case 8:
		if n > 0 {
			i := int(arg) % n
			k := h.r.keys[i]
			h.q.Remove(h.items[k])
			h.r.remove(i)
			delete(h.items, k)
		}
	case 9:
		h.evict()
	}
	h.verify()
}

// evict evicts from both and compares the victims.
func (h *harness) evict() {
	h.t.Helper()
	got := h.q.Evict()
	want, ok := h.r.evict()
	switch {
	case !ok && got != nil:
		h.t.Fatalf("Evict of an empty queue = %d, want nil", got.key)
	case ok && (got == nil || got.key != want):
		h.t.Fatalf("Evict = %v, want %d", got, want)
	}
	if ok {
		delete(h.items, want)
		if *got.Links() != (sieve.Links[item]{}) {
			h.t.Fatalf("evicted %d still has links", want)
		}
	}
}

// verify compares the queue with the reference: order, visited marks, the
// hand, both ends, and the links in both directions.
func (h *harness) verify() {
	h.t.Helper()
	var keys []int
	var visited []bool
	var prev *item
	for it := range h.q.All() {
		if older, _ := h.q.Neighbours(it); older != prev {
			h.t.Fatalf("%d: older link is wrong", it.key)
		}
		if prev != nil {
			if _, newer := h.q.Neighbours(prev); newer != it {
				h.t.Fatalf("%d: newer link is wrong", prev.key)
			}
		}
		keys = append(keys, it.key)
		visited = append(visited, it.visited)
		prev = it
	}
	if !slices.Equal(keys, h.r.keys) || !slices.Equal(visited, h.r.visited) {
		h.t.Fatalf("queue %v visited %v, want %v %v", keys, visited, h.r.keys, h.r.visited)
	}
	if h.q.Newest() != prev {
		h.t.Fatal("Newest is not the last entry")
	}
	if prev != nil {
		if _, newer := h.q.Neighbours(prev); newer != nil {
			h.t.Fatal("the newest entry has a newer neighbour")
		}
	}
	if h.q.Empty() != (len(keys) == 0) || (len(keys) > 0 && h.q.Oldest().key != keys[0]) {
		h.t.Fatalf("Empty %v Oldest %v for %v", h.q.Empty(), h.q.Oldest(), keys)
	}
	hand := h.q.Hand()
	switch {
	case h.r.hand < 0 && hand != nil:
		h.t.Fatalf("hand on %d, want at rest", hand.key)
	case h.r.hand >= 0 && (hand == nil || hand.key != h.r.keys[h.r.hand]):
		h.t.Fatalf("hand on %v, want %d", hand, h.r.keys[h.r.hand])
	}
}

// TestAgainstReference drives the queue and the reference with random
// operations and compares them after every step, victims included.
func TestAgainstReference(t *testing.T) {
	t.Parallel()
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 0x51e7e))
			h := newHarness(t, 1+4*int(seed)) // 1 to 61 entries
			for range 4000 {
				h.apply(byte(r.IntN(256)), byte(r.IntN(256)))
			}
			if h.r.spared == 0 || h.r.wraps == 0 {
				t.Fatalf("the hand spared %d entries and wrapped %d times, want both", h.r.spared, h.r.wraps)
			}
			t.Logf("queue of %d, %d spared, %d wraps", len(h.r.keys), h.r.spared, h.r.wraps)
		})
	}
}

// TestTrace replays a trace in the spirit of the paper's Figure 2: the hand
// spares visited entries, clearing their marks, wraps past the head, and
// never moves a survivor.
func TestTrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 0)
	for range 7 {
		h.apply(0, 0) // 0..6, oldest first
	}
	visit := func(keys ...int) {
		for _, k := range keys {
			h.apply(3, byte(slices.Index(h.r.keys, k)))
		}
	}
	evict := func(want int) {
		t.Helper()
		if got := h.q.Evict(); got == nil || got.key != want {
			t.Fatalf("Evict = %v, want %d", got, want)
		}
		h.r.evict()
		h.verify()
	}
	visit(0, 1, 6)
	evict(2) // 0 and 1 spared, their marks cleared
	visit(0, 3)
	evict(4) // 3 spared
	evict(5)
	evict(1) // 6 spared; past the head the hand wraps: 0 spared again, 1 was cleared
	if !slices.Equal(h.r.keys, []int{0, 3, 6}) {
		t.Fatalf("survivors %v, want [0 3 6] in their first order", h.r.keys)
	}
}

// stray is an entry type whose Links are not its own.
type stray struct{ links *sieve.Links[stray] }

func (s *stray) Links() *sieve.Links[stray] { return s.links }
func (s *stray) TakeVisited() bool          { return false }

// TestLinksOutsideEntry: Links that are not a field of their entry are
// refused at once, not followed into another object.
func TestLinksOutsideEntry(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("PushHead of an entry whose Links lie elsewhere did not panic")
		}
	}()
	var q sieve.Queue[stray, *stray]
	q.PushHead(&stray{links: new(sieve.Links[stray])})
}

// FuzzQueue is TestAgainstReference with the operations from the fuzzer:
// the first byte bounds the queue (0: no bound), then pairs of bytes, an
// operation and the entry it acts on.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 9, 0, 9, 0})
	f.Add([]byte{3, 0, 0, 2, 0, 2, 0, 3, 1, 0, 0, 8, 0, 9, 0, 2, 0})
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 3, 0, 3, 1, 3, 2, 0, 0, 0, 0, 8, 2, 2, 0, 3, 0, 0, 0})
	f.Add([]byte{0, 2, 0, 9, 0, 2, 0, 0, 0, 8, 0, 9, 0, 8, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		h := newHarness(t, int(data[0]%16))
		for ops := data[1:]; len(ops) >= 2; ops = ops[2:] {
			h.apply(ops[0], ops[1])
		}
	})
}
