// Package memory is the memory tier: a concurrent, byte-bounded map from tile
// keys to tiles with SIEVE eviction and cheap prefix purges.
//
// What it promises:
//
//   - Safe for any number of goroutines. After any Set returns, the summed
//     weight of the entries is at most Config.MaxBytes; an entry heavier
//     than MaxEntryFraction of it is refused. An entry weighs the heap it
//     holds: its key's bytes, its tile's Cost (the Tile, its body and its
//     strings) and EntryOverhead, so the bound is the heap the cache holds,
//     remembered 404s and small tiles included. (EntryOverhead also covers
//     the ghost of evicted keys' hashes, about 6 bytes per entry; see
//     TestGhostBytes.)
//   - Get, Set and Delete take expected O(1) time; a Get takes no lock at all
//     and a hit allocates nothing.
//   - Eviction is SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24):
//     a FIFO queue, one visited bit per entry set by hits, and a hand that
//     walks from the oldest entry toward the newest, clearing bits and
//     evicting the first unvisited entry. Survivors never move. A new entry
//     heavier than the mean of recent new ones, whose key was not evicted
//     lately, enters the queue at the hand instead of the head (probation,
//     see onProbation): it is stored and served like any entry, and is the
//     next victim unless a Get hits it first.
//   - DeletePrefix costs the number of keys it removes, not the cache size,
//     and never stops readers: a key is unreachable once the call returns
//     (Get of it misses), while other keys stay readable throughout. Keys Set
//     under the prefix while it runs may or may not survive it.
//   - Scan streams keys under a prefix in ascending order in small chunks,
//     so it neither copies the index nor holds writers off for long.
//   - With Config.OffHeap, bodies of MinOffHeap bytes or more (and a
//     prepared answer's Movable bytes beside them) are kept outside the Go
//     heap (shared/tiers/internal/slab), weighed by the granules they take,
//     and Used (the entries' heap, and the arena's resident pages, leased
//     blocks of evicted entries included) stays within MaxBytes as Bytes
//     does. Acquire hands such a tile out with a Lease: its bytes are never
//     reused before the Lease is released, whatever happens to its entry;
//     Get hands out a copy on the heap instead.
//
// Design. Every key lives in a radix tree (shared/tiers/internal/radix) whose
// nodes are the cache entries themselves: the node of a key carries its links
// in the SIEVE queue (shared/tiers/internal/sieve, the disk tier's too), the
// visited bit, the tile and the key's hash, so one 64-byte allocation is all
// the per-key bookkeeping besides the index slot and a share of the tree's
// inner nodes. The tree, the queue and the byte count change only under one
// writer mutex. Point reads go through a sharded hash index of node pointers
// (Swiss-table groups with a hash tag per slot) that readers probe with
// atomic loads only; writers (under the mutex) publish into it with atomic
// stores and replace a shard's table wholesale when it grows. A purge
// detaches whole subtrees of the radix tree and drops their entries in
// batches.
package memory

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tilesieve/tilesieve/shared/tiers/internal/chunk"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/radix"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/sieve"
	"github.com/tilesieve/tilesieve/shared/tiers/internal/slab"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// EntryOverhead is the weight charged per entry on top of its key's bytes
// and its tile's Cost: the measured bookkeeping per entry (radix node with
// SIEVE links, its share of inner nodes and child arrays, and the index
// slot; see TestBookkeepingBytes), rounded up.
const EntryOverhead = 112

// DefaultMaxEntryFraction is used when Config.MaxEntryFraction is 0. One
// eighth keeps a single giant tile from flushing most of the cache.
const DefaultMaxEntryFraction = 0.125

const (
	shardBits = 8 // 256 index shards: a table rebuild copies 1/256 of the keys
	nShards   = 1 << shardBits

	// purgeBatch keys are removed per hold of the writer lock by a large
	// DeletePrefix, so Sets queue behind a batch, not the whole purge.
	purgeBatch = 1024
	// scanChunk items are collected per hold of the writer lock by Scan.
	scanChunk = 64
)

// Config configures a Cache.
type Config struct {
	MaxBytes         int64   // the byte bound; required > 0
	MaxEntryFraction float64 // an entry heavier than this fraction of MaxBytes is not admitted; DefaultMaxEntryFraction when 0
	// OffHeap keeps bodies of MinOffHeap bytes or more outside the Go heap,
	// so that the bytes the tier holds are not the collector's to account
	// for; a caller that answers with them uses Acquire.
	OffHeap bool
	// OnOffHeap, when set with OffHeap, is told the resident size of the
	// off-heap bodies (OffHeapBytes) whenever it has moved by
	// offHeapStep(MaxBytes) since it was last told, and 0 at New: a process
	// lowers its Go memory limit by it. It runs under a lock of the tier
	// and must not call into it.
	OnOffHeap func(resident int64)
}

// offHeapStep is how far the off-heap resident size moves before
// Config.OnOffHeap hears of it: 1/256 of the bound, at least 64 KiB.
func offHeapStep(maxBytes int64) int64 { return max(maxBytes/256, 64<<10) }

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxBytes <= 0 {
		errs = append(errs, fmt.Errorf("cache: MaxBytes must be > 0, got %d", c.MaxBytes))
	}
	if math.IsNaN(c.MaxEntryFraction) || c.MaxEntryFraction < 0 || c.MaxEntryFraction > 1 {
		errs = append(errs, fmt.Errorf("cache: MaxEntryFraction must be in [0, 1] (0 for the default %v), got %v",
			DefaultMaxEntryFraction, c.MaxEntryFraction))
	}
	return errors.Join(errs...)
}

// entry is the cache's part of a radix node. Readers (Get) touch only tile
// and the visited bit of meta, both atomically; the rest belongs to the
// writer. It fills the node to 64 bytes exactly.
type entry struct {
	links sieve.Links[entry]        // the entry's place in Cache.sieve; guarded by Cache.mu
	tile  atomic.Pointer[tile.Tile] // nil once the entry is removed, so a racing reader misses
	// meta holds SIEVE's visited bit (bit 0: set by hits, cleared by the
	// hand) and the key's index hash (the other bits, see Cache.hash), kept
	// so that removal and table rebuilds need not hash the key again. The
	// hash is written under Cache.mu before the node is published in the
	// index and never changes while it is.
	meta atomic.Uint32
	// w is the entry's weight, so that replacing or dropping it need not
	// load its tile (a cache miss), and a lock-free replacement need not
	// weigh the old tile; 0 if it does not fit. Written under Cache.mu
	// before the tile it weighs is stored; read by Set without the lock.
	w atomic.Uint32
}

const visitedBit = 1

// hash returns the index hash kept in meta.
func (e *entry) hash() uint32 { return e.meta.Load() &^ visitedBit }

// Links and TakeVisited make an entry a sieve.Entry. Hits set the visited
// bit without the lock (see Get); the hand clears it under Cache.mu.
func (e *entry) Links() *sieve.Links[entry] { return &e.links }

func (e *entry) TakeVisited() bool {
	if e.meta.Load()&visitedBit == 0 {
		return false
	}
	e.meta.And(^uint32(visitedBit))
	return true
}

// weight returns the entry's weight. key is its key.
func (e *entry) weight(key string) int64 {
	if w := e.w.Load(); w != 0 {
		return int64(w)
	}
	return weight(key, e.tile.Load())
}

type node = radix.Node[entry]

// The index is a Swiss table (as in Abseil and Go's own maps) of node
// pointers: slots come in groups of seven that share a control word, one
// byte per slot holding 7 bits of the key's hash, or ctrlEmpty, or
// ctrlDeleted. A probe reads a group's control word and compares its tags
// all at once, and loads a node only where its tag matches, so colliding
// keys cost no cache miss on their nodes and tables may run fuller than
// with plain linear probing. A group is 64 bytes, the size of a cache line.
const (
	groupSlots  = 7
	ctrlEmpty   = 0x80
	ctrlDeleted = 0xfe
	// emptyCtrl is a fresh group's control word; its unused top byte reads
	// as deleted, so it is neither free nor empty nor matches a tag.
	emptyCtrl = 0xfe80808080808080
	slotMSBs  = 0x0080808080808080 // the high bit of each slot's byte
	ctrlLSBs  = 0x0101010101010101
	tagMask   = 0x7f
)

type group struct {
	ctrl  atomic.Uint64
	slots [groupSlots]atomic.Pointer[node]
}

// matchTag returns the high bits of the slot bytes of ctrl that equal tag.
// It may also flag a slot above a true match (the SWAR zero-byte test
// borrows across bytes); probes confirm every candidate by its key.
func matchTag(ctrl, tag uint64) uint64 {
	x := ctrl ^ (ctrlLSBs * tag)
	return (x - ctrlLSBs) &^ x & slotMSBs
}

// matchEmpty returns the high bits of the empty slot bytes of ctrl: those
// are 0x80, while deleted bytes (0xfe) have bit 1 set and tags bit 7 clear.
func matchEmpty(ctrl uint64) uint64 {
	return ctrl &^ (ctrl << 6) & slotMSBs
}

// table is one shard's index. Its size never changes; a full table is
// replaced by a new one, so a reader that loaded the old table still probes
// a consistent (if slightly stale) array.
type table struct {
	groups []group
}

func newTable(groups int) *table {
	t := &table{groups: make([]group, groups)}
	for i := range t.groups {
		t.groups[i].ctrl.Store(emptyCtrl)
	}
	return t
}

// slotCount is the number of slots of t.
func (t *table) slotCount() int { return groupSlots * len(t.groups) }

// start maps a hash to the first group to probe. Multiply-and-shift instead
// of a mask lets tables grow by any factor, which keeps the index at 10-13
// bytes per entry. It uses the low 24 bits (the shard is picked by the top
// 8), and the tag bits 1-7 (bit 0 is always 0), which decide the group only
// in tables of over 2^16 groups.
func (t *table) start(h uint32) int {
	return int(uint64(h&(1<<(32-shardBits)-1)) * uint64(len(t.groups)) >> (32 - shardBits))
}

// tagOf returns the control byte of a slot holding a key with hash h.
func tagOf(h uint32) uint64 { return uint64(h>>1) & tagMask }

// find returns the node for key, or nil. A table always has an empty slot
// (see insertIndex), so the probe ends. Writers store a slot before its
// control byte and clear the control byte before the slot, and a reader
// checks the key, so a racing reader may see a nil or another key's node
// in a matching slot and skips it.
func (t *table) find(key string, h uint32) *node {
	tag := tagOf(h)
	for g := t.start(h); ; {
		grp := &t.groups[g]
		ctrl := grp.ctrl.Load()
		for m := matchTag(ctrl, tag); m != 0; m &= m - 1 {
			if n := grp.slots[bits.TrailingZeros64(m)>>3].Load(); n != nil && n.Key() == key {
				return n
			}
		}
		if matchEmpty(ctrl) != 0 {
			return nil
		}
		if g++; g == len(t.groups) {
			g = 0
		}
	}
}

// shard is one slice of the index. Readers load tab on every Get; it is
// written only when a table is replaced, so shards pack densely.
type shard struct {
	tab atomic.Pointer[table]
	// live and used are written on every insert and removal, so they sit in
	// the writer's own array (Cache.fills), away from the lines readers load.
	fill *fill
}

type fill struct {
	live, used int32 // guarded by Cache.mu; used counts live slots plus deleted ones
}

// stripe holds request counters. Get and Set update the stripe of their
// key's shard, so two cores on different keys rarely write the same line.
type stripe struct {
	hits, misses atomic.Int64
	sets         atomic.Int64 // counted here, not in one word, so Sets on two cores do not share a line
	_            [40]byte
}

const nStripes = 64

// Cache is the memory tier. See the package doc.
type Cache struct {
	seed   maphash.Seed
	shards [nShards]shard
	reads  [nStripes]stripe

	maxBytes int64
	maxEntry int64       // heaviest admitted entry
	arena    *slab.Arena // off-heap bodies (Config.OffHeap); nil: all on the heap

	mu               sync.Mutex // guards tree, sieve, the entry links, fills, purgeBuf, ghost, newSum, newCount, and all writes to bytes and entries
	fills            [nShards]fill
	tree             radix.Tree[entry]
	sieve            sieve.Queue[entry, *entry]
	purgeBuf         []*node // the batch DeletePrefix is dropping, kept to be reused
	ghost            ghost
	newSum, newCount int64 // summed weight and number of recent new entries, for their mean

	bytes atomic.Int64 // summed weight of present entries
	// slabBytes is the part of bytes that is blocks of the arena; changed
	// only under mu, or by a lock-free Set that swaps a held out.
	slabBytes atomic.Int64
	entries   atomic.Int64

	evictions, prefixDeletes atomic.Int64
}

// lockSpins is how many times lock tries the writer mutex, yielding the
// processor between tries, before it blocks on it.
const lockSpins = 100

// lock takes the writer mutex. A Set holds it for about a microsecond, far
// less than a blocked goroutine takes to be woken: sync.Mutex spins only a
// few hundred cycles before it parks the waiter, and on two cores a writer
// that parked each time it met another made writes slower with two cores
// than with one (GetSet7525 at -cpu 2 in bench/cachebench). So a writer
// first yields and retries, which runs whatever else is runnable on its
// processor meanwhile, and blocks only when the holder keeps the mutex for
// longer (a purge batch, a table rebuild): at most lockSpins yields, tens
// of microseconds. Uncontended, the first try takes it. A parked waiter
// is not starved: sync.Mutex hands the mutex to a waiter that has waited a
// millisecond, and TryLock fails meanwhile.
func (c *Cache) lock() {
	for range lockSpins {
		if c.mu.TryLock() {
			return
		}
		runtime.Gosched()
	}
	c.mu.Lock()
}

// New returns an empty cache.
func New(cfg Config) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	frac := cfg.MaxEntryFraction
	if frac == 0 {
		frac = DefaultMaxEntryFraction
	}
	c := &Cache{
		seed:     maphash.MakeSeed(),
		maxBytes: cfg.MaxBytes,
		maxEntry: int64(frac * float64(cfg.MaxBytes)),
	}
	for i := range c.shards {
		c.shards[i].tab.Store(newTable(1))
		c.shards[i].fill = &c.fills[i]
	}
	if cfg.OffHeap {
		a, err := slab.New(arenaFactor*cfg.MaxBytes, cfg.OnOffHeap, offHeapStep(cfg.MaxBytes))
		if err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
		c.arena = a
	}
	return c, nil
}

// weight is what an entry costs against MaxBytes: the heap it holds. The
// tile's part is tile.Cost, the one place that counts a Tile's fields.
// MaxEntry is the heaviest entry the cache admits: a tile whose body alone
// is larger is never kept, and a server streams it instead of reading it
// whole per request.
func (c *Cache) MaxEntry() int64 { return c.maxEntry }

func weight(key string, t *tile.Tile) int64 {
	return tile.AllocBytes(len(key)) + t.Cost() + EntryOverhead
}

// hash returns key's index hash and its shard.
// Bit 0 is left clear for the visited bit it shares entry.meta with.
func (c *Cache) hash(key string) (h uint32, s *shard) {
	h = uint32(maphash.String(c.seed, key)) &^ visitedBit
	return h, c.shardOf(h)
}

func (c *Cache) shardOf(h uint32) *shard { return &c.shards[h>>(32-shardBits)] }

// Get returns the tile stored under key. It takes no lock and, on a hit of
// a tile on the heap, allocates nothing; the visited bit is written only
// when it is not yet set, so hot keys read by many cores keep their cache
// line shared. A tile whose body is off the heap (Config.OffHeap) is
// returned as a copy with its body on the heap, which the caller may keep;
// Acquire hands out the stored bytes themselves.
func (c *Cache) Get(key string) (*tile.Tile, bool) {
	for {
		t, ok := c.get(key)
		if !ok {
			return nil, false
		}
		if t, ok := c.onHeap(t); ok {
			return t, true
		}
	}
}

// get is Get of the stored tile itself.
func (c *Cache) get(key string) (*tile.Tile, bool) {
	h, s := c.hash(key)
	st := &c.reads[h&(nStripes-1)]
	if n := s.tab.Load().find(key, h); n != nil {
		e := n.Value()
		if t := e.tile.Load(); t != nil {
			if e.meta.Load()&visitedBit == 0 {
				e.meta.Or(visitedBit)
			}
			st.hits.Add(1)
			return t, true
		}
	}
	st.misses.Add(1)
	return nil, false
}

// Set stores t under key, replacing any current entry, and evicts as needed
// to stay within MaxBytes. It reports false if the entry is too heavy to be
// admitted (or t is nil); a present older version of key is then removed, so
// the cache never keeps serving a version its caller has replaced.
//
// Replacing a present entry by a tile of the same weight (a revalidated
// tile with a new StoredAt, a fill that raced another) changes neither the
// tree, the queue nor the byte count: the new tile is swapped in where the
// old one was and the entry counts as hit. For a tile on the heap that
// takes no lock. A replacement of another weight re-enters the queue at the
// head.
//
// With Config.OffHeap, t's body (if of MinOffHeap bytes or more) is copied
// into the arena: t itself is not kept, and its body may be a block of the
// arena a Lease holds (a revalidated copy of a leased tile).
func (c *Cache) Set(key string, t *tile.Tile) bool { return c.set(key, t, c.offHeap(t)) }

// SetHeap is Set keeping t on the heap whatever its size: an entry Get
// hands out as it is, never copied (a decoded variant read through Get).
func (c *Cache) SetHeap(key string, t *tile.Tile) bool { return c.set(key, t, false) }

func (c *Cache) set(key string, t *tile.Tile, offHeap bool) bool {
	if !offHeap && t != nil {
		t = c.heapOwned(t)
	}
	h, s := c.hash(key)
	w := int64(math.MaxInt64)
	switch {
	case offHeap:
		w = weighOffHeap(key, t)
	case t != nil:
		w = weight(key, t)
	}
	if w > c.maxEntry {
		c.lock()
		if n := s.tab.Load().find(key, h); n != nil {
			c.tree.Remove(key)
			c.drop(n)
		}
		c.mu.Unlock()
		return false
	}
	c.reads[h&(nStripes-1)].sets.Add(1)
	if !offHeap && c.swapInPlace(s, key, h, t, w) {
		return true
	}
	c.lock()
	defer c.mu.Unlock()
	n := s.tab.Load().find(key, h)
	if pw := packWeight(w); n != nil && offHeap && pw != 0 && n.Value().w.Load() == pw && n.Value().tile.Load() != nil {
		// The same weight off the heap: a new block, the same place.
		if c.swapLocked(n.Value(), t) {
			return true
		}
	}
	return c.insertLocked(s, n, key, h, t, w, offHeap)
}

// insertLocked stores t, of weight w, under key: in n, key's present node,
// or a new one. It evicts to make room, and reports false when an off-heap
// body found no room even with every other entry gone. c.mu is held.
func (c *Cache) insertLocked(s *shard, n *node, key string, h uint32, t *tile.Tile, w int64, offHeap bool) bool {
	if n != nil {
		// A replacement is a new version: it leaves its place in the queue
		// (moving the hand off it) and re-enters at the head unvisited.
		c.sieve.Remove(n.Value())
		c.bytes.Add(-n.Value().weight(key))
	}
	// Whether a new key is on probation is asked before evicting, which
	// may push its key out of the ghost.
	probation := n == nil && c.onProbation(h, w)
	// Evict before inserting, as SIEVE does, so the hand never reaches the
	// newcomer it is making room for; the loop ends because w <= maxEntry <=
	// maxBytes.
	for c.bytes.Load()+w > c.maxBytes {
		c.evict()
	}
	stored := t
	var hd *held
	if offHeap {
		if hd = c.hold(t); hd == nil {
			// No run of the arena holds it even with every other entry
			// gone (leased blocks of evicted entries take it): refused,
			// and the version it replaces goes too.
			if n != nil {
				c.bytes.Add(n.Value().weight(key)) // forget takes it off again
				c.tree.Remove(key)
				c.forget(n)
			}
			return false
		}
		stored = &hd.Tile
	}
	var e *entry
	if n == nil {
		n, _ = c.tree.Put(key)
		c.entries.Add(1)
		e = n.Value()
		e.meta.Store(h) // unvisited; insertIndex reads the hash
		c.insertIndex(n, s)
	} else {
		e = n.Value()
		e.meta.Store(h) // unvisited
	}
	e.w.Store(packWeight(w))
	c.letGo(e.tile.Swap(stored))
	if hd != nil {
		c.fitResident(w - hd.blk.Size())
		c.slabBytes.Add(hd.blk.Size())
	}
	if probation {
		c.sieve.PushHand(e)
	} else {
		c.sieve.PushHead(e)
	}
	c.bytes.Add(w)
	return true
}

// packWeight is w as entry.w keeps it: 0 if it does not fit.
func packWeight(w int64) uint32 {
	if w <= 0 || w > math.MaxUint32 {
		return 0
	}
	return uint32(w)
}

// swapInPlace replaces the tile of key's present entry by t, of weight w, if
// the entry's accounted weight is w. The old tile is loaded before the
// weight, and a writer stores the weight before the tile it weighs, so a
// weight read after old belongs to old or to a newer tile; in the latter
// case the newer tile's store follows and overwrites t, or has happened and
// the compare-and-swap fails (as it does if the entry was removed). Either
// way the accounted weight ends up that of the tile stored.
func (c *Cache) swapInPlace(s *shard, key string, h uint32, t *tile.Tile, w int64) bool {
	n := s.tab.Load().find(key, h)
	if n == nil {
		return false
	}
	e := n.Value()
	old := e.tile.Load()
	if old == nil {
		return false
	}
	if ew := e.w.Load(); ew == 0 || int64(ew) != w || !e.tile.CompareAndSwap(old, t) {
		return false
	}
	if e.meta.Load()&visitedBit == 0 {
		e.meta.Or(visitedBit)
	}
	c.letGo(old)
	return true
}

// swapLocked replaces the tile of e, whose accounted weight is t's off the
// heap, by a copy of t in a new block, keeping its place in the queue as
// swapInPlace does. It reports false, having changed nothing, when no free
// run holds t without evicting. c.mu is held.
func (c *Cache) swapLocked(e *entry, t *tile.Tile) bool {
	hd := c.tryHold(t)
	if hd == nil {
		return false
	}
	c.letGo(e.tile.Swap(&hd.Tile))
	c.slabBytes.Add(hd.blk.Size())
	if e.meta.Load()&visitedBit == 0 {
		e.meta.Or(visitedBit)
	}
	return true
}

// Delete removes key and reports whether it was present.
func (c *Cache) Delete(key string) bool {
	h, s := c.hash(key)
	c.lock()
	defer c.mu.Unlock()
	n := s.tab.Load().find(key, h)
	if n == nil {
		return false
	}
	c.tree.Remove(key)
	c.drop(n)
	return true
}

// DeletePrefix removes every key that starts with prefix ("" clears the
// cache; "osm/1" also removes "osm/12/…") and returns how many entries and
// bytes (weights) it freed. It works in batches of up to purgeBatch keys,
// each detached from the tree (whole subtrees at a time) and dropped under
// one hold of the writer lock, so Sets queue behind a batch, not the whole
// purge; a purge of a directory or less is a single batch.
func (c *Cache) DeletePrefix(prefix string) (entries int, bytes int64) {
	c.prefixDeletes.Add(1)
	from := ""
	for {
		c.lock()
		batch := c.tree.DeletePrefixNodesFrom(c.purgeBuf[:0], prefix, from, purgeBatch)
		c.purgeBuf = batch
		n := len(batch)
		bytes += c.dropBatch(batch)
		entries += n
		if n == purgeBatch {
			// Resume at the successor of the last removed key: keys Set
			// behind it meanwhile are newer than the purge and stay.
			from = batch[n-1].Key() + "\x00"
		}
		clear(batch) // do not pin removed nodes
		c.mu.Unlock()
		if n < purgeBatch {
			return entries, bytes
		}
	}
}

// walkFrom walks nodes under prefix after the key after; started says a
// previous chunk ended at after, which matters only when after is "" (the
// radix API reads "" as "from the start").
func (c *Cache) walkFrom(prefix, after string, started bool, fn func(*node) bool) {
	skipEmpty := started && after == ""
	c.tree.WalkPrefixNodesFrom(prefix, after, func(n *node) bool {
		if skipEmpty && n.Key() == "" {
			return true
		}
		return fn(n)
	})
}

// Item describes one cached entry for listings.
type Item struct {
	Key  string
	Size int64 // body bytes
	ETag string
}

// Scan calls fn for the keys under prefix in ascending order, at most limit
// of them (limit <= 0: no limit), until fn returns false. It collects up to
// scanChunk items under the writer lock, releases it, delivers them and
// resumes after the last key, so fn may take its time (or call the cache)
// and writers keep going. Each chunk is a consistent snapshot; keys changed
// between chunks may or may not be seen.
func (c *Cache) Scan(prefix string, limit int, fn func(Item) bool) {
	var buf [scanChunk]Item
	next := func(items []Item, after string, first bool, want int) []Item {
		c.lock()
		defer c.mu.Unlock()
		c.walkFrom(prefix, after, !first, func(n *node) bool {
			t := n.Value().tile.Load()
			items = append(items, Item{Key: n.Key(), Size: t.Size(), ETag: t.ETag})
			return len(items) < want
		})
		return items
	}
	chunk.Scan(buf[:0], limit, func(it Item) string { return it.Key }, next, fn)
}

// Stats is a snapshot of the counters.
type Stats struct {
	Hits          int64 `json:"hits"`
	Misses        int64 `json:"misses"`
	Sets          int64 `json:"sets"`
	Evictions     int64 `json:"evictions"`
	PrefixDeletes int64 `json:"prefix_deletes"`
	Entries       int64 `json:"entries"`
	Bytes         int64 `json:"bytes"`
	MaxBytes      int64 `json:"max_bytes"`
	// OffHeapBytes is the resident size of the bodies kept off the heap
	// (Config.OffHeap; see OffHeapBytes).
	OffHeapBytes int64 `json:"off_heap_bytes"`
}

// Stats returns the counters. They are read one by one, not as one atomic
// snapshot.
func (c *Cache) Stats() Stats {
	st := Stats{
		Evictions:     c.evictions.Load(),
		PrefixDeletes: c.prefixDeletes.Load(),
		Entries:       c.entries.Load(),
		Bytes:         c.bytes.Load(),
		MaxBytes:      c.maxBytes,
		OffHeapBytes:  c.OffHeapBytes(),
	}
	for i := range c.reads {
		st.Hits += c.reads[i].hits.Load()
		st.Misses += c.reads[i].misses.Load()
		st.Sets += c.reads[i].sets.Load()
	}
	return st
}

// MaxBytes returns the byte bound.
func (c *Cache) MaxBytes() int64 { return c.maxBytes }

// Len returns the number of entries.
func (c *Cache) Len() int { return int(c.entries.Load()) }

// Bytes returns the summed weight of the entries.
func (c *Cache) Bytes() int64 { return c.bytes.Load() }

// evict removes the entry the SIEVE hand picks. c.mu is held and the queue
// is not empty.
func (c *Cache) evict() {
	e := c.sieve.Evict()
	n := radix.NodeOf(e)
	c.ghost.add(e.hash(), int(c.entries.Load())/ghostFrac)
	c.tree.Remove(n.Key())
	c.forget(n)
	c.evictions.Add(1)
}

// drop takes a node that is already out of the tree off the queue and the
// index, and returns its weight. c.mu is held.
func (c *Cache) drop(n *node) int64 {
	c.sieve.Remove(n.Value())
	return c.forget(n)
}

// forget takes a node that is out of the tree and the queue off the index,
// and returns its weight. c.mu is held.
func (c *Cache) forget(n *node) int64 {
	e := n.Value()
	w := e.weight(n.Key())
	c.letGo(e.tile.Swap(nil)) // a reader that already found n now misses
	c.removeIndex(n)
	c.bytes.Add(-w)
	c.entries.Add(-1)
	return w
}

// dropBatch is drop for many nodes, with the counters updated once. c.mu is
// held.
func (c *Cache) dropBatch(batch []*node) int64 {
	// A batch's index groups and queue neighbours are scattered over the
	// heap. A first pass only loads them (and sums the weights): the loads
	// do not depend on one another, so the CPU overlaps their cache misses.
	// The second pass then writes to lines already in cache; done in one
	// pass, every locked store (which is what an atomic store is on amd64)
	// would stall on its own miss in turn.
	var w int64
	for _, n := range batch {
		e := n.Value()
		w += e.weight(n.Key())
		h := e.hash()
		t := c.shardOf(h).tab.Load()
		t.groups[t.start(h)].ctrl.Load()
		older, newer := c.sieve.Neighbours(e)
		if older != nil {
			older.meta.Load()
		}
		if newer != nil {
			newer.meta.Load()
		}
	}
	for _, n := range batch {
		c.sieve.Remove(n.Value())
		c.letGo(n.Value().tile.Swap(nil)) // a reader that already found n now misses
		c.removeIndex(n)
	}
	c.bytes.Add(-w)
	c.entries.Add(-int64(len(batch)))
	return w
}

// Index load: a table is rebuilt before more than maxLoad of its slots are
// used (live or deleted), to rebuildLoad of live ones; a purge that leaves
// fewer than minLoad live shrinks it. With tags, probes stay short at 7/8,
// and a fuller index is fewer bytes per entry.
const (
	maxLoadNum, maxLoadDen         = 7, 8
	rebuildLoadNum, rebuildLoadDen = 7, 10
	minLoadDen                     = 8
)

// insertIndex adds n, which is not in the index, to its shard s. c.mu is
// held and n's hash is set.
func (c *Cache) insertIndex(n *node, s *shard) {
	h := n.Value().hash()
	t := s.tab.Load()
	if int(s.fill.used+1)*maxLoadDen > t.slotCount()*maxLoadNum {
		t = c.rebuild(s, t, int(s.fill.live)+1)
	}
	if place(t, n, h) {
		s.fill.used++
	}
	s.fill.live++
}

// place stores n in the first free slot of its probe sequence in t and
// reports whether that slot was empty (not deleted). The slot is written
// before its control byte, so a reader that sees the tag finds the node.
func place(t *table, n *node, h uint32) (wasEmpty bool) {
	for g := t.start(h); ; {
		grp := &t.groups[g]
		ctrl := grp.ctrl.Load()
		if free := ctrl & slotMSBs; free != 0 {
			shift := uint(bits.TrailingZeros64(free)) &^ 7
			wasEmpty = ctrl>>shift&0xff == ctrlEmpty
			grp.slots[shift>>3].Store(n)
			grp.ctrl.Store(ctrl&^(0xff<<shift) | tagOf(h)<<shift)
			return wasEmpty
		}
		if g++; g == len(t.groups) {
			g = 0
		}
	}
}

// removeIndex takes n out of its shard's index, and shrinks a shard that a
// purge has mostly emptied. c.mu is held.
func (c *Cache) removeIndex(n *node) {
	h := n.Value().hash()
	s := c.shardOf(h)
	t := s.tab.Load()
	tag := tagOf(h)
	for g := t.start(h); ; {
		grp := &t.groups[g]
		ctrl := grp.ctrl.Load()
		for m := matchTag(ctrl, tag); m != 0; m &= m - 1 {
			shift := uint(bits.TrailingZeros64(m)) &^ 7
			if grp.slots[shift>>3].Load() != n {
				continue
			}
			// A group that has an empty slot has had one ever since the
			// table was built (a slot goes back to empty only in such a
			// group), so no probe ever passed over it: this slot may be
			// empty again too. Otherwise it must stay a deleted marker.
			mark := uint64(ctrlDeleted)
			if matchEmpty(ctrl) != 0 {
				mark = ctrlEmpty
				s.fill.used--
			}
			grp.ctrl.Store(ctrl&^(0xff<<shift) | mark<<shift)
			grp.slots[shift>>3].Store(nil) // let n be collected
			s.fill.live--
			if len(t.groups) > 1 && int(s.fill.live)*minLoadDen < t.slotCount() {
				c.rebuild(s, t, int(s.fill.live))
			}
			return
		}
		if g++; g == len(t.groups) {
			g = 0
		}
	}
}

// rebuild publishes a new table for s sized for want keys at rebuildLoad,
// holding the live nodes of old and no deleted slots. Readers holding the
// old table keep probing it safely: its removed nodes have a nil tile.
func (c *Cache) rebuild(s *shard, old *table, want int) *table {
	slots := (want*rebuildLoadDen + rebuildLoadNum - 1) / rebuildLoadNum
	t := newTable(max(1, (slots+groupSlots-1)/groupSlots))
	var live int32
	for g := range old.groups {
		grp := &old.groups[g]
		ctrl := grp.ctrl.Load()
		for i := range groupSlots {
			if ctrl>>(8*i)&ctrlEmpty != 0 {
				continue // empty or deleted
			}
			n := grp.slots[i].Load()
			place(t, n, n.Value().hash())
			live++
		}
	}
	s.fill.used, s.fill.live = live, live
	s.tab.Store(t)
	return t
}

// Probation. An entry heavier than the mean of recent new entries, whose key
// has not been evicted lately (it is not in the ghost), enters the queue
// where the hand looks next instead of at the head: unless a Get hits it
// before the next eviction, it is the entry evicted, and its key goes to the
// ghost. A key that misses again while in the ghost has shown it is wanted
// and enters at the head. Light and returning entries thus keep the room a
// heavy one-off would take, which is what raises the hit ratio (see
// docs/BENCHMARKS.md); the policy is SIEVE all the same: one queue, one
// visited bit, a hand, survivors never move.
const (
	// ghostFrac is the ghost's capacity as a fraction of the entries: a
	// smaller ghost admits fewer heavy keys at the head, which raises the
	// object hit ratio and lowers the byte hit ratio; a quarter keeps the
	// byte hit ratio at what plain SIEVE gets.
	ghostFrac = 4 // capacity = entries / ghostFrac
	// meanWindow new entries make up the mean; the sums are halved when
	// it is reached, so the mean follows a change of workload.
	meanWindow = 1 << 16
)

// onProbation records w as a new entry's weight and reports whether the
// entry with hash h goes on probation. c.mu is held.
func (c *Cache) onProbation(h uint32, w int64) bool {
	c.newSum += w
	c.newCount++
	heavy := w*c.newCount > c.newSum // w above the mean, without dividing
	if c.newCount >= meanWindow {
		c.newSum, c.newCount = c.newSum/2, c.newCount/2
	}
	if !heavy {
		return false
	}
	return !c.ghost.take(h)
}

// ghost remembers the index hashes of recently evicted keys, in a ring of
// at most a quarter as many as the cache held entries at its fullest (ring
// and set take about 22 bytes per hash, see TestGhostBytes). It is a hint:
// two keys may share a hash, and a key evicted twice is forgotten when its
// older copy leaves the ring. Guarded by Cache.mu.
type ghost struct {
	set  map[uint32]struct{}
	ring []uint32
	pos  int // the ring's oldest slot once it is full
}

// take reports whether h is in the ghost and forgets it.
func (g *ghost) take(h uint32) bool {
	if _, ok := g.set[h]; ok {
		delete(g.set, h)
		return true
	}
	return false
}

// add remembers h, forgetting the oldest hash if the ring holds capacity.
func (g *ghost) add(h uint32, capacity int) {
	if g.set == nil {
		g.set = map[uint32]struct{}{}
	}
	switch {
	case len(g.ring) < capacity:
		g.ring = append(g.ring, h)
	case len(g.ring) == 0:
		return
	default:
		if g.pos >= len(g.ring) {
			g.pos = 0
		}
		delete(g.set, g.ring[g.pos])
		g.ring[g.pos] = h
		g.pos++
	}
	g.set[h] = struct{}{}
}
