package memory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/tiers/internal/radix"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// tileKeys returns n distinct keys shaped like XYZ tile paths, 1000 per
// directory.
func tileKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("osm/14/%d/%d.mvt", 8000+i/1000, 5000+i%1000)
	}
	return keys
}

// TestBookkeepingBytes measures the heap the cache spends per entry beyond
// the key and the tile, which weight charges separately (the key's bytes and
// tile.Cost): every key and every tile is distinct and exists before the
// first reading, so the delta is the radix node (with the SIEVE links), its
// share of inner nodes and child arrays, and the index slot. It measures
// the sparse, realistic keys bench/cachebench uses (dense keys share more
// inner nodes and would flatter the number) and random keys, the shape of a
// flood of missing tiles (remembered 404s). Then it checks the whole: the
// heap the entries hold, keys and tiles included, against their weights.
func TestBookkeepingBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~60 MB")
	}
	const n = 131_072
	r := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name string
		keys func() []string
		tile func(i int) *tile.Tile
	}{
		{"sparse tile keys, tiles", func() []string { return sparseTileKeys(n) }, func(i int) *tile.Tile {
			return &tile.Tile{Body: make([]byte, 100+i%500), ContentType: strings.Clone("image/png"), ETag: fmt.Sprintf(`"%032x"`, i)}
		}},
		{"random keys, 404s", func() []string {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("osm/%d/%d/%d.png", r.IntN(20), r.Uint32(), r.Uint32())
			}
			return keys
		}, func(int) *tile.Tile { return &tile.Tile{Missing: true} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, mid, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keys := tt.keys()
			tiles := make([]*tile.Tile, n)
			for i := range tiles {
				tiles[i] = tt.tile(i)
			}
			runtime.GC()
			runtime.ReadMemStats(&mid)
			c, _ := New(Config{MaxBytes: 1 << 40})
			for i, k := range keys {
				c.Set(k, tiles[i])
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			if c.Len() != n {
				t.Fatalf("%d entries, want %d distinct", c.Len(), n)
			}
			perEntry := float64(after.HeapAlloc-mid.HeapAlloc) / n
			// The whole: less the keys and tiles slices, which the cache
			// does not hold.
			held := int64(after.HeapAlloc-before.HeapAlloc) - 2*int64(n)*16
			runtime.KeepAlive(c)
			runtime.KeepAlive(keys)
			runtime.KeepAlive(tiles)
			t.Logf("bookkeeping: %.1f bytes per entry, EntryOverhead = %d; entries hold %d bytes, weigh %d (%.3fx)",
				perEntry, EntryOverhead, held, c.Bytes(), float64(c.Bytes())/float64(held))
			if perEntry > EntryOverhead {
				t.Errorf("EntryOverhead %d undercharges the measured %.1f bytes per entry", EntryOverhead, perEntry)
			}
			if c.Bytes() < held {
				t.Errorf("entries weigh %d, but hold %d bytes of heap", c.Bytes(), held)
			}
		})
	}
}

// TestNodeSize: a key's radix node and its entry (SIEVE links, tile, visited
// bit and hash, weight) fill 64 bytes, one size class and one cache line; a
// field more would make every entry 80.
func TestNodeSize(t *testing.T) {
	t.Parallel()
	if got := unsafe.Sizeof(radix.Node[entry]{}) + unsafe.Sizeof(entry{}); got != 64 {
		t.Fatalf("node and entry take %d bytes, want 64", got)
	}
}

func benchCache(b *testing.B, keys []string) *Cache {
	c, _ := New(Config{MaxBytes: 1 << 40})
	tl := &tile.Tile{Body: make([]byte, 100)}
	for _, k := range keys {
		c.Set(k, tl)
	}
	return c
}

// runParallel resets the timer and runs body on b.RunParallel's goroutines,
// each from its own start i in the keys (steps of a prime apart), reporting
// allocations. body keeps its own pb.Next loop, so an op costs no call more.
func runParallel(b *testing.B, body func(pb *testing.PB, i int)) {
	var seq atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) { body(pb, int(seq.Add(1)*7919)) })
}

func BenchmarkGet(b *testing.B) {
	keys := tileKeys(100_000)
	c := benchCache(b, keys)
	runParallel(b, func(pb *testing.PB, i int) {
		for pb.Next() {
			i++
			if _, ok := c.Get(keys[i%len(keys)]); !ok {
				b.Fatal("miss")
			}
		}
	})
}

// BenchmarkSet replaces existing keys and inserts new ones into a full cache
// (each new key evicts one).
func BenchmarkSet(b *testing.B) {
	keys := tileKeys(200_000)
	tl := &tile.Tile{Body: make([]byte, 100)}
	c, _ := New(Config{MaxBytes: 100_000 * weight(keys[0], tl)})
	for _, k := range keys[:100_000] {
		c.Set(k, tl)
	}
	runParallel(b, func(pb *testing.PB, i int) {
		for pb.Next() {
			i++
			c.Set(keys[i%len(keys)], tl)
		}
	})
}

// BenchmarkGetSet is 75% Get, 25% Set over keys that fit.
func BenchmarkGetSet(b *testing.B) {
	keys := tileKeys(100_000)
	c := benchCache(b, keys)
	tl := &tile.Tile{Body: make([]byte, 100)}
	runParallel(b, func(pb *testing.PB, i int) {
		for pb.Next() {
			i++
			k := keys[(i*31)%len(keys)]
			if i%4 == 0 {
				c.Set(k, tl)
			} else {
				c.Get(k)
			}
		}
	})
}

// BenchmarkDeletePrefix purges one 1000-key directory of a 100k-entry cache
// per op while other goroutines read; the directory is put back untimed.
func BenchmarkDeletePrefix(b *testing.B) {
	keys := tileKeys(100_000)
	c := benchCache(b, keys)
	tl := &tile.Tile{Body: make([]byte, 100)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		x := i % 100
		if n, _ := c.DeletePrefix("osm/14/" + strconv.Itoa(8000+x) + "/"); n != 1000 {
			b.Fatalf("DeletePrefix removed %d, want 1000", n)
		}
		b.StopTimer()
		for _, k := range keys[x*1000 : (x+1)*1000] {
			c.Set(k, tl)
		}
		b.StartTimer()
	}
}

// BenchmarkDeletePrefixBulk purges one zoom level (`osm/12/`, 3,424 keys) of
// a cache holding 131,072 sparse tile keys, as bench/cachebench's benchmark
// of the same name does, and reports the time per deleted key. The keys are
// put back untimed.
func BenchmarkDeletePrefixBulk(b *testing.B) {
	keys := sparseTileKeys(131072)
	c := benchCache(b, keys)
	tl := &tile.Tile{Body: make([]byte, 100)}
	var bulk []string
	for _, k := range keys {
		if strings.HasPrefix(k, "osm/12/") {
			bulk = append(bulk, k)
		}
	}
	b.ReportAllocs()
	deleted := 0
	for b.Loop() {
		b.StopTimer()
		for _, k := range bulk {
			c.Set(k, tl)
		}
		b.StartTimer()
		n, _ := c.DeletePrefix("osm/12/")
		deleted += n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deleted), "ns/key")
}
