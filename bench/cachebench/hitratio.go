package cachebench

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// Trace is a named request sequence of key indices.
type Trace struct {
	Name string
	Reqs []int32
}

// Hit-ratio traces: fixed length and seeds so every run replays the same requests.
const (
	HitTraceLen = 1 << 20
	ScanLen     = NumKeys / 4 // the one-off scan walks the coldest quarter of the keys
	hitSeed     = 7
	// WarmupFrac of each trace fills the cache and is not counted.
	WarmupFrac = 0.2
)

// HitTraces returns the traces of the hit-ratio tables.
func HitTraces(w *Workload) []Trace {
	return []Trace{
		{"zipf 0.8", w.Trace(0.8, HitTraceLen, hitSeed)},
		{"zipf 0.9", w.Trace(0.9, HitTraceLen, hitSeed)},
		{"zipf 0.9 + scan", w.ScanTrace(0.9, HitTraceLen, ScanLen, hitSeed)},
	}
}

// HitResult is one cell of the hit-ratio tables.
type HitResult struct {
	Impl, Trace   string
	BudgetFrac    float64 // cache size as a fraction of the workload's bytes
	ObjectHit     float64 // hits / requests
	ByteHit       float64 // body bytes served from cache / body bytes requested
	ResidentBytes int64   // after the run, by the cache's own account where it has one (tilesieve)
	Elapsed       time.Duration
}

// SimulateHits replays tr against a fresh cache of budgetFrac × TotalBytes:
// Get, and on a miss Set the key (demand fill). The first WarmupFrac of the
// requests are not counted. Asynchronous caches (ristretto, theine) are
// synced after every Set, so a Set is visible to the next request as it is
// for the synchronous ones; without it ristretto drops Sets under its own
// buffer pressure and its hit ratio depends on goroutine scheduling.
func SimulateHits(im Impl, w *Workload, tr Trace, budgetFrac float64) (HitResult, error) {
	start := time.Now()
	budget := int64(budgetFrac * float64(w.TotalBytes))
	c, err := im.New(budget, w.MeanWeight())
	if err != nil {
		return HitResult{}, fmt.Errorf("%s: %w", im.Name, err)
	}
	defer c.Close()
	warm := int(WarmupFrac * float64(len(tr.Reqs)))
	var reqs, hits, reqBytes, hitBytes int64
	for n, i := range tr.Reqs {
		k := w.Keys[i]
		_, ok := c.Get(k)
		if n >= warm {
			reqs++
			reqBytes += int64(len(w.Tiles[i].Body))
			if ok {
				hits++
				hitBytes += int64(len(w.Tiles[i].Body))
			}
		}
		if !ok {
			c.Set(k, w.Tiles[i], w.Weights[i])
			c.Sync()
		}
	}
	r := HitResult{
		Impl: im.Name, Trace: tr.Name, BudgetFrac: budgetFrac,
		ObjectHit: float64(hits) / float64(reqs),
		ByteHit:   float64(hitBytes) / float64(reqBytes),
		Elapsed:   time.Since(start),
	}
	if b, _, _, ok := TilesieveStats(c); ok {
		r.ResidentBytes = b
	}
	return r, nil
}

// BoundCheck fills a tilesieve cache with every key of the workload, about
// 1/frac times its MaxBytes, and checks Stats().Bytes ≤ MaxBytes after every
// Set. It returns the largest Bytes seen.
func BoundCheck(w *Workload, frac float64) (maxSeen, maxBytes int64, err error) {
	im, _ := ImplByName("tilesieve")
	c, err := im.New(int64(frac*float64(w.TotalBytes)), w.MeanWeight())
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	for round := 0; round < 2; round++ {
		for i, k := range w.Keys {
			c.Set(k, w.Tiles[i], w.Weights[i])
			b, m, _, _ := TilesieveStats(c)
			maxSeen, maxBytes = max(maxSeen, b), m
			if b > m {
				return maxSeen, m, fmt.Errorf("after Set of %q: Bytes %d > MaxBytes %d", k, b, m)
			}
		}
	}
	return maxSeen, maxBytes, nil
}

// BookkeepingPerEntry measures the heap a cache holds per entry beyond the
// key bytes: n entries with workload keys and a 1-byte body (one shared
// *tile.Tile, so values cost nothing), heap after minus heap before, minus
// the key bytes, over n. The keys are copied into one fresh string inside
// the measured window and not referenced afterwards, so whether a cache
// keeps the caller's string or its own copy, one copy of the key bytes is
// what is subtracted.
func BookkeepingPerEntry(im Impl, w *Workload, n int) (float64, error) {
	n = min(n, len(w.Keys))
	t := &tile.Tile{Body: []byte{1}, ContentType: "application/octet-stream"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)

	c, err := im.New(1<<40, 32)
	if err != nil {
		return 0, err
	}
	keyBytes := fill(c, w, t, n)
	c.Sync()

	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	delta := int64(after.HeapAlloc) - int64(before.HeapAlloc) - keyBytes
	runtime.KeepAlive(c)
	c.Close()
	return float64(delta) / float64(n), nil
}

//go:noinline
func fill(c Cache, w *Workload, t *tile.Tile, n int) int64 {
	var sb strings.Builder
	for _, k := range w.Keys[:n] {
		sb.WriteString(k)
	}
	all := sb.String()
	off := 0
	for _, k := range w.Keys[:n] {
		key := all[off : off+len(k)]
		off += len(k)
		c.Set(key, t, int64(len(key)+1))
	}
	return int64(len(all))
}
