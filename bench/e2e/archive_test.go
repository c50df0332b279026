package e2e

import (
	"fmt"
	"testing"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

func TestViewerKeys(t *testing.T) {
	m, maxZ := viewerKeys()
	if maxZ != 4 {
		t.Fatalf("maxZ = %d, want 4 (scale factors 1..16)", maxZ)
	}
	if got := m[tileset.IIIFThumb(iiifArc)]; got != iiifArc+"/0/0/0.jpg" {
		t.Errorf("thumbnail → %q", got)
	}
	if got := m[tileset.IIIFInfo(iiifArc)]; got != iiifArc+".json" {
		t.Errorf("info.json → %q", got)
	}
	seen := map[string]string{}
	for _, p := range tileset.IIIFPyramid(iiifArc, workload.IIIFWidth, workload.IIIFHeight, workload.IIIFTile) {
		k := m[p.Key]
		var z, x, y int
		if _, err := fmt.Sscanf(k, iiifArc+"/%d/%d/%d.jpg", &z, &x, &y); err != nil {
			t.Fatalf("%s → %q: %v", p.Key, k, err)
		}
		if x >= 1<<z || y >= 1<<z {
			t.Errorf("%s → %q: outside zoom %d", p.Key, k, z)
		}
		if o, dup := seen[k]; dup {
			t.Errorf("%s and %s both → %q", o, p.Key, k)
		}
		seen[k] = p.Key
	}
	if got := m[tileset.IIIFPyramid(iiifArc, workload.IIIFWidth, workload.IIIFHeight, workload.IIIFTile)[0].Key]; got != iiifArc+"/4/0/0.jpg" {
		t.Errorf("first full-resolution tile → %q", got)
	}
}

func TestPairedNote(t *testing.T) {
	a := []ServerRow{{RPS: 10}, {RPS: 2}, {RPS: 9}}
	b := []ServerRow{{RPS: 10}, {RPS: 10}, {RPS: 10}}
	if got, want := pairedNote(a, b), "same-round ratios 1.00, 0.20, 0.90"; got != want {
		t.Errorf("pairedNote = %q, want %q", got, want)
	}
	if got := stats.MedianFloat(pairedRatios(a, b)); got != 0.9 {
		t.Errorf("median of the paired ratios = %v, want 0.9", got)
	}
	if got := pairedNote(a[:1], b[:1]); got != "" {
		t.Errorf("one round: %q", got)
	}
}
