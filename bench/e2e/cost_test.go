package e2e

import (
	"math"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

func TestPrice(t *testing.T) {
	t.Parallel()
	p := CostParams{ViewerRequests: 1_000_000, Window: time.Hour, CDNHitRatio: 0.9, TilesieveMemGB: 1, NoCacheMemGB: 0.5,
		HitMs: 0.3, MissMs: 24.2, SyncInterval: time.Second}
	r := Price(p, DefaultPrices, 1, 0.5)
	// 100,000 origin requests: 50,000 tile GETs, 3,600 journal GETs.
	if !near(r.OriginRequests, 100_000) || !near(r.TileGETs, 50_000) || !near(r.JournalGETs, 3_600) {
		t.Errorf("got %+v", r)
	}
	// GB-s: 50,000 × 1 ms + 50,000 × 25 ms = 1,300 s at 1 GB, plus the
	// journal checks riding on hits (half of 3,600) at 25 ms: 45 s.
	if math.Abs(r.GBs-1345) > 1e-9 {
		t.Errorf("GB-s: got %v, want 1345", r.GBs)
	}
	want := 53.6*0.0004 + 1345*0.0000133334 + 0.1*0.20
	if math.Abs(r.Cost-want) > 1e-9 {
		t.Errorf("cost: got %v, want %v", r.Cost, want)
	}
	// No cache: 100,000 GETs, 100,000 × 25 ms at 0.5 GB.
	if !near(r.NoCacheGETs, 100_000) || math.Abs(r.NoCacheGBs-1250) > 1e-9 {
		t.Errorf("no cache: got %+v", r)
	}
	// Many instances with few requests each: one journal read per request.
	r = Price(p, DefaultPrices, 100, 0.1)
	if !near(r.JournalGETs, 100_000) {
		t.Errorf("journal GETs with 100 instances: got %v, want 100000", r.JournalGETs)
	}
}

func TestSimulateHitRatio(t *testing.T) {
	t.Parallel()
	p := CostParams{Catalog: 10_000, ZipfS: 1.0, ViewerRequests: 200_000, CDNHitRatio: 0.9, MemBytes: 64 << 20}
	z := workload.NewZipf(p.Catalog, p.ZipfS, 1)
	h1, err := SimulateHitRatio(p, 1, z)
	if err != nil {
		t.Fatal(err)
	}
	h10, _ := SimulateHitRatio(p, 10, z)
	if h1 <= h10 || h1 < 0.3 || h1 > 0.95 {
		t.Errorf("hit ratio 1 instance %.3f, 10 instances %.3f", h1, h10)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }
