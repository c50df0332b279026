package memory

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func offHeapCache(t testing.TB, maxBytes int64) *Cache {
	t.Helper()
	c, err := New(Config{MaxBytes: maxBytes, OffHeap: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// patterned is a tile whose body of n bytes spells its version v over and
// over, so a reader can tell whether the bytes it holds are still its own.
func patterned(v uint64, n int) *tile.Tile {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], v)
	}
	return &tile.Tile{Body: b, ETag: fmt.Sprint(v)}
}

// intact reports whether t's body still spells its version.
func intact(t *tile.Tile) bool {
	var v uint64
	fmt.Sscan(t.ETag, &v)
	for i := 0; i+8 <= len(t.Body); i += 8 {
		if binary.LittleEndian.Uint64(t.Body[i:]) != v {
			return false
		}
	}
	return true
}

// TestOffHeapRoundTrip: a body of MinOffHeap bytes or more is kept in the
// arena and Acquire hands out those bytes; Get hands out a copy on the
// heap; a smaller body stays on the heap as it was given.
func TestOffHeapRoundTrip(t *testing.T) {
	t.Parallel()
	c := offHeapCache(t, 1<<20)
	big, small := patterned(7, 3*MinOffHeap+5), patterned(8, MinOffHeap-1)
	if !c.Set("big", big) || !c.Set("small", small) {
		t.Fatal("Set refused")
	}
	got, lease, ok := c.Acquire("big")
	if !ok || !bytes.Equal(got.Body, big.Body) || got.ETag != big.ETag {
		t.Fatalf("Acquire: %v, body equal %v", ok, ok && bytes.Equal(got.Body, big.Body))
	}
	if !c.arena.Contains(unsafe.SliceData(got.Body)) || got == big {
		t.Fatal("Acquire did not hand out the arena's bytes")
	}
	lease.Release()
	cp, ok := c.Get("big")
	if !ok || !bytes.Equal(cp.Body, big.Body) || c.arena.Contains(unsafe.SliceData(cp.Body)) {
		t.Fatal("Get did not hand out a copy on the heap")
	}
	if s, lease, _ := c.Acquire("small"); s != small || lease.h != nil {
		t.Fatal("a body under MinOffHeap left the heap")
	}
	if got, want := c.Bytes(), weighOffHeap("big", big)+weight("small", small); got != want {
		t.Fatalf("Bytes %d, want %d", got, want)
	}
	if st := c.Stats(); st.OffHeapBytes <= 0 && c.arena.OffHeap() {
		t.Fatalf("OffHeapBytes %d, want the block's pages", st.OffHeapBytes)
	}
	mustCheck(t, c)
	c.DeletePrefix("")
	if got := c.arena.Resident(); got != 0 {
		t.Fatalf("arena resident %d after a purge of everything, want 0", got)
	}
}

// TestAcquireHitAllocatesNothing: Acquire and Release of an off-heap hit
// allocate nothing.
func TestAcquireHitAllocatesNothing(t *testing.T) {
	c := offHeapCache(t, 1<<20)
	c.Set("k", patterned(1, 2*MinOffHeap))
	if allocs := testing.AllocsPerRun(1000, func() {
		_, lease, ok := c.Acquire("k")
		if !ok {
			t.Fatal("miss")
		}
		lease.Release()
	}); allocs != 0 {
		t.Fatalf("Acquire hit allocates %v times, want 0", allocs)
	}
}

// TestLeaseOutlivesItsEntry: a leased body keeps its bytes through the
// eviction, the purge and the replacement of its entry, and its block is
// freed (not before) when the last lease goes.
func TestLeaseOutlivesItsEntry(t *testing.T) {
	t.Parallel()
	const n = 3 * MinOffHeap
	c := offHeapCache(t, 8*weighOffHeap("k/0", patterned(0, n)))
	for _, gone := range []struct {
		name string
		do   func()
	}{
		{"evicted", func() {
			for i := range 64 {
				c.Set(fmt.Sprintf("x/%d", i), patterned(uint64(100+i), n))
			}
		}},
		{"purged", func() { c.DeletePrefix("k/") }},
		{"replaced", func() { c.Set("k/0", patterned(99, n+1)) }},
		{"deleted", func() { c.Delete("k/0") }},
	} {
		c.DeletePrefix("")
		c.Set("k/0", patterned(5, n))
		got, lease, ok := c.Acquire("k/0")
		if !ok {
			t.Fatal("miss")
		}
		second := lease.Clone()
		gone.do()
		// Whatever took the entry's place was written meanwhile; these
		// bytes are still the leased version's.
		if !intact(got) {
			t.Fatalf("%s: leased bytes were reused", gone.name)
		}
		lease.Release()
		if !intact(got) {
			t.Fatalf("%s: bytes reused with a lease left", gone.name)
		}
		resident := c.arena.Resident()
		second.Release()
		second.Release() // again: nothing
		if gone.name != "replaced" && c.Len() == 0 && c.arena.Resident() != 0 {
			t.Fatalf("%s: %d bytes resident after the last lease of the only block", gone.name, c.arena.Resident())
		}
		if c.arena.Resident() > resident {
			t.Fatalf("%s: the last release grew the arena", gone.name)
		}
		mustCheck(t, c)
	}
}

// TestLeasesUnderChurn: readers hold leased bodies across evictions,
// purges and replacements made by other goroutines, and every byte they
// read is the version they were handed; once all is released and purged,
// the arena holds nothing. Run with -race.
func TestLeasesUnderChurn(t *testing.T) {
	t.Parallel()
	const size = 2 * MinOffHeap
	c := offHeapCache(t, 24*weighOffHeap("t/0/00", patterned(0, size+3*64)))
	var version atomic.Uint64
	var wg sync.WaitGroup
	var reads atomic.Int64
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 5))
			var held []Lease
			var tiles []*tile.Tile
			for range 3000 {
				k := fmt.Sprintf("t/%d/%d", r.IntN(3), r.IntN(16))
				switch p := r.IntN(100); {
				case p < 50:
					if tl, lease, ok := c.Acquire(k); ok {
						reads.Add(1)
						held, tiles = append(held, lease), append(tiles, tl)
					}
				case p < 85:
					c.Set(k, patterned(version.Add(1), size+64*r.IntN(4)))
				case p < 92:
					c.Delete(k)
				default:
					c.DeletePrefix(k[:2+r.IntN(2)])
				}
				// Hold up to a few leases at once, releasing the oldest.
				for len(held) > 4 {
					if !intact(tiles[0]) {
						t.Errorf("a leased body of %s was reused", tiles[0].ETag)
					}
					held[0].Release()
					held, tiles = held[1:], tiles[1:]
				}
			}
			for i := range held {
				if !intact(tiles[i]) {
					t.Errorf("a leased body of %s was reused", tiles[i].ETag)
				}
				held[i].Release()
			}
		})
	}
	wg.Wait()
	mustCheck(t, c)
	if reads.Load() == 0 || c.Stats().Evictions == 0 {
		t.Fatalf("no reads (%d) or no evictions: the test did not churn", reads.Load())
	}
	c.DeletePrefix("")
	if got := c.arena.Resident(); got != 0 {
		t.Fatalf("arena resident %d with no entry and no lease, want 0", got)
	}
}

// TestOffHeapRefusedWhenLeasesFillTheArena: when leased blocks of evicted
// entries leave no free run for a body, the Set is refused and the version
// it would replace is gone.
func TestOffHeapRefusedWhenLeasesFillTheArena(t *testing.T) {
	t.Parallel()
	const n = 64 * MinOffHeap
	c, err := New(Config{MaxBytes: 4 * weighOffHeap("a00", patterned(0, n)), MaxEntryFraction: 1, OffHeap: true})
	if err != nil {
		t.Fatal(err)
	}
	var leases []Lease
	for i := range 64 {
		k := fmt.Sprint("a", i)
		if !c.Set(k, patterned(uint64(i), n)) {
			break
		}
		if _, l, ok := c.Acquire(k); ok {
			leases = append(leases, l)
		}
	}
	if len(leases) < 2*4 {
		t.Fatalf("%d leased bodies filled the arena, want at least its size over the bound", len(leases))
	}
	if !c.Set("b", patterned(1, 64)) { // on the heap
		t.Fatal("Set of a small body refused")
	}
	if c.Set("b", patterned(2, n)) {
		t.Fatal("Set admitted a body no free run holds")
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("the refused Set left the old version of its key")
	}
	mustCheck(t, c)
	for i := range leases {
		leases[i].Release()
	}
	if !c.Set("b", patterned(3, n)) {
		t.Fatal("Set refused once the leases are released")
	}
	mustCheck(t, c)
}

// TestOnOffHeap: the hook hears of the resident size as it moves.
func TestOnOffHeap(t *testing.T) {
	t.Parallel()
	var last atomic.Int64
	last.Store(-1)
	const maxBytes = 64 << 20
	c, err := New(Config{MaxBytes: maxBytes, OffHeap: true, OnOffHeap: func(r int64) { last.Store(r) }})
	if err != nil {
		t.Fatal(err)
	}
	if last.Load() != 0 {
		t.Fatalf("told %d at New, want 0", last.Load())
	}
	for i := range 64 {
		c.Set(fmt.Sprint(i), patterned(uint64(i), 32<<10))
	}
	if got, r := last.Load(), c.OffHeapBytes(); r-got >= offHeapStep(maxBytes) || got <= 0 {
		t.Fatalf("told %d, resident %d", got, r)
	}
	c.DeletePrefix("")
	if got := last.Load(); got != 0 {
		t.Fatalf("told %d after everything left, want 0", got)
	}
}

// TestOffHeapHeapWithinBound: a cache of off-heap bodies filled far past
// its bound holds little live heap (its bookkeeping, not its bodies), and
// its heap and resident arena together stay within 1.1x the bound plus
// heapBase. Not parallel: it reads the process's heap.
func TestOffHeapHeapWithinBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~100 MB")
	}
	const bound = 16 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := offHeapCache(t, bound)
	if !c.arena.OffHeap() {
		if runtime.GOOS == "linux" {
			t.Fatal("no off-heap mapping on Linux, where mapAnon must make one")
		}
		t.Skip("no mapping on this system")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i%1024 != 1023 || c.Stats().Evictions < 2*int64(c.Len()); i++ {
		tl := &tile.Tile{Body: make([]byte, 10<<10+r.IntN(50<<10)), ContentType: "image/jpeg", ETag: fmt.Sprintf(`"%032x"`, r.Uint64())}
		c.Set(fmt.Sprintf("osm/14/%d/%d.jpg", r.IntN(1<<14), i), tl)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	resident := c.OffHeapBytes()
	t.Logf("%d entries charged %d of %d: heap grew %d, arena resident %d", c.Len(), c.Bytes(), bound, grew, resident)
	if limit := int64(bound) * 11 / 10; grew+resident > limit+heapBase {
		t.Errorf("heap %d + arena %d = %d, want <= %d", grew, resident, grew+resident, limit+heapBase)
	}
	if grew > bound/16+heapBase {
		t.Errorf("heap grew %d for a cache of off-heap bodies, want at most %d", grew, bound/16+heapBase)
	}
	runtime.KeepAlive(c)
}

// TestHeapEntryOfLeasedBytes: a tile kept on the heap whose body is a
// leased tile's bytes (or part of them) is kept with a copy of them, so
// that it outlives the lease and is never taken for an off-heap entry.
func TestHeapEntryOfLeasedBytes(t *testing.T) {
	t.Parallel()
	c := offHeapCache(t, 1<<20)
	c.Set("a", patterned(3, 4*MinOffHeap))
	got, lease, _ := c.Acquire("a")
	part := *got
	part.Body = got.Body[:64] // under MinOffHeap: kept on the heap
	if !c.Set("part", &part) || !c.SetHeap("whole", got) {
		t.Fatal("Set refused")
	}
	lease.Release()
	c.DeletePrefix("a")
	for i := range 16 {
		c.Set(fmt.Sprint("b", i), patterned(uint64(100+i), 4*MinOffHeap))
	}
	p, _ := c.Get("part")
	w, _ := c.Get("whole")
	if !intact(p) || !intact(w) || len(w.Body) != 4*MinOffHeap || c.heldOf(p) != nil {
		t.Fatal("a heap entry made from leased bytes lost them")
	}
	mustCheck(t, c)
}
