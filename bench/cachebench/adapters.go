package cachebench

import (
	"strings"
	"sync"

	"github.com/Yiling-J/theine-go"
	"github.com/dgraph-io/ristretto/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/maypok86/otter/v2"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// Cache is what every implementation under test is driven through. Weight is
// len(key)+len(body); implementations that weigh entries themselves (otter's
// weigher, theine's cost function) compute the same number.
type Cache interface {
	Get(key string) (*tile.Tile, bool)
	Set(key string, t *tile.Tile, weight int64) bool
	Delete(key string) bool
	// DeletePrefix removes every key starting with prefix and reports how
	// many it removed. Peers without a prefix delete scan their keys, as a
	// user of them would.
	DeletePrefix(prefix string) int
	// Sync waits for buffered writes to be applied (ristretto, theine);
	// a no-op for synchronous caches.
	Sync()
	Close()
}

// Impl names an implementation and builds it for a byte budget. meanWeight
// lets entry-bounded caches (hashicorp LRU) pick the entry count that matches
// the budget at the mean entry size.
type Impl struct {
	Name string
	New  func(maxBytes int64, meanWeight float64) (Cache, error)
}

// Throughput lists the implementations of the throughput benchmarks, in
// report order.
func Throughput() []Impl {
	return []Impl{
		{"tilesieve", newTilesieve},
		{"mapmutex", newMapMutex},
		{"otter", newOtter},
		{"theine", newTheine},
		{"ristretto", newRistretto},
		{"lru", newLRU},
	}
}

// HitRatio lists the implementations of the hit-ratio simulation.
func HitRatio() []Impl {
	return []Impl{
		{"tilesieve", newTilesieve},
		{"lru", newLRU},
		{"fifo", newFIFO},
		{"otter", newOtter},
		{"theine", newTheine},
		{"ristretto", newRistretto},
	}
}

// ImplByName finds an implementation in either list.
func ImplByName(name string) (Impl, bool) {
	for _, im := range append(Throughput(), HitRatio()...) {
		if im.Name == name {
			return im, true
		}
	}
	return Impl{}, false
}

func weigh(key string, t *tile.Tile) int64 { return int64(len(key) + len(t.Body)) }

// ---- mapmutex: the baseline -------------------------------------------------

// mapMutex is one map under one mutex. It is byte-bounded with random
// eviction (the first key a map iteration yields), so it holds the same
// budget as the others; DeletePrefix scans the whole map.
type mapMutex struct {
	mu    sync.Mutex // guards m, bytes
	m     map[string]*tile.Tile
	bytes int64
	max   int64
}

func newMapMutex(maxBytes int64, _ float64) (Cache, error) {
	return &mapMutex{m: make(map[string]*tile.Tile), max: maxBytes}, nil
}

func (c *mapMutex) Get(key string) (*tile.Tile, bool) {
	c.mu.Lock()
	t, ok := c.m[key]
	c.mu.Unlock()
	return t, ok
}

func (c *mapMutex) Set(key string, t *tile.Tile, weight int64) bool {
	if weight > c.max {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		c.bytes -= weigh(key, old)
	}
	c.m[key] = t
	c.bytes += weight
	for c.bytes > c.max {
		for k, v := range c.m {
			if k == key {
				continue
			}
			delete(c.m, k)
			c.bytes -= weigh(k, v)
			break
		}
	}
	return true
}

func (c *mapMutex) Delete(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[key]
	if ok {
		delete(c.m, key)
		c.bytes -= weigh(key, t)
	}
	return ok
}

func (c *mapMutex) DeletePrefix(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, t := range c.m {
		if strings.HasPrefix(k, prefix) {
			delete(c.m, k)
			c.bytes -= weigh(k, t)
			n++
		}
	}
	return n
}

func (c *mapMutex) Sync()  {}
func (c *mapMutex) Close() {}

// ---- otter v2 ----------------------------------------------------------------

type otterCache struct {
	c *otter.Cache[string, *tile.Tile]
}

func newOtter(maxBytes int64, _ float64) (Cache, error) {
	c, err := otter.New(&otter.Options[string, *tile.Tile]{
		MaximumWeight: uint64(maxBytes),
		Weigher:       func(k string, t *tile.Tile) uint32 { return uint32(len(k) + len(t.Body)) },
	})
	if err != nil {
		return nil, err
	}
	return &otterCache{c}, nil
}

func (o *otterCache) Get(key string) (*tile.Tile, bool) { return o.c.GetIfPresent(key) }
func (o *otterCache) Set(key string, t *tile.Tile, _ int64) bool {
	o.c.Set(key, t)
	return true
}
func (o *otterCache) Delete(key string) bool { _, ok := o.c.Invalidate(key); return ok }
func (o *otterCache) DeletePrefix(prefix string) int {
	n := 0
	for k := range o.c.Keys() { // weakly consistent iterator; safe to invalidate during it
		if strings.HasPrefix(k, prefix) {
			if _, ok := o.c.Invalidate(k); ok {
				n++
			}
		}
	}
	return n
}
func (o *otterCache) Sync()  { o.c.CleanUp() }
func (o *otterCache) Close() { o.c.StopAllGoroutines() }

// ---- theine -----------------------------------------------------------------

type theineCache struct {
	c *theine.Cache[string, *tile.Tile]
}

func newTheine(maxBytes int64, _ float64) (Cache, error) {
	c, err := theine.NewBuilder[string, *tile.Tile](maxBytes).Build()
	if err != nil {
		return nil, err
	}
	return &theineCache{c}, nil
}

func (t *theineCache) Get(key string) (*tile.Tile, bool) { return t.c.Get(key) }
func (t *theineCache) Set(key string, v *tile.Tile, weight int64) bool {
	return t.c.Set(key, v, weight)
}
func (t *theineCache) Delete(key string) bool {
	_, ok := t.c.Get(key) // theine's Delete reports nothing
	t.c.Delete(key)
	return ok
}

// DeletePrefix collects first: theine's Range holds a shard read lock, so a
// Delete inside it would deadlock.
func (t *theineCache) DeletePrefix(prefix string) int {
	var keys []string
	t.c.Range(func(k string, _ *tile.Tile) bool {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
		return true
	})
	for _, k := range keys {
		t.c.Delete(k)
	}
	return len(keys)
}
func (t *theineCache) Sync()  { t.c.Wait() }
func (t *theineCache) Close() { t.c.Close() }

// ---- ristretto v2 -------------------------------------------------------------

// ristretto keeps only key hashes, so to delete by prefix a user must keep the
// key beside the value: values are wrapped, which costs one allocation per Set.
type rEntry struct {
	key string
	t   *tile.Tile
}

type ristrettoCache struct {
	c *ristretto.Cache[string, *rEntry]
}

func newRistretto(maxBytes int64, meanWeight float64) (Cache, error) {
	items := int64(float64(maxBytes) / meanWeight)
	c, err := ristretto.NewCache(&ristretto.Config[string, *rEntry]{
		NumCounters:        max(10*items, 1000), // 10x the expected entries, as its docs advise
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true, // cost is exactly len(key)+len(body), as for the others
	})
	if err != nil {
		return nil, err
	}
	return &ristrettoCache{c}, nil
}

func (r *ristrettoCache) Get(key string) (*tile.Tile, bool) {
	e, ok := r.c.Get(key)
	if !ok {
		return nil, false
	}
	return e.t, true
}
func (r *ristrettoCache) Set(key string, t *tile.Tile, weight int64) bool {
	return r.c.Set(key, &rEntry{key, t}, weight)
}
func (r *ristrettoCache) Delete(key string) bool {
	_, ok := r.c.Get(key)
	r.c.Del(key)
	return ok
}
func (r *ristrettoCache) DeletePrefix(prefix string) int {
	var keys []string
	r.c.IterValues(func(e *rEntry) bool {
		if strings.HasPrefix(e.key, prefix) {
			keys = append(keys, e.key)
		}
		return false
	})
	for _, k := range keys {
		r.c.Del(k)
	}
	return len(keys)
}
func (r *ristrettoCache) Sync()  { r.c.Wait() }
func (r *ristrettoCache) Close() { r.c.Close() }

// ---- hashicorp golang-lru v2 ---------------------------------------------------

// lruCache is entry-bounded: it gets maxBytes/meanWeight entries, the count
// that matches the byte budget at the workload's mean entry size.
type lruCache struct {
	c *lru.Cache[string, *tile.Tile]
}

func newLRU(maxBytes int64, meanWeight float64) (Cache, error) {
	n := max(int(float64(maxBytes)/meanWeight), 1)
	c, err := lru.New[string, *tile.Tile](n)
	if err != nil {
		return nil, err
	}
	return &lruCache{c}, nil
}

func (l *lruCache) Get(key string) (*tile.Tile, bool) { return l.c.Get(key) }
func (l *lruCache) Set(key string, t *tile.Tile, _ int64) bool {
	l.c.Add(key, t)
	return true
}
func (l *lruCache) Delete(key string) bool { return l.c.Remove(key) }
func (l *lruCache) DeletePrefix(prefix string) int {
	n := 0
	for _, k := range l.c.Keys() {
		if strings.HasPrefix(k, prefix) && l.c.Remove(k) {
			n++
		}
	}
	return n
}
func (l *lruCache) Sync()  {}
func (l *lruCache) Close() {}
