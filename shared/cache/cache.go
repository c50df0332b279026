// Package cache is the memory tier: a concurrent, byte-bounded map from tile
// keys to tiles with SIEVE eviction and cheap prefix purges.
//
// What it promises:
//
//   - Safe for any number of goroutines. After any Set returns, the summed
//     weight of the entries (len(key) + len(body) + EntryOverhead each) is at
//     most Config.MaxBytes; an entry heavier than MaxEntryFraction of it is
//     refused.
//   - Get, Set and Delete take expected O(1) time; a Get takes no lock at all
//     and a hit allocates nothing.
//   - Eviction is SIEVE (Zhang et al., "SIEVE is Simpler than LRU", NSDI'24):
//     a FIFO queue, one visited bit per entry set by hits, and a hand that
//     walks from the oldest entry toward the newest, clearing bits and
//     evicting the first unvisited entry. Survivors never move.
//   - DeletePrefix costs the number of keys it removes, not the cache size,
//     and never stops readers: a key is unreachable once the call returns
//     (Get of it misses), while other keys stay readable throughout. Keys Set
//     under the prefix while it runs may or may not survive it.
//   - Scan streams keys under a prefix in ascending order in small chunks,
//     so it neither copies the index nor holds writers off for long.
//
// Design. Every key lives in a radix tree (shared/radix) whose nodes are the
// cache entries themselves: the node of a key carries the SIEVE links, the
// visited bit and the tile, so one 64-byte allocation is all the per-key
// bookkeeping besides the index slot. The tree, the queue and the byte count
// change only under one writer mutex. Point reads go through a sharded
// open-addressing hash index of node pointers that readers probe with atomic
// loads only; writers (under the mutex) publish into it with atomic stores
// and replace a shard's table wholesale when it grows.
package cache

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"

	"github.com/tilesieve/tilesieve/shared/radix"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// EntryOverhead is the weight charged per entry on top of len(key) and
// len(body): the measured bookkeeping per entry (radix node with SIEVE
// links, its share of inner nodes and child arrays, and the index slot; see
// TestBookkeepingBytes), rounded up.
const EntryOverhead = 100

// DefaultMaxEntryFraction is used when Config.MaxEntryFraction is 0. One
// eighth keeps a single giant tile from flushing most of the cache.
const DefaultMaxEntryFraction = 0.125

const (
	shardBits = 8 // 256 index shards: a table rebuild copies 1/256 of the keys
	nShards   = 1 << shardBits
	minSlots  = 8

	// purgeBatch keys are removed per hold of the writer lock by a large
	// DeletePrefix, so Sets queue behind a batch, not the whole purge.
	purgeBatch = 256
	// scanChunk items are collected per hold of the writer lock by Scan.
	scanChunk = 64
)

// Config configures a Cache.
type Config struct {
	MaxBytes         int64   // the byte bound; required > 0
	MaxEntryFraction float64 // an entry heavier than this fraction of MaxBytes is not admitted; DefaultMaxEntryFraction when 0
}

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
// and visited, both atomically; the links belong to the writer.
type entry struct {
	older, newer *node                     // SIEVE queue links (toward tail, toward head); guarded by Cache.mu
	tile         atomic.Pointer[tile.Tile] // nil once the entry is removed, so a racing reader misses
	visited      atomic.Uint32             // SIEVE's bit: set by hits, cleared by the hand
}

type node = radix.Node[entry]

// tombstone marks an index slot whose node was removed: probes continue past
// it (a nil slot ends them), inserts may reuse it.
var tombstone = new(node)

// table is one shard's open-addressing index with linear probing. Its size
// never changes; a full table is replaced by a new one, so a reader that
// loaded the old table still probes a consistent (if slightly stale) array.
type table struct {
	slots []atomic.Pointer[node]
}

func newTable(size int) *table {
	return &table{slots: make([]atomic.Pointer[node], size)}
}

// start maps a hash to the first slot to probe. Multiply-and-shift instead
// of a mask lets tables grow by half rather than double, which keeps the
// index at 11-16 bytes per entry. It uses the low 32 bits; the shard is
// picked by the top bits.
func (t *table) start(h uint64) int {
	return int((h & math.MaxUint32) * uint64(len(t.slots)) >> 32)
}

// find returns the node for key, or nil. A table always has a nil slot (see
// insertIndex), so the probe ends.
func (t *table) find(key string, h uint64) *node {
	for i := t.start(h); ; {
		n := t.slots[i].Load()
		if n == nil {
			return nil
		}
		if n != tombstone && n.Key() == key {
			return n
		}
		if i++; i == len(t.slots) {
			i = 0
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
	live, used int32 // guarded by Cache.mu; used counts live slots plus tombstones
}

// stripe holds read counters. Get updates the stripe of its key's shard, so
// two cores reading different keys rarely write the same cache line.
type stripe struct {
	hits, misses atomic.Int64
	_            [48]byte
}

const nStripes = 64

// Cache is the memory tier. See the package doc.
type Cache struct {
	seed   maphash.Seed
	shards [nShards]shard
	reads  [nStripes]stripe

	maxBytes int64
	maxEntry int64 // heaviest admitted entry

	mu               sync.Mutex // guards tree, head, tail, hand, the entry links, fills, and all writes to bytes and entries
	fills            [nShards]fill
	tree             radix.Tree[entry]
	head, tail, hand *node // head is the newest entry; the hand moves from tail toward head

	bytes   atomic.Int64 // summed weight of present entries
	entries atomic.Int64

	sets, evictions, prefixDeletes atomic.Int64
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
		c.shards[i].tab.Store(newTable(minSlots))
		c.shards[i].fill = &c.fills[i]
	}
	return c, nil
}

func weight(key string, t *tile.Tile) int64 {
	return int64(len(key)) + t.Size() + EntryOverhead
}

func (c *Cache) hash(key string) (h uint64, s *shard) {
	h = maphash.String(c.seed, key)
	return h, &c.shards[h>>(64-shardBits)]
}

// Get returns the tile stored under key. It takes no lock and, on a hit,
// allocates nothing; the visited bit is written only when it is not yet set,
// so hot keys read by many cores keep their cache line shared.
func (c *Cache) Get(key string) (*tile.Tile, bool) {
	h, s := c.hash(key)
	st := &c.reads[h&(nStripes-1)]
	if n := s.tab.Load().find(key, h); n != nil {
		e := n.Value()
		if t := e.tile.Load(); t != nil {
			if e.visited.Load() == 0 {
				e.visited.Store(1)
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
func (c *Cache) Set(key string, t *tile.Tile) bool {
	h, s := c.hash(key)
	if t == nil || weight(key, t) > c.maxEntry {
		c.mu.Lock()
		if n := s.tab.Load().find(key, h); n != nil {
			c.tree.Remove(key)
			c.drop(n, h, s)
		}
		c.mu.Unlock()
		return false
	}
	w := weight(key, t)
	c.sets.Add(1)
	c.mu.Lock()
	n := s.tab.Load().find(key, h)
	if n != nil {
		// A replacement is a new version: it leaves its place in the queue
		// (moving the hand off it) and re-enters at the head unvisited.
		c.unlink(n)
		c.bytes.Add(-weight(key, n.Value().tile.Load()))
	}
	// Evict before inserting, as SIEVE does, so the hand never reaches the
	// newcomer; the loop ends because w <= maxEntry <= maxBytes.
	for c.bytes.Load()+w > c.maxBytes {
		c.evict()
	}
	if n == nil {
		n, _ = c.tree.Put(key)
		c.entries.Add(1)
		c.insertIndex(n, h, s)
	}
	e := n.Value()
	e.visited.Store(0)
	e.tile.Store(t)
	c.pushHead(n)
	c.bytes.Add(w)
	c.mu.Unlock()
	return true
}

// Delete removes key and reports whether it was present.
func (c *Cache) Delete(key string) bool {
	h, s := c.hash(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	n := s.tab.Load().find(key, h)
	if n == nil {
		return false
	}
	c.tree.Remove(key)
	c.drop(n, h, s)
	return true
}

// DeletePrefix removes every key that starts with prefix ("" clears the
// cache; "osm/1" also removes "osm/12/…") and returns how many entries and
// bytes (weights) it freed. A purge of up to purgeBatch keys detaches their
// subtree under one hold of the writer lock; a larger one works in batches,
// releasing the lock in between so Sets are not starved.
func (c *Cache) DeletePrefix(prefix string) (entries int, bytes int64) {
	c.prefixDeletes.Add(1)
	drop := func(n *node) {
		h, s := c.hash(n.Key())
		bytes += c.drop(n, h, s)
		entries++
	}
	c.mu.Lock()
	if c.tree.CountPrefix(prefix) <= purgeBatch {
		c.tree.DeletePrefixNodes(prefix, drop)
		c.mu.Unlock()
		return entries, bytes
	}
	c.mu.Unlock()
	batch := make([]*node, 0, purgeBatch)
	after, started := "", false
	for {
		batch = batch[:0]
		c.mu.Lock()
		c.walkFrom(prefix, after, started, func(n *node) bool {
			batch = append(batch, n)
			return len(batch) < purgeBatch
		})
		for _, n := range batch {
			c.tree.Remove(n.Key())
			drop(n)
		}
		c.mu.Unlock()
		if len(batch) < purgeBatch {
			return entries, bytes
		}
		// Resume after the last removed key: keys Set behind the cursor
		// meanwhile are newer than the purge and stay.
		after, started = batch[len(batch)-1].Key(), true
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
	after, started, delivered := "", false, 0
	for {
		want := scanChunk
		if limit > 0 {
			want = min(want, limit-delivered)
		}
		items := buf[:0]
		c.mu.Lock()
		c.walkFrom(prefix, after, started, func(n *node) bool {
			t := n.Value().tile.Load()
			items = append(items, Item{Key: n.Key(), Size: t.Size(), ETag: t.ETag})
			return len(items) < want
		})
		c.mu.Unlock()
		for _, it := range items {
			if !fn(it) {
				return
			}
		}
		delivered += len(items)
		if len(items) < want || (limit > 0 && delivered >= limit) {
			return
		}
		after, started = items[len(items)-1].Key, true
	}
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
}

// Stats returns the counters. They are read one by one, not as one atomic
// snapshot.
func (c *Cache) Stats() Stats {
	st := Stats{
		Sets:          c.sets.Load(),
		Evictions:     c.evictions.Load(),
		PrefixDeletes: c.prefixDeletes.Load(),
		Entries:       c.entries.Load(),
		Bytes:         c.bytes.Load(),
		MaxBytes:      c.maxBytes,
	}
	for i := range c.reads {
		st.Hits += c.reads[i].hits.Load()
		st.Misses += c.reads[i].misses.Load()
	}
	return st
}

// Len returns the number of entries.
func (c *Cache) Len() int { return int(c.entries.Load()) }

// Bytes returns the summed weight of the entries.
func (c *Cache) Bytes() int64 { return c.bytes.Load() }

// evict removes one entry chosen by the SIEVE hand. c.mu is held and the
// queue is not empty.
func (c *Cache) evict() {
	o := c.hand
	if o == nil {
		o = c.tail
	}
	for {
		e := o.Value()
		if e.visited.Load() == 0 {
			break
		}
		e.visited.Store(0)
		if o = e.newer; o == nil {
			o = c.tail // passed the head: wrap around
		}
	}
	c.hand = o.Value().newer
	c.tree.Remove(o.Key())
	h, s := c.hash(o.Key())
	c.drop(o, h, s)
	c.evictions.Add(1)
}

// drop takes a node that is already out of the tree off the queue and the
// index, and returns its weight. c.mu is held.
func (c *Cache) drop(n *node, h uint64, s *shard) int64 {
	e := n.Value()
	w := weight(n.Key(), e.tile.Load())
	c.unlink(n)
	e.tile.Store(nil) // a reader that already found n now misses
	e.visited.Store(0)
	c.removeIndex(n, h, s)
	c.bytes.Add(-w)
	c.entries.Add(-1)
	return w
}

// pushHead enqueues n as the newest entry. c.mu is held.
func (c *Cache) pushHead(n *node) {
	e := n.Value()
	e.older, e.newer = c.head, nil
	if c.head != nil {
		c.head.Value().newer = n
	} else {
		c.tail = n
	}
	c.head = n
}

// unlink takes n off the queue. If the hand is on n it moves to n's newer
// neighbour, the entry it would have examined next. c.mu is held.
func (c *Cache) unlink(n *node) {
	e := n.Value()
	if c.hand == n {
		c.hand = e.newer
	}
	if e.older != nil {
		e.older.Value().newer = e.newer
	} else {
		c.tail = e.newer
	}
	if e.newer != nil {
		e.newer.Value().older = e.older
	} else {
		c.head = e.older
	}
	e.older, e.newer = nil, nil
}

// insertIndex adds n, which is not in the index, to its shard. c.mu is held.
func (c *Cache) insertIndex(n *node, h uint64, s *shard) {
	t := s.tab.Load()
	// Keep at most 3/4 of the slots used, so probes stay short and every
	// probe meets a nil slot.
	if int(s.fill.used+1)*4 > len(t.slots)*3 {
		t = c.rebuild(s, t, int(s.fill.live)+1)
	}
	for i := t.start(h); ; {
		old := t.slots[i].Load()
		if old == nil || old == tombstone {
			t.slots[i].Store(n)
			if old == nil {
				s.fill.used++
			}
			s.fill.live++
			return
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// removeIndex replaces n's slot with a tombstone, and shrinks a shard that a
// purge has mostly emptied. c.mu is held.
func (c *Cache) removeIndex(n *node, h uint64, s *shard) {
	t := s.tab.Load()
	for i := t.start(h); ; {
		if t.slots[i].Load() == n {
			t.slots[i].Store(tombstone)
			s.fill.live--
			break
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
	if len(t.slots) > minSlots && int(s.fill.live)*8 < len(t.slots) {
		c.rebuild(s, t, int(s.fill.live))
	}
}

// rebuild publishes a new table for s, half full with want keys, holding the
// live nodes of old and no tombstones. Growth at 3/4 full is thus by half.
// Readers holding the old table keep probing it safely: its removed nodes
// have a nil tile.
func (c *Cache) rebuild(s *shard, old *table, want int) *table {
	t := newTable(max(minSlots, 2*want))
	var live int32
	for i := range old.slots {
		n := old.slots[i].Load()
		if n == nil || n == tombstone {
			continue
		}
		j := t.start(maphash.String(c.seed, n.Key()))
		for t.slots[j].Load() != nil {
			if j++; j == len(t.slots) {
				j = 0
			}
		}
		t.slots[j].Store(n)
		live++
	}
	s.fill.used, s.fill.live = live, live
	s.tab.Store(t)
	return t
}
