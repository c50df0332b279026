package e2e

import (
	"math"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

func TestPrice(t *testing.T) {
	t.Parallel()
	p := CostParams{CDNHitRatio: 0.9, TilesieveMemGB: 1, NoCacheMemGB: 0.5, HitMs: 0.3, MissMs: 24.2, SyncInterval: time.Second}
	// 100 viewer req/s: 10 function req/s on one instance, which checks
	// 1/(1 s + 0.1 s) times a second: one request in 11 carries a check.
	r := Price(p, DefaultPrices, 100, 1, 0.5)
	if !near(r.OriginRate, 10) || !near(r.PerInstance, 10) || !near(r.ChecksPerSec, 1/1.1) {
		t.Errorf("got %+v", r)
	}
	carry := 1 / 11.0
	if !near(r.TileGETs, 500_000) || !near(r.JournalGETs, carry*1e6) {
		t.Errorf("GETs: got %v + %v", r.TileGETs, r.JournalGETs)
	}
	// Half the requests hit; a hit carrying a check lasts as long as a fetch.
	slow := 0.5 * carry
	if want := (0.5-slow)*0.3 + (0.5+slow)*24.2; !near(r.MeanMs, want) || !near(r.Concurrency, 10*want/1000) {
		t.Errorf("duration: got %v ms, concurrency %v; want %v ms", r.MeanMs, r.Concurrency, want)
	}
	if r.instancesNeeded() != 1 {
		t.Errorf("instances: got %d, want 1", r.instancesNeeded())
	}
	// GB-s per million: billed 1 ms and 25 ms at 1 GB.
	wantGBs := 1e6 * ((0.5-slow)*1 + (0.5+slow)*25) / 1000
	if !near(r.GBs, wantGBs) {
		t.Errorf("GB-s: got %v, want %v", r.GBs, wantGBs)
	}
	want := (r.TileGETs+r.JournalGETs)*0.0004/1000 + wantGBs*0.0000133334 + 0.20
	if !near(r.Cost, want) {
		t.Errorf("cost: got %v, want %v", r.Cost, want)
	}
	// Journal: 1/1.1 GETs a second for 30 days.
	if !near(r.JournalMonth, 30*24*3600/1.1*0.0004/1000) {
		t.Errorf("journal per month: got %v", r.JournalMonth)
	}
	// No cache: one GET per request, 25 ms at 0.5 GB.
	if !near(r.NoCacheGBs, 12_500) || r.NoCacheN != 1 {
		t.Errorf("no cache: got %+v", r)
	}
	// 100,000 function req/s at ~12 ms need more than 1,000 environments.
	r = Price(p, DefaultPrices, 1_000_000, 1, 0.5)
	if n := r.instancesNeeded(); n < 1000 {
		t.Errorf("instances at 100,000 req/s: got %d", n)
	}
}

func TestRunCostFixedPoint(t *testing.T) {
	t.Parallel()
	p := CostParams{Catalog: 10_000, ZipfS: 1.0, ViewerRates: []float64{10, 10_000}, Window: time.Minute, CDNHitRatio: 0.9, MemBytes: 64 << 20,
		TilesieveMemGB: 1, NoCacheMemGB: 0.5, HitMs: 1, MissMs: 25, SyncInterval: time.Second, MaxSimulated: 50_000}
	res, err := RunCost(p, DefaultPrices)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.N != r.instancesNeeded() {
			t.Errorf("rate %v: %d instances, but the traffic needs %d", r.OriginRate, r.N, r.instancesNeeded())
		}
	}
	if lo, hi := res.Rows[0], res.Rows[1]; lo.N != 1 || hi.N <= 1 || hi.ChecksPerSec <= lo.ChecksPerSec {
		t.Errorf("got %+v and %+v", lo, hi)
	}
}

func TestSimulateHitRatio(t *testing.T) {
	t.Parallel()
	p := CostParams{Catalog: 10_000, ZipfS: 1.0, MemBytes: 64 << 20}
	z := workload.NewZipf(p.Catalog, p.ZipfS, 1)
	h1, err := SimulateHitRatio(p, 1, 20_000, z)
	if err != nil {
		t.Fatal(err)
	}
	h10, _ := SimulateHitRatio(p, 10, 2_000, z)
	if h1 <= h10 || h1 < 0.3 || h1 > 0.95 {
		t.Errorf("hit ratio 1 instance %.3f, 10 instances %.3f", h1, h10)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }
