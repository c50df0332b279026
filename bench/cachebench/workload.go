// Package cachebench measures the memory tier (shared/tiers/memory) against the
// caches a Go engineer would otherwise reach for, on a workload shaped like a
// tile origin's: clustered `layer/z/x/y` keys, bodies of 1–500 KB, Zipf
// popularity and prefix purges. Everything is generated from fixed seeds, so
// two runs see the same keys, sizes and request traces.
package cachebench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/tilesieve/tilesieve/bench/internal/zipf"
	"github.com/tilesieve/tilesieve/shared/testkit/tilegen"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Shape of the generated tile set.
const (
	NumKeys     = 131072    // tile keys in the workload
	MinBody     = 1 << 10   // smallest body, bytes
	MaxBody     = 500 << 10 // largest body, bytes
	PyramidZoom = tilegen.PyramidZoom
	MaxZoom     = tilegen.MaxZoom
	TraceLen    = 1 << 21    // requests in a precomputed trace
	MixedMaxCov = 8          // a Mixed702010 prefix covers at most this many keys
	BulkTarget  = 3500       // the bulk prefix covers about this many keys
	seedKeys    = 0x7115e5e5 // seeds: fixed so runs are comparable
	seedSizes   = 0x5175e5
	seedRanks   = 0x4a4b5
)

// Layers are the tile sets; NumKeys is split evenly between them.
var Layers = tilegen.Layers

// Workload is the generated tile set. Keys are grouped by layer, then zoom,
// then x, then y, as a real pyramid is laid out in S3.
type Workload struct {
	Keys       []string
	Tiles      []*tile.Tile // Tiles[i] belongs to Keys[i]; bodies share one buffer
	Weights    []int64      // len(key)+len(body), the charge every byte-bounded peer uses
	TotalBytes int64        // sum of Weights

	// rank[i] is the popularity rank (0 = hottest) of key i; byRank is its inverse.
	rank   []int32
	byRank []int32

	// MixedPrefixes are `layer/z/x/` columns at high zoom covering 1..MixedMaxCov keys.
	MixedPrefixes []string
	// BulkPrefix is the `layer/z/` prefix whose key count is closest to BulkTarget.
	BulkPrefix string
	BulkKeys   []int32 // indices of the keys under BulkPrefix
}

var (
	wlOnce sync.Once
	wl     *Workload
)

// Default returns the shared workload, built once per process.
func Default() *Workload {
	wlOnce.Do(func() { wl = Generate() })
	return wl
}

// Generate builds the workload: the tile keys of shared/testkit/tilegen (a complete
// pyramid per layer for zooms 0..PyramidZoom, then regional blocks up to
// MaxZoom, so a column prefix `layer/z/x/` at high zoom names a handful of
// tiles and a zoom prefix `layer/z/` thousands), then bodies and weights.
func Generate() *Workload {
	w := &Workload{Keys: tilegen.Keys(NumKeys, seedKeys)}

	// Bodies: log-uniform sizes, all slices of one buffer so 10 GB of
	// "tiles" cost 500 KB of memory.
	buf := make([]byte, MaxBody)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	srng := rand.New(rand.NewPCG(seedSizes, 2))
	lo, hi := math.Log(MinBody), math.Log(MaxBody)
	w.Tiles = make([]*tile.Tile, len(w.Keys))
	w.Weights = make([]int64, len(w.Keys))
	for i, k := range w.Keys {
		n := int(math.Exp(lo + (hi-lo)*srng.Float64()))
		n = min(max(n, MinBody), MaxBody)
		w.Tiles[i] = &tile.Tile{
			Body:        buf[:n:n],
			ContentType: "application/vnd.mapbox-vector-tile",
			ETag:        fmt.Sprintf(`"%08x"`, i),
		}
		w.Weights[i] = int64(len(k) + n)
		w.TotalBytes += w.Weights[i]
	}

	// Popularity: a seeded random permutation assigns Zipf ranks.
	rrng := rand.New(rand.NewPCG(seedRanks, 3))
	perm := rrng.Perm(len(w.Keys))
	w.rank = make([]int32, len(w.Keys))
	w.byRank = make([]int32, len(w.Keys))
	for r, i := range perm {
		w.byRank[r] = int32(i)
		w.rank[i] = int32(r)
	}

	w.findPrefixes()
	return w
}

func (w *Workload) findPrefixes() {
	cols := map[string]int{}
	zooms := map[string]int{}
	for _, k := range w.Keys {
		parts := strings.Split(k, "/")
		var z int
		fmt.Sscan(parts[1], &z)
		zooms[parts[0]+"/"+parts[1]+"/"]++
		if z > PyramidZoom {
			cols[parts[0]+"/"+parts[1]+"/"+parts[2]+"/"]++
		}
	}
	for p, n := range cols {
		if n >= 1 && n <= MixedMaxCov {
			w.MixedPrefixes = append(w.MixedPrefixes, p)
		}
	}
	sort.Strings(w.MixedPrefixes)
	best := -1
	for p, n := range zooms {
		d := n - BulkTarget
		if d < 0 {
			d = -d
		}
		if best < 0 || d < best || (d == best && p < w.BulkPrefix) {
			best, w.BulkPrefix = d, p
		}
	}
	for i, k := range w.Keys {
		if strings.HasPrefix(k, w.BulkPrefix) {
			w.BulkKeys = append(w.BulkKeys, int32(i))
		}
	}
}

// Cover returns the indices of the keys under prefix (a linear scan; for tests).
func (w *Workload) Cover(prefix string) []int32 {
	var out []int32
	for i, k := range w.Keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, int32(i))
		}
	}
	return out
}

// Zipf draws ranks 0..n-1 with P(r) ∝ 1/(r+1)^s for any s ≥ 0 (see
// bench/internal/zipf).
type Zipf = zipf.Zipf

// NewZipf precomputes the CDF for n ranks and exponent s.
func NewZipf(rng *rand.Rand, s float64, n int) *Zipf { return zipf.New(rng, s, n) }

// Trace returns n key indices drawn with Zipf exponent s, from a seed.
func (w *Workload) Trace(s float64, n int, seed uint64) []int32 {
	z := NewZipf(rand.New(rand.NewPCG(seed, 4)), s, len(w.Keys))
	out := make([]int32, n)
	for i := range out {
		out[i] = w.byRank[z.Next()]
	}
	return out
}

// ScanTrace is a Zipf trace with a one-off sequential scan mixed in: from a
// third of the way in, every other request walks the coldest scanLen keys
// in key order (as a crawler or a re-seed job would), once.
func (w *Workload) ScanTrace(s float64, n, scanLen int, seed uint64) []int32 {
	base := w.Trace(s, n, seed)
	cold := make([]int32, 0, scanLen)
	for r := len(w.byRank) - 1; r >= 0 && len(cold) < scanLen; r-- {
		cold = append(cold, w.byRank[r])
	}
	sort.Slice(cold, func(i, j int) bool { return cold[i] < cold[j] })
	out := make([]int32, 0, n+scanLen)
	start := n / 3
	out = append(out, base[:start]...)
	bi := start
	for _, c := range cold {
		out = append(out, c)
		if bi < n {
			out = append(out, base[bi])
			bi++
		}
	}
	return append(out, base[bi:]...)
}

// Rank reports key i's popularity rank (0 = hottest).
func (w *Workload) Rank(i int32) int { return int(w.rank[i]) }

// MeanWeight is the average charge of one entry.
func (w *Workload) MeanWeight() float64 { return float64(w.TotalBytes) / float64(len(w.Keys)) }
