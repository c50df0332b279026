package cache

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

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
// the key and the tile: the keys and one shared empty tile exist before the
// first reading, so the delta is the radix node (with the SIEVE links), its
// share of inner nodes and child arrays, and the index slot. The keys are
// sparse and realistic (sparseTileKeys, the shape bench/cachebench uses):
// dense keys share more inner nodes and would flatter the number.
func TestBookkeepingBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~20 MB")
	}
	const n = 131_072
	keys := sparseTileKeys(n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, _ := New(Config{MaxBytes: 1 << 40})
	for _, k := range keys {
		c.Set(k, empty)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perEntry := float64(after.HeapAlloc-before.HeapAlloc) / n
	runtime.KeepAlive(c)
	runtime.KeepAlive(keys)
	t.Logf("bookkeeping: %.1f bytes per entry (%d entries), EntryOverhead = %d", perEntry, c.Len(), EntryOverhead)
	if perEntry > 100 {
		t.Fatalf("bookkeeping %.1f bytes per entry, want <= 100", perEntry)
	}
	if perEntry > EntryOverhead {
		t.Fatalf("EntryOverhead %d undercharges the measured %.1f bytes per entry", EntryOverhead, perEntry)
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

func BenchmarkGet(b *testing.B) {
	keys := tileKeys(100_000)
	c := benchCache(b, keys)
	var seq atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1) * 7919)
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
	c, _ := New(Config{MaxBytes: 100_000 * (100 + 20 + EntryOverhead)})
	for _, k := range keys[:100_000] {
		c.Set(k, tl)
	}
	var seq atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1) * 7919)
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
	var seq atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(seq.Add(1) * 7919)
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
