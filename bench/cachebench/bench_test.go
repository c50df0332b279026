package cachebench

import (
	"flag"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// firstImpl puts one implementation's sub-benchmarks first, so that paired
// runs (cmd/benchreport) can alternate which of two goes first.
var firstImpl = flag.String("cachebench.first", "", "run this implementation's sub-benchmarks first")

// coldBulk makes BenchmarkDeletePrefixBulk collect garbage between the
// refill and the timed delete. Marking the heap evicts the refilled keys'
// lines from the CPU caches, so the delete pays the misses a purge of
// entries set long ago pays.
var coldBulk = flag.Bool("cachebench.coldbulk", false, "BenchmarkDeletePrefixBulk: run a GC between refill and delete (cold CPU caches)")

// Every benchmark here builds one cache per implementation, fills it before
// the timer starts, then drives it from b.RunParallel goroutines, each
// walking the same precomputed Zipf(0.9) trace from its own offset, so that
// `-cpu 1,2` measures contention too.

const (
	benchSeed    = 42
	prefixPicks  = 1 << 16
	fullBudget   = 2    // × TotalBytes: "holds everything", with headroom for per-entry overhead
	evictQuarter = 0.25 // × TotalBytes: GetSet7525 evicts
)

var (
	benchOnce    sync.Once
	benchTrace   []int32 // Zipf(0.9) key indices, len TraceLen
	prefixChoice []int32 // indices into MixedPrefixes, uniform
)

func setup() (*Workload, []int32) {
	w := Default()
	benchOnce.Do(func() {
		benchTrace = w.Trace(0.9, TraceLen, benchSeed)
		rng := rand.New(rand.NewPCG(benchSeed, 9))
		prefixChoice = make([]int32, prefixPicks)
		for i := range prefixChoice {
			prefixChoice[i] = int32(rng.IntN(len(w.MixedPrefixes)))
		}
	})
	return w, benchTrace
}

var sinkTile atomic.Pointer[tile.Tile]

func TestFirstAmong(t *testing.T) {
	names := func(impls []Impl) string {
		var s []string
		for _, im := range impls {
			s = append(s, im.Name)
		}
		return strings.Join(s, ",")
	}
	tests := []struct{ first, want string }{
		{"", "tilesieve,mapmutex,otter,theine,ristretto,lru"},
		{"tilesieve", "tilesieve,mapmutex,otter,theine,ristretto,lru"},
		{"otter", "otter,tilesieve,mapmutex,theine,ristretto,lru"},
		{"lru", "lru,tilesieve,mapmutex,otter,theine,ristretto"},
		{"nosuch", "tilesieve,mapmutex,otter,theine,ristretto,lru"},
	}
	for _, tt := range tests {
		t.Run(tt.first, func(t *testing.T) {
			if got := names(firstAmong(Throughput(), tt.first)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// goroutineStart spreads the RunParallel goroutines over the trace.
func goroutineStart(ctr *atomic.Uint32) int {
	return int(ctr.Add(1)*104729) & (TraceLen - 1)
}

// forEachTrace runs loop, per implementation (see forEach), in
// b.RunParallel goroutines, each from its own start in the trace, and keeps
// the last tile each loop saw alive. The loop owns its pb.Next() iteration,
// so the measured operations are not behind a function call.
func forEachTrace(b *testing.B, maxBytes int64, prepare func(Cache), loop func(c Cache, pb *testing.PB, i int) *tile.Tile) {
	forEach(b, maxBytes, prepare, func(b *testing.B, c Cache) {
		var ctr atomic.Uint32
		b.RunParallel(func(pb *testing.PB) {
			sinkTile.Store(loop(c, pb, goroutineStart(&ctr)))
		})
	})
}

func build(b *testing.B, im Impl, maxBytes int64, w *Workload) Cache {
	b.Helper()
	c, err := im.New(maxBytes, w.MeanWeight())
	if err != nil {
		b.Fatalf("%s: %v", im.Name, err)
	}
	return c
}

// forEach runs body as one sub-benchmark per implementation. The cache is
// built and prepared only when the -bench pattern selects the
// implementation (b.Run calls the function only then), once, and kept for
// every -cpu value, so a run filtered to one implementation sets up only
// that one.
func forEach(b *testing.B, maxBytes int64, prepare func(Cache), body func(b *testing.B, c Cache)) {
	w, _ := setup()
	for _, im := range firstAmong(Throughput(), *firstImpl) {
		var c Cache
		b.Run(im.Name, func(b *testing.B) {
			if c == nil {
				c = build(b, im, maxBytes, w)
				prepare(c)
			}
			b.ReportAllocs()
			b.ResetTimer()
			body(b, c)
		})
		if c != nil {
			c.Close()
		}
	}
}

// firstAmong returns impls with the one named first moved to the front,
// the others in their order.
func firstAmong(impls []Impl, first string) []Impl {
	i := slices.IndexFunc(impls, func(im Impl) bool { return im.Name == first })
	if i <= 0 {
		return impls
	}
	out := append([]Impl{impls[i]}, impls[:i]...)
	return append(out, impls[i+1:]...)
}

// fillAll sets every key, then lets asynchronous caches catch up.
func fillAll(c Cache, w *Workload) {
	for i, k := range w.Keys {
		c.Set(k, w.Tiles[i], w.Weights[i])
	}
	c.Sync()
}

// warm demand-fills the cache from the head of the trace (Get, Set on miss),
// which leaves an evicting cache in its steady state.
func warm(c Cache, w *Workload, tr []int32, n int) {
	for _, i := range tr[:n] {
		k := w.Keys[i]
		if _, ok := c.Get(k); !ok {
			c.Set(k, w.Tiles[i], w.Weights[i])
		}
	}
	c.Sync()
}

func BenchmarkGet(b *testing.B) {
	w, tr := setup()
	forEachTrace(b, fullBudget*w.TotalBytes, func(c Cache) { fillAll(c, w) }, func(c Cache, pb *testing.PB, i int) *tile.Tile {
		var last *tile.Tile
		for pb.Next() {
			t, _ := c.Get(w.Keys[tr[i]])
			if t != nil {
				last = t
			}
			i = (i + 1) & (TraceLen - 1)
		}
		return last
	})
}

func BenchmarkGetSet7525(b *testing.B) {
	w, tr := setup()
	budget := int64(evictQuarter * float64(w.TotalBytes))
	forEachTrace(b, budget, func(c Cache) { warm(c, w, tr, TraceLen/4) }, func(c Cache, pb *testing.PB, i int) *tile.Tile {
		var last *tile.Tile
		for pb.Next() {
			k := tr[i]
			if i&3 == 3 {
				c.Set(w.Keys[k], w.Tiles[k], w.Weights[k])
			} else if t, _ := c.Get(w.Keys[k]); t != nil {
				last = t
			}
			i = (i + 1) & (TraceLen - 1)
		}
		return last
	})
}

func BenchmarkMixed702010(b *testing.B) {
	w, tr := setup()
	forEachTrace(b, fullBudget*w.TotalBytes, func(c Cache) { fillAll(c, w) }, func(c Cache, pb *testing.PB, i int) *tile.Tile {
		var last *tile.Tile
		for pb.Next() {
			k := tr[i]
			switch op := i % 10; {
			case op < 7:
				if t, _ := c.Get(w.Keys[k]); t != nil {
					last = t
				}
			case op < 9:
				c.Set(w.Keys[k], w.Tiles[k], w.Weights[k])
			default:
				c.DeletePrefix(w.MixedPrefixes[prefixChoice[i&(prefixPicks-1)]])
			}
			i = (i + 1) & (TraceLen - 1)
		}
		return last
	})
}

// BenchmarkDeletePrefixBulk deletes one `layer/z/` prefix of ~3,500 keys from
// a cache holding all 131,072, and reports the time per deleted key. It runs
// serially: the keys are put back with the timer stopped, which cannot be
// done per iteration inside RunParallel.
//
// Besides the mean (ns/key) it reports the median of the iterations
// (median-ns/key). A timed delete lasts ~0.1 ms, less than a scheduler time
// slice, so on a shared machine the few iterations that lose the core to
// another process, or that a GC cycle started by the untimed refill runs
// into (with one P its marking is charged to the delete; with two it runs
// beside it), dominate the mean. The delete follows the refill of the same
// keys, so their lines are in the CPU caches; -cachebench.coldbulk measures
// it with cold caches.
func BenchmarkDeletePrefixBulk(b *testing.B) {
	w, _ := setup()
	forEach(b, fullBudget*w.TotalBytes, func(c Cache) { fillAll(c, w) }, func(b *testing.B, c Cache) {
		b.StopTimer()
		deleted := 0
		perKey := make([]float64, 0, b.N)
		for range b.N {
			b.StopTimer()
			for _, i := range w.BulkKeys {
				c.Set(w.Keys[i], w.Tiles[i], w.Weights[i])
			}
			c.Sync()
			if *coldBulk {
				runtime.GC()
			}
			b.StartTimer()
			t0 := time.Now()
			n := c.DeletePrefix(w.BulkPrefix)
			el := time.Since(t0)
			deleted += n
			if n > 0 {
				perKey = append(perKey, float64(el.Nanoseconds())/float64(n))
			}
		}
		b.StopTimer()
		if deleted > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deleted), "ns/key")
			b.ReportMetric(float64(deleted)/float64(b.N), "keys/op")
			slices.Sort(perKey)
			b.ReportMetric(perKey[len(perKey)/2], "median-ns/key")
		}
	})
}
