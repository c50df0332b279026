package cachebench

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

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

// goroutineStart spreads the RunParallel goroutines over the trace.
func goroutineStart(ctr *atomic.Uint32) int {
	return int(ctr.Add(1)*104729) & (TraceLen - 1)
}

func build(b *testing.B, im Impl, maxBytes int64, w *Workload) Cache {
	b.Helper()
	c, err := im.New(maxBytes, w.MeanWeight())
	if err != nil {
		b.Fatalf("%s: %v", im.Name, err)
	}
	return c
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
	for _, im := range Throughput() {
		c := build(b, im, fullBudget*w.TotalBytes, w)
		fillAll(c, w)
		b.Run(im.Name, func(b *testing.B) {
			b.ReportAllocs()
			var ctr atomic.Uint32
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := goroutineStart(&ctr)
				var last *tile.Tile
				for pb.Next() {
					t, _ := c.Get(w.Keys[tr[i]])
					if t != nil {
						last = t
					}
					i = (i + 1) & (TraceLen - 1)
				}
				sinkTile.Store(last)
			})
		})
		c.Close()
	}
}

func BenchmarkGetSet7525(b *testing.B) {
	w, tr := setup()
	budget := int64(evictQuarter * float64(w.TotalBytes))
	for _, im := range Throughput() {
		c := build(b, im, budget, w)
		warm(c, w, tr, TraceLen/4)
		b.Run(im.Name, func(b *testing.B) {
			b.ReportAllocs()
			var ctr atomic.Uint32
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := goroutineStart(&ctr)
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
				sinkTile.Store(last)
			})
		})
		c.Close()
	}
}

func BenchmarkMixed702010(b *testing.B) {
	w, tr := setup()
	for _, im := range Throughput() {
		c := build(b, im, fullBudget*w.TotalBytes, w)
		fillAll(c, w)
		b.Run(im.Name, func(b *testing.B) {
			b.ReportAllocs()
			var ctr atomic.Uint32
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := goroutineStart(&ctr)
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
				sinkTile.Store(last)
			})
		})
		c.Close()
	}
}

// BenchmarkDeletePrefixBulk deletes one `layer/z/` prefix of ~3,500 keys from
// a cache holding all 131,072, and reports the time per deleted key. It runs
// serially: the keys are put back with the timer stopped, which cannot be
// done per iteration inside RunParallel.
func BenchmarkDeletePrefixBulk(b *testing.B) {
	w, _ := setup()
	for _, im := range Throughput() {
		c := build(b, im, fullBudget*w.TotalBytes, w)
		fillAll(c, w)
		b.Run(im.Name, func(b *testing.B) {
			b.ReportAllocs()
			deleted := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				for _, i := range w.BulkKeys {
					c.Set(w.Keys[i], w.Tiles[i], w.Weights[i])
				}
				c.Sync()
				b.StartTimer()
				deleted += c.DeletePrefix(w.BulkPrefix)
			}
			b.StopTimer()
			if deleted > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deleted), "ns/key")
				b.ReportMetric(float64(deleted)/float64(b.N), "keys/op")
			}
		})
		c.Close()
	}
}
