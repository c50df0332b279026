package cachebench

import (
	"testing"
)

// TestMemoryBound fills the memory tier with ~10 GB of tiles against a 1%
// budget and checks it never holds more than its MaxBytes.
func TestMemoryBound(t *testing.T) {
	w := Default()
	maxSeen, maxBytes, err := BoundCheck(w, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if maxSeen == 0 {
		t.Fatalf("cache stayed empty")
	}
	t.Logf("max Bytes seen %d of MaxBytes %d", maxSeen, maxBytes)
}

func TestBookkeepingPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("heap measurement")
	}
	w := Default()
	for _, name := range []string{"tilesieve", "otter"} {
		im, _ := ImplByName(name)
		per, err := BookkeepingPerEntry(im, w, NumKeys)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %.1f bytes/entry of bookkeeping", name, per)
		if per <= 0 {
			t.Errorf("%s: got %.1f bytes/entry, want > 0", name, per)
		}
	}
}

// TestHitRatioSmoke replays a short trace through every implementation and
// checks the ratios are sane; the full tables come from cmd/benchreport.
func TestHitRatioSmoke(t *testing.T) {
	w := Default()
	tr := Trace{"zipf 0.9 short", w.Trace(0.9, 1<<15, 3)}
	for _, im := range HitRatio() {
		r, err := SimulateHits(im, w, tr, 0.10)
		if err != nil {
			t.Fatal(err)
		}
		if r.ObjectHit <= 0.05 || r.ObjectHit >= 1 {
			t.Errorf("%s: object hit ratio %.3f, want in (0.05, 1)", im.Name, r.ObjectHit)
		}
	}
}
