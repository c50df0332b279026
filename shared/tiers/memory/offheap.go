package memory

import (
	"bytes"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/tiers/internal/slab"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// MinOffHeap is the smallest body an off-heap cache (Config.OffHeap) keeps
// outside the Go heap. Smaller bodies stay on the heap, where the
// allocator packs them without the off-heap granule's rounding.
const MinOffHeap = 4 * slab.Granule

// arenaFactor is the arena's size over MaxBytes: the address space its
// blocks are placed in. Only the pages in use are resident; the room
// beyond MaxBytes keeps a free run at hand for a new body however the
// blocks in use are scattered.
const arenaFactor = 2

// held is a tile whose body lies in the cache's arena: the Tile an entry
// points at (first, so that the entry's *tile.Tile is the held's address),
// the block, and the count of what keeps the block: the entry that holds
// it, while one does, and every Lease.
type held struct {
	tile.Tile
	arena *slab.Arena
	blk   slab.Block
	// refs is the entry's reference and the leases'; dead once the block
	// is freed. On a line of its own, apart from the Tile's fields that
	// every hit reads.
	_    [64]byte
	refs atomic.Int32
}

// dead marks a held whose block is freed: far below zero, so that pins
// racing the free never bring it back to zero.
const dead = math.MinInt32 / 2

var heldBytes = tile.AllocBytes(int(unsafe.Sizeof(held{})))

// pin takes a reference on h, unless its block is already freed.
func (h *held) pin() bool {
	if h.refs.Add(1) > 0 {
		return true
	}
	h.refs.Add(-1)
	return false
}

// release drops a reference; the last one frees the block.
func (h *held) release() {
	if h.refs.Add(-1) == 0 && h.refs.CompareAndSwap(0, dead) {
		h.arena.Free(h.blk)
	}
}

// Lease keeps the bytes of a tile handed out by Acquire from being reused
// until Release, whatever happens to its entry meanwhile (a purge, an
// eviction, a replacement). The zero Lease holds nothing: a tile on the
// heap needs none.
type Lease struct{ h *held }

// Release lets the bytes go; the tile must not be read after. Releasing
// again, or the zero Lease, does nothing.
func (l *Lease) Release() {
	if h := l.h; h != nil {
		l.h = nil
		h.release()
	}
}

// Clone is a second lease on the same bytes, to be released on its own.
func (l Lease) Clone() Lease {
	if l.h != nil {
		l.h.refs.Add(1) // l holds one: never dead
	}
	return l
}

// Movable is a tile.Prepared holding bytes of its own (a ready-encoded
// answer, much the size of the body) that an off-heap cache keeps in the
// arena beside the body.
type Movable interface {
	tile.Prepared
	// MovableBytes are the bytes that may move.
	MovableBytes() []byte
	// Moved is the same Prepared holding b, a copy of MovableBytes, instead.
	Moved(b []byte) tile.Prepared
	// MovedCost is Cost once the bytes are moved: the heap it holds
	// besides them.
	MovedCost() int64
}

// movable is t's Movable and its bytes, if it has any.
func movable(t *tile.Tile) (Movable, []byte) {
	if m, ok := t.Prepared.(Movable); ok {
		if b := m.MovableBytes(); len(b) > 0 {
			return m, b
		}
	}
	return nil, nil
}

// heldOf returns the held t is, for a tile loaded from an entry, or nil
// for a tile on the heap.
func (c *Cache) heldOf(t *tile.Tile) *held {
	if c.arena == nil || len(t.Body) == 0 || !c.arena.Contains(unsafe.SliceData(t.Body)) {
		return nil
	}
	return (*held)(unsafe.Pointer(t))
}

// Acquire is Get for a caller that answers with the tile's bytes: a tile
// whose body lies off the heap comes with a Lease that keeps it from being
// reused until released, so the caller may read it (or hand it to a
// writer) after its entry is gone. It takes no lock and, on a hit,
// allocates nothing.
func (c *Cache) Acquire(key string) (*tile.Tile, Lease, bool) {
	for {
		t, ok := c.get(key)
		if !ok {
			return nil, Lease{}, false
		}
		h := c.heldOf(t)
		if h == nil {
			return t, Lease{}, true
		}
		if h.pin() {
			return t, Lease{h}, true
		}
		// Its last reader freed it just now, after it left its entry: the
		// entry holds another version or none.
	}
}

// onHeap is t as Get hands it out: t itself when its bytes are the heap's,
// else a copy of it with its body on the heap, or false when its block was
// freed meanwhile.
func (c *Cache) onHeap(t *tile.Tile) (*tile.Tile, bool) {
	h := c.heldOf(t)
	if h == nil {
		return t, true
	}
	if !h.pin() {
		return nil, false
	}
	cp := h.Tile
	cp.Body = bytes.Clone(h.Body)
	if m, b := movable(&h.Tile); m != nil {
		cp.Prepared = m.Moved(bytes.Clone(b))
	}
	h.release()
	return &cp, true
}

// heapOwned is t, to be kept on the heap, or a copy of it whose bytes are
// the heap's when some of them lie in the arena (a leased tile's, or part
// of one): an entry on the heap must not refer to blocks it does not hold,
// and heldOf takes any tile whose body lies in the arena for a held.
func (c *Cache) heapOwned(t *tile.Tile) *tile.Tile {
	if c.arena == nil {
		return t
	}
	inArena := func(b []byte) bool { return len(b) > 0 && c.arena.Contains(unsafe.SliceData(b)) }
	m, b := movable(t)
	if !inArena(t.Body) && (m == nil || !inArena(b)) {
		return t
	}
	cp := *t
	if inArena(t.Body) {
		cp.Body = bytes.Clone(t.Body)
	}
	if m != nil && inArena(b) {
		cp.Prepared = m.Moved(bytes.Clone(b))
	}
	return &cp
}

// weighOffHeap is what t weighs stored under key with its body (and its
// prepared answer's movable bytes) in the arena: the heap it holds (its
// held, strings, the rest of its prepared answer) and the granules of its
// block. A held weighs the same as the tile it was made from.
func weighOffHeap(key string, t *tile.Tile) int64 {
	heap := t.Cost() - tile.AllocBytes(cap(t.Body)) - tileBytes + heldBytes
	n := len(t.Body)
	if m, b := movable(t); m != nil {
		heap -= m.Cost() - m.MovedCost()
		n += len(b)
	}
	return tile.AllocBytes(len(key)) + heap + EntryOverhead + int64(slab.Granules(n))*slab.Granule
}

var tileBytes = tile.AllocBytes(int(unsafe.Sizeof(tile.Tile{})))

// offHeap reports whether Set keeps t's body in the arena.
func (c *Cache) offHeap(t *tile.Tile) bool {
	return c.arena != nil && t != nil && len(t.Body) >= MinOffHeap
}

// hold copies t into a new held with its body in a block of the arena,
// evicting while no free run holds it. It returns nil if none does with
// the queue empty. c.mu is held.
func (c *Cache) hold(t *tile.Tile) *held {
	for {
		if h := c.tryHold(t); h != nil {
			return h
		}
		if c.sieve.Empty() {
			return nil
		}
		c.evict()
	}
}

// tryHold copies t into a new held if a free run of the arena holds it:
// the body, then its prepared answer's movable bytes.
func (c *Cache) tryHold(t *tile.Tile) *held {
	m, b := movable(t)
	n := len(t.Body)
	blk, err := c.arena.Alloc(n + len(b))
	if err != nil {
		return nil
	}
	h := &held{Tile: *t, arena: c.arena, blk: blk}
	all := c.arena.Bytes(blk, n+len(b))
	h.Body = all[:n:n]
	copy(h.Body, t.Body)
	if m != nil {
		copy(all[n:], b)
		h.Prepared = m.Moved(all[n:])
	}
	h.refs.Store(1) // the entry's
	return h
}

// letGo drops the entry's reference on t, a tile that just left its entry.
func (c *Cache) letGo(t *tile.Tile) {
	if t == nil {
		return
	}
	if h := c.heldOf(t); h != nil {
		c.slabBytes.Add(-h.blk.Size())
		h.release()
	}
}

// fitResident evicts until what the tier holds in memory, not only what it
// weighs, fits MaxBytes with an entry about to be queued whose heap part
// is heap: the arena's resident pages (pages partly used, and blocks of
// evicted entries still leased, included) beside the heap of the entries.
// c.mu is held.
func (c *Cache) fitResident(heap int64) {
	for !c.sieve.Empty() && c.bytes.Load()-c.slabBytes.Load()+heap+c.arena.Resident() > c.maxBytes {
		c.evict()
	}
}

// Used is what the tier holds in memory: its entries' weights, but with
// the arena's resident pages (partly used pages and leased blocks of
// evicted entries included) for the blocks' granules. Set keeps it within
// MaxBytes as it keeps Bytes.
func (c *Cache) Used() int64 {
	if c.arena == nil {
		return c.bytes.Load()
	}
	return c.bytes.Load() - c.slabBytes.Load() + c.arena.Resident()
}

// OffHeapBytes is the resident size of the bodies kept off the heap
// (Config.OffHeap): the pages of the blocks in use, evicted blocks still
// leased included; 0 without.
func (c *Cache) OffHeapBytes() int64 {
	if c.arena == nil || !c.arena.OffHeap() {
		return 0
	}
	return c.arena.Resident()
}
