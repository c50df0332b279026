package cachebench

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestWorkloadShape(t *testing.T) {
	w := Default()
	if got, want := len(w.Keys), NumKeys; got != want {
		t.Fatalf("keys: got %d, want %d", got, want)
	}
	seen := make(map[string]bool, len(w.Keys))
	for i, k := range w.Keys {
		if seen[k] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[k] = true
		if err := tile.ValidateKey(k); err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		if got := strings.Count(k, "/"); got != 3 {
			t.Fatalf("key %q: got %d slashes, want 3 (layer/z/x/y)", k, got)
		}
		if n := len(w.Tiles[i].Body); n < MinBody || n > MaxBody {
			t.Fatalf("key %q: body %d bytes outside [%d, %d]", k, n, MinBody, MaxBody)
		}
		if got, want := w.Weights[i], int64(len(k)+len(w.Tiles[i].Body)); got != want {
			t.Fatalf("weight of %q: got %d, want %d", k, got, want)
		}
	}
}

// Log-uniform on [1 KiB, 500 KiB]: the mean is (b-a)/ln(b/a) ≈ 80 KiB and
// each decade-ish slice of log space holds a proportional share of tiles.
func TestWorkloadSizes(t *testing.T) {
	w := Default()
	var sum float64
	small, large := 0, 0
	mid := math.Sqrt(MinBody * MaxBody)
	for _, tl := range w.Tiles {
		n := float64(len(tl.Body))
		sum += n
		if n < mid {
			small++
		} else {
			large++
		}
	}
	mean := sum / float64(len(w.Tiles))
	want := (MaxBody - MinBody) / math.Log(MaxBody/MinBody)
	if math.Abs(mean-want)/want > 0.02 {
		t.Errorf("mean body: got %.0f, want %.0f ±2%%", mean, want)
	}
	if frac := float64(small) / float64(len(w.Tiles)); math.Abs(frac-0.5) > 0.01 {
		t.Errorf("share below the geometric mean: got %.3f, want 0.5 ±0.01", frac)
	}
}

func TestWorkloadClustering(t *testing.T) {
	w := Default()
	perLayer := NumKeys / len(Layers)
	for _, l := range Layers {
		if got := len(w.Cover(l + "/")); got != perLayer {
			t.Errorf("layer %s: got %d keys, want %d", l, got, perLayer)
		}
		// Complete pyramid at low zoom.
		for z := 0; z <= PyramidZoom; z++ {
			p := l + "/" + itoa(z) + "/"
			if got, want := len(w.Cover(p)), 1<<(2*z); got != want {
				t.Errorf("%s: got %d keys, want %d (full pyramid)", p, got, want)
			}
		}
	}
	// High zoom is clustered: the keys of a zoom level fall in few columns,
	// each a contiguous run of rows.
	cols := map[string][]int{}
	for _, k := range w.Keys {
		parts := strings.Split(k, "/")
		if atoi(parts[1]) > PyramidZoom {
			c := parts[0] + "/" + parts[1] + "/" + parts[2] + "/"
			cols[c] = append(cols[c], atoi(parts[3]))
		}
	}
	contiguous := 0
	for _, ys := range cols {
		if ys[len(ys)-1]-ys[0]+1 == len(ys) {
			contiguous++
		}
	}
	// Regions may overlap at zoom 7–8, where one tile spans several cities.
	if frac := float64(contiguous) / float64(len(cols)); frac < 0.85 {
		t.Errorf("contiguous high-zoom columns: got %.3f, want ≥ 0.85", frac)
	}
}

func TestMixedPrefixCoverage(t *testing.T) {
	w := Default()
	if len(w.MixedPrefixes) < 1000 {
		t.Fatalf("mixed prefixes: got %d, want ≥ 1000", len(w.MixedPrefixes))
	}
	// Count by column independently of findPrefixes: prefix → keys under it.
	cover := map[string]int{}
	for _, k := range w.Keys {
		cover[k[:strings.LastIndexByte(k, '/')+1]]++
	}
	for _, p := range w.MixedPrefixes {
		if !strings.HasSuffix(p, "/") || strings.Count(p, "/") != 3 {
			t.Fatalf("prefix %q is not layer/z/x/", p)
		}
		if n := cover[p]; n < 1 || n > MixedMaxCov {
			t.Fatalf("prefix %q covers %d keys, want 1..%d", p, n, MixedMaxCov)
		}
	}
}

func TestBulkPrefix(t *testing.T) {
	w := Default()
	got := len(w.Cover(w.BulkPrefix))
	if got != len(w.BulkKeys) {
		t.Fatalf("bulk keys: got %d, cover says %d", len(w.BulkKeys), got)
	}
	if got < BulkTarget*8/10 || got > BulkTarget*12/10 {
		t.Errorf("bulk prefix %q covers %d keys, want %d ±20%%", w.BulkPrefix, got, BulkTarget)
	}
}

func TestZipf(t *testing.T) {
	w := Default()
	tr := w.Trace(0.9, 1<<20, 1)
	counts := make([]int, len(w.Keys))
	for _, i := range tr {
		counts[w.Rank(i)]++
	}
	// P(rank 0)/P(rank 9) = 10^0.9 ≈ 7.9 for s = 0.9.
	ratio := float64(counts[0]) / float64(counts[9])
	if ratio < 6.5 || ratio > 9.5 {
		t.Errorf("count(rank 0)/count(rank 9): got %.2f, want ≈ 7.9", ratio)
	}
	again := w.Trace(0.9, 1<<20, 1)
	for i := range tr {
		if tr[i] != again[i] {
			t.Fatalf("trace not deterministic at %d", i)
		}
	}
}

func TestScanTrace(t *testing.T) {
	w := Default()
	n, scan := 30000, 5000
	tr := w.ScanTrace(0.9, n, scan, 2)
	if got, want := len(tr), n+scan; got != want {
		t.Fatalf("len: got %d, want %d", got, want)
	}
	cold := 0
	for _, i := range tr {
		if w.Rank(i) >= len(w.Keys)-scan {
			cold++
		}
	}
	if cold < scan {
		t.Errorf("cold requests: got %d, want ≥ %d", cold, scan)
	}
}

func itoa(n int) string {
	return strconv.Itoa(n)
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
