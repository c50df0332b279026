package obs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/obs/emf/emftest"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTileMetrics(t testing.TB, cfg obs.MetricsConfig, now time.Time) (*obs.TileMetrics, *bytes.Buffer) {
	t.Helper()
	if cfg.FunctionName == "" {
		cfg.FunctionName = "tilesieve-tiles"
	}
	var out bytes.Buffer
	m, err := obs.NewTileMetrics(cfg, &out, now)
	if err != nil {
		t.Fatal(err)
	}
	return m, &out
}

// lines parses every line of out as EMF, keyed by TileSet ("" for the
// function's own line).
func lines(t *testing.T, out *bytes.Buffer) map[string][]*emftest.Doc {
	t.Helper()
	docs, err := emftest.ParseAll(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	by := map[string][]*emftest.Doc{}
	for _, d := range docs {
		if d.Namespace != obs.DefaultNamespace || d.DimValues[obs.DimFunctionName] != "tilesieve-tiles" {
			t.Errorf("namespace %q, dimensions %v", d.Namespace, d.DimValues)
		}
		by[d.DimValues[obs.DimTileSet]] = append(by[d.DimValues[obs.DimTileSet]], d)
	}
	return by
}

// TestTileMetricsKnownWorkload drives a known sequence of answers, origin
// fetches, journal checks and purges through the metric set and checks every
// number of the lines it writes.
func TestTileMetricsKnownWorkload(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(t0)
	m, out := newTileMetrics(t, obs.MetricsConfig{Interval: time.Minute, MaxTileSets: obs.DefaultMaxTileSets}, clock.Now())
	m.WatchTiers(func() obs.TierSize { return obs.TierSize{Bytes: 4096, Entries: 3} }, nil)

	type req struct {
		tileset string
		tier    obs.Tier
		bytes   int64
		n       int
	}
	workload := []req{
		{"osm", obs.TierMemory, 1000, 70},
		{"osm", obs.TierDisk, 2000, 10},
		{"osm", obs.TierMiss, 3000, 5},
		{"iiif", obs.TierMemory, 500, 20},
		{"iiif", obs.TierRevalidated, 500, 3},
		{"iiif", obs.TierStale, 500, 1},
		{"iiif", obs.TierError, 0, 2},
		{"", obs.TierMiss, 100, 4}, // catalog, TileJSON
	}
	for _, r := range workload {
		for range r.n {
			m.Request(r.tileset, r.tier, r.bytes, 2*time.Millisecond)
		}
	}
	m.OriginFetch(20*time.Millisecond, nil)
	m.OriginFetch(40*time.Millisecond, fmt.Errorf("get: %w", context.DeadlineExceeded))
	m.OriginFetch(60*time.Millisecond, errors.New("503 SlowDown"))
	m.JournalCheck(5*time.Millisecond, nil)
	m.JournalCheck(7*time.Millisecond, nil)
	m.JournalCheck(250*time.Millisecond, context.DeadlineExceeded)
	m.PurgesApplied(2, 17, 1500*time.Millisecond)
	m.PurgesApplied(0, 0, time.Hour) // a check that applied nothing records no lag

	clock.Advance(30 * time.Second)
	if err := m.MaybeFlush(clock.Now()); err != nil || out.Len() != 0 {
		t.Fatalf("a line before the interval: %q, %v", out, err)
	}
	clock.Advance(31 * time.Second)
	if err := m.MaybeFlush(clock.Now()); err != nil {
		t.Fatal(err)
	}
	by := lines(t, out)
	if len(by[""]) != 1 || len(by["osm"]) != 1 || len(by["iiif"]) != 1 || len(by) != 3 {
		t.Fatalf("got lines %v, want one for the function, osm and iiif", keys(by))
	}
	fn := by[""][0]
	for name, want := range map[string]float64{
		obs.MetricRequestsMemory: 90, obs.MetricRequestsDisk: 10, obs.MetricRequestsMiss: 9,
		obs.MetricRequestsRevalidated: 3, obs.MetricRequestsStale: 1, obs.MetricRequestsError: 2,
		obs.MetricBytesServed:  70*1000 + 10*2000 + 5*3000 + 20*500 + 3*500 + 500 + 4*100,
		obs.MetricOriginErrors: 1, obs.MetricOriginTimeouts: 1,
		obs.MetricJournalChecks: 3, obs.MetricJournalCheckErrors: 1,
		obs.MetricPurgesApplied: 2, obs.MetricKeysDropped: 17,
		obs.MetricMemoryTierBytes: 4096, obs.MetricMemoryTierEntries: 3,
	} {
		if got, ok := fn.Numbers[name]; !ok || got != want {
			t.Errorf("%s: got %v (sent %v), want %v", name, got, ok, want)
		}
	}
	if _, ok := fn.Numbers[obs.MetricDiskTierBytes]; ok {
		t.Error("disk gauges sent without a disk tier")
	}
	for name, want := range map[string]struct {
		n, min, max float64
	}{
		obs.MetricRequestLatency:      {115, 2, 2},
		obs.MetricOriginFetchLatency:  {3, 20, 60},
		obs.MetricJournalCheckLatency: {3, 5, 250},
		obs.MetricJournalLag:          {1, 1500, 1500},
	} {
		h, ok := fn.Histograms[name]
		if !ok || h.Cnt != want.n || h.Min != want.min || h.Max != want.max {
			t.Errorf("%s: got %+v (sent %v), want %v recordings in [%v, %v]", name, h, ok, want.n, want.min, want.max)
		}
	}
	osm := by["osm"][0]
	if osm.Numbers[obs.MetricRequestsMemory] != 70 || osm.Numbers[obs.MetricBytesServed] != 70*1000+10*2000+5*3000 {
		t.Errorf("osm: got %v", osm.Numbers)
	}
	if _, ok := osm.Numbers[obs.MetricRequestsStale]; ok {
		t.Error("osm: a zero per-tileset counter was sent")
	}

	// The next interval starts empty: counters at zero, no distributions, no
	// tileset lines.
	clock.Advance(time.Minute)
	if err := m.MaybeFlush(clock.Now()); err != nil {
		t.Fatal(err)
	}
	by = lines(t, out)
	if len(by) != 1 || by[""][0].Numbers[obs.MetricRequestsMemory] != 0 || len(by[""][0].Histograms) != 0 {
		t.Errorf("quiet interval: got %v", by)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTileSetsBounded(t *testing.T) {
	t.Parallel()
	m, out := newTileMetrics(t, obs.MetricsConfig{MaxTileSets: 3}, t0)
	for i := range 50 {
		m.Request(fmt.Sprintf("ts%02d", i), obs.TierMemory, 1, time.Millisecond)
	}
	if err := m.Flush(t0); err != nil {
		t.Fatal(err)
	}
	by := lines(t, out)
	if len(by) != 5 {
		t.Fatalf("got lines for %v, want the function, 3 tilesets and %s", keys(by), obs.OtherTileSet)
	}
	if got := by[obs.OtherTileSet][0].Numbers[obs.MetricRequestsMemory]; got != 47 {
		t.Errorf("%s: got %v requests, want 47", obs.OtherTileSet, got)
	}
	if got := by[""][0].Numbers[obs.MetricRequestsMemory]; got != 50 {
		t.Errorf("function: got %v requests, want 50", got)
	}
}

func TestTileMetricsConcurrent(t *testing.T) {
	t.Parallel()
	m, out := newTileMetrics(t, obs.MetricsConfig{MaxTileSets: 2}, t0)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m.Request(fmt.Sprintf("ts%d", (w+i)%4), obs.Tier(i%6), 10, time.Millisecond)
				_ = m.MaybeFlush(t0.Add(time.Duration(w*each+i) * time.Millisecond))
			}
		}()
	}
	wg.Wait()
	if err := m.Flush(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var fn, perSet, hist float64
	for ts, docs := range lines(t, out) {
		for _, d := range docs {
			for tier := range obs.Tier(6) {
				if ts == "" {
					fn += d.Numbers[tier.MetricName()]
				} else {
					perSet += d.Numbers[tier.MetricName()]
				}
			}
			hist += d.Histograms[obs.MetricRequestLatency].Cnt
		}
	}
	if fn != workers*each || perSet != workers*each || hist != workers*each {
		t.Errorf("got %v requests, %v per tileset, %v latencies; want %d of each", fn, perSet, hist, workers*each)
	}
}

func TestWorkerMetricsPerInvocation(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m, err := obs.NewWorkerMetrics(obs.MetricsConfig{FunctionName: "tilesieve-worker"}, &out, t0)
	if err != nil {
		t.Fatal(err)
	}
	for inv := 1; inv <= 3; inv++ {
		m.Notifications(10 * inv)
		m.Prefixes(inv)
		m.JournalAppend(time.Duration(inv)*10*time.Millisecond, nil)
		m.InvalidationsIssued(inv)
		m.InvalidationsThrottled(inv - 1)
		if err := m.Flush(t0.Add(time.Duration(inv) * time.Second)); err != nil {
			t.Fatal(err)
		}
		docs, err := emftest.ParseAll(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if len(docs) != 1 {
			t.Fatalf("invocation %d: got %d lines, want 1", inv, len(docs))
		}
		d := docs[0]
		for name, want := range map[string]float64{
			obs.MetricNotifications: float64(10 * inv), obs.MetricPrefixes: float64(inv),
			obs.MetricInvalidationsIssued: float64(inv), obs.MetricInvalidationsThrottled: float64(inv - 1),
			obs.MetricJournalAppendErrors: 0,
		} {
			if got := d.Numbers[name]; got != want {
				t.Errorf("invocation %d: %s got %v, want %v", inv, name, got, want)
			}
		}
		if h := d.Histograms[obs.MetricJournalAppendLatency]; h.Cnt != 1 || math.Abs(h.Max-float64(inv*10)) > 1e-9 {
			t.Errorf("invocation %d: append latency %+v", inv, h)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	t.Parallel()
	var m *obs.TileMetrics
	m.Request("osm", obs.TierMemory, 1, time.Millisecond)
	m.OriginFetch(time.Millisecond, nil)
	m.JournalCheck(time.Millisecond, nil)
	m.PurgesApplied(1, 1, time.Second)
	m.WatchTiers(nil, nil)
	if err := m.MaybeFlush(t0); err != nil {
		t.Error(err)
	}
	var w *obs.WorkerMetrics
	w.Notifications(1)
	if err := w.Flush(t0); err != nil {
		t.Error(err)
	}
}

func TestMetricsNeedAFunctionName(t *testing.T) {
	t.Parallel()
	if _, err := obs.NewTileMetrics(obs.MetricsConfig{}, io.Discard, t0); err == nil {
		t.Error("no error without a function name")
	}
}

// The pair below is the hot-path cost of metrics and logging on a memory hit:
// what a hit records (its tier counter, bytes, tileset counters, one latency)
// plus the flush check and the disabled debug log line, against doing nothing.

func BenchmarkMemoryHitAccounting(b *testing.B) {
	m, _ := newTileMetrics(b, obs.MetricsConfig{MaxTileSets: obs.DefaultMaxTileSets}, t0)
	log := obs.NewLogger(io.Discard, "info")
	ctx := context.Background()
	now := t0.Add(time.Second)
	m.Request("osm", obs.TierMemory, 1, 0) // the tileset's counters exist after its first request
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request("osm", obs.TierMemory, 1234, 80*time.Microsecond)
			_ = m.MaybeFlush(now)
			if log.Enabled(ctx, slog.LevelDebug) {
				log.LogAttrs(ctx, slog.LevelDebug, "request", slog.String("key", "osm/1/2/3.pbf"))
			}
		}
	})
}

func BenchmarkMemoryHitNoAccounting(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
		}
	})
}
