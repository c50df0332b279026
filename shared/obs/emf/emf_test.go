package emf_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/obs/emf"
	"github.com/tilesieve/tilesieve/shared/obs/emf/emftest"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newRegistry(t testing.TB, cfg emf.Config) (*emf.Registry, *bytes.Buffer) {
	t.Helper()
	if cfg.Namespace == "" {
		cfg.Namespace = "test"
	}
	if cfg.Dimensions == nil {
		cfg.Dimensions = []emf.Dimension{{Name: "FunctionName", Value: "tiles"}}
	}
	var out bytes.Buffer
	r, err := emf.New(cfg, &out, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r, &out
}

func parse(t *testing.T, out *bytes.Buffer) []*emftest.Doc {
	t.Helper()
	docs, err := emftest.ParseAll(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	return docs
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  emf.Config
		ok   bool
	}{
		{"fine", emf.Config{Namespace: "n", Dimensions: []emf.Dimension{{Name: "FunctionName", Value: "f"}}}, true},
		{"no namespace", emf.Config{}, false},
		{"empty dimension value", emf.Config{Namespace: "n", Dimensions: []emf.Dimension{{Name: "FunctionName"}}}, false},
		{"dimension named _aws", emf.Config{Namespace: "n", Dimensions: []emf.Dimension{{Name: "_aws", Value: "x"}}}, false},
		{"negative interval", emf.Config{Namespace: "n", Interval: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestLineIsEMFWithTheRecordedNumbers(t *testing.T) {
	t.Parallel()
	r, out := newRegistry(t, emf.Config{HighResolution: true})
	hits := r.Counter("Hits", emf.Count)
	bytesOut := r.Counter("BytesServed", emf.Bytes)
	r.Counter("Idle", emf.Count)
	r.Gauge("CacheBytes", emf.Bytes, func() (float64, bool) { return 1 << 20, true })
	r.Gauge("Unknown", emf.Bytes, func() (float64, bool) { return 0, false })
	lat := r.Distribution("Latency")
	for i := range 10 {
		hits.Inc()
		bytesOut.Add(100)
		lat.Record(time.Duration(i+1) * time.Millisecond)
	}
	if err := r.Flush(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	docs := parse(t, out)
	if len(docs) != 1 {
		t.Fatalf("got %d lines, want 1", len(docs))
	}
	d := docs[0]
	if d.Timestamp != t0.Add(time.Second).UnixMilli() || d.Namespace != "test" || d.DimValues["FunctionName"] != "tiles" {
		t.Errorf("got timestamp %d namespace %q dims %v", d.Timestamp, d.Namespace, d.DimValues)
	}
	want := map[string]float64{"Hits": 10, "BytesServed": 1000, "Idle": 0, "CacheBytes": 1 << 20}
	for name, v := range want {
		if got, ok := d.Numbers[name]; !ok || got != v {
			t.Errorf("%s: got %v (present %v), want %v", name, got, ok, v)
		}
	}
	if _, ok := d.Numbers["Unknown"]; ok {
		t.Error("a gauge that said not ok was sent")
	}
	h, ok := d.Histograms["Latency"]
	if !ok || h.Cnt != 10 || h.Min != 1 || h.Max != 10 || h.Sum != 55 {
		t.Errorf("Latency: got %+v, want 10 values 1..10 ms summing to 55", h)
	}
	if d.Units["Latency"] != "Milliseconds" || d.Units["BytesServed"] != "Bytes" {
		t.Errorf("units %v", d.Units)
	}

	// Counters restart from zero; an empty distribution is left out.
	hits.Inc()
	if err := r.Flush(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	d = parse(t, out)[0]
	if d.Numbers["Hits"] != 1 || d.Numbers["BytesServed"] != 0 {
		t.Errorf("second line: Hits %v BytesServed %v, want 1 and 0", d.Numbers["Hits"], d.Numbers["BytesServed"])
	}
	if _, ok := d.Histograms["Latency"]; ok {
		t.Error("an empty distribution was sent")
	}
}

func TestMaybeFlushAtMostOncePerInterval(t *testing.T) {
	t.Parallel()
	clock := fakeclock.New(t0)
	var out bytes.Buffer
	r, err := emf.New(emf.Config{Namespace: "test", Interval: 10 * time.Second}, &out, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := r.Counter("Requests", emf.Count)
	var total int
	var stamps []int64
	// A request every 300 ms for five minutes.
	for range 1000 {
		clock.Advance(300 * time.Millisecond)
		c.Inc()
		total++
		before := out.Len()
		if err := r.MaybeFlush(clock.Now()); err != nil {
			t.Fatal(err)
		}
		if out.Len() > before {
			stamps = append(stamps, clock.Now().UnixMilli())
		}
	}
	if err := r.Flush(clock.Now()); err != nil {
		t.Fatal(err)
	}
	docs := parse(t, &out)
	var sum float64
	for _, d := range docs {
		sum += d.Numbers["Requests"]
	}
	if int(sum) != total {
		t.Errorf("got %v requests over %d lines, want %d", sum, len(docs), total)
	}
	// A line goes out on the first request at or after it is due, every 10.2 s
	// here (34 requests): 29 lines in 300 s.
	if got, want := len(stamps), 29; got != want {
		t.Errorf("got %d lines from MaybeFlush over 300 s at a 10 s interval, want %d", got, want)
	}
	for i := 1; i < len(stamps); i++ {
		if gap := stamps[i] - stamps[i-1]; gap < 10_000 {
			t.Errorf("lines %d and %d are %d ms apart, less than the interval", i-1, i, gap)
		}
	}
}

func TestConcurrentRecordingLosesNothing(t *testing.T) {
	t.Parallel()
	r, out := newRegistry(t, emf.Config{Interval: time.Nanosecond})
	c := r.Counter("Requests", emf.Count)
	d := r.Distribution("Latency")
	const workers, each = 8, 5000
	var wg sync.WaitGroup
	var stop atomic.Bool
	var flushes sync.WaitGroup
	flushes.Add(1)
	var mu sync.Mutex // guards out, read by the flusher and the test
	go func() {
		// Flush while the recorders run, so records straddle lines.
		defer flushes.Done()
		for i := 1; !stop.Load(); i++ {
			mu.Lock()
			_ = r.Flush(t0.Add(time.Duration(i) * time.Millisecond))
			mu.Unlock()
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c.Inc()
				d.Record(time.Duration(1+(w*each+i)%997) * time.Microsecond * 100)
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	flushes.Wait()
	if err := r.Flush(t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var n, hn float64
	for _, doc := range parse(t, out) {
		n += doc.Numbers["Requests"]
		hn += doc.Histograms["Latency"].Cnt
	}
	if n != workers*each || hn != workers*each {
		t.Errorf("got %v counts and %v recordings, want %d of each", n, hn, workers*each)
	}
}

func TestPercentilesCloseToTheTruth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gen  func(*rand.Rand) time.Duration
	}{
		{"uniform 1-100 ms", func(rng *rand.Rand) time.Duration {
			return time.Duration(1e6 + rng.Float64()*99e6)
		}},
		{"log-normal around 20 ms", func(rng *rand.Rand) time.Duration {
			return time.Duration(20e6 * math.Exp(rng.NormFloat64()))
		}},
		// Six decades: more than 100 buckets are filled, so they are merged.
		{"log-uniform 10 µs to 10 s", func(rng *rand.Rand) time.Duration {
			return time.Duration(1e4 * math.Pow(10, 6*rng.Float64()))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, out := newRegistry(t, emf.Config{})
			d := r.Distribution("Latency")
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 20000
			truth := make([]float64, n)
			for i := range truth {
				x := tc.gen(rng)
				d.Record(x)
				truth[i] = float64(x) / 1e6
			}
			slices.Sort(truth)
			if err := r.Flush(t0); err != nil {
				t.Fatal(err)
			}
			h := parse(t, out)[0].Histograms["Latency"]
			if h.Cnt != n || len(h.Values) > emf.MaxValues {
				t.Fatalf("got %v recordings in %d values, want %d in at most %d", h.Cnt, len(h.Values), n, emf.MaxValues)
			}
			// Merged buckets are coarser: allow 15% then, 7% otherwise.
			tol := 0.07
			if len(h.Values) == emf.MaxValues || strings.HasPrefix(tc.name, "log-uniform") {
				tol = 0.15
			}
			for _, p := range []float64{50, 90, 99, 99.9} {
				want := truth[int(math.Ceil(p/100*n))-1]
				if got := h.Percentile(p); math.Abs(got-want) > tol*want {
					t.Errorf("p%v: got %.3f ms, want %.3f ms ± %.0f%%", p, got, want, tol*100)
				}
			}
			if math.Abs(h.Sum-sumOf(truth)) > 1e-3*n {
				t.Errorf("Sum: got %v, want %v", h.Sum, sumOf(truth))
			}
		})
	}
}

func sumOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

func TestManyMetricsSplitAcrossLines(t *testing.T) {
	t.Parallel()
	r, out := newRegistry(t, emf.Config{})
	for i := range 250 {
		r.Counter(fmt.Sprintf("M%03d", i), emf.Count).Add(int64(i))
	}
	if err := r.Flush(t0); err != nil {
		t.Fatal(err)
	}
	docs := parse(t, out)
	if len(docs) != 3 {
		t.Fatalf("got %d lines for 250 metrics, want 3", len(docs))
	}
	seen := 0
	for _, d := range docs {
		seen += len(d.Numbers)
	}
	if seen != 250 {
		t.Errorf("got %d metrics over the lines, want 250", seen)
	}
}

func TestGroupCarriesItsDimensionAndOmitsZeros(t *testing.T) {
	t.Parallel()
	r, out := newRegistry(t, emf.Config{})
	r.Counter("Requests", emf.Count).Add(3)
	g, err := r.Group(emf.Dimension{Name: "TileSet", Value: "osm"})
	if err != nil {
		t.Fatal(err)
	}
	gr := g.Counter("Requests", emf.Count)
	g.Counter("BytesServed", emf.Bytes)
	quiet, _ := r.Group(emf.Dimension{Name: "TileSet", Value: "quiet"})
	quiet.Counter("Requests", emf.Count)
	gr.Add(2)
	if _, err := r.Group(emf.Dimension{Name: "FunctionName", Value: "x"}); err == nil {
		t.Error("a group may not repeat the registry's dimension")
	}
	if err := r.Flush(t0); err != nil {
		t.Fatal(err)
	}
	docs := parse(t, out)
	if len(docs) != 2 {
		t.Fatalf("got %d lines, want 2 (registry, osm; quiet has nothing)", len(docs))
	}
	osm := docs[1]
	if got := osm.Dimensions; len(got) != 1 || !slices.Equal(got[0], []string{"FunctionName", "TileSet"}) {
		t.Errorf("dimension sets %v, want [[FunctionName TileSet]]", got)
	}
	if osm.DimValues["TileSet"] != "osm" || osm.Numbers["Requests"] != 2 {
		t.Errorf("got %v %v", osm.DimValues, osm.Numbers)
	}
	if _, ok := osm.Numbers["BytesServed"]; ok {
		t.Error("a zero counter was sent in a group")
	}
}

func TestRegistrationMistakesPanic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    func(*emf.Registry)
	}{
		{"twice", func(r *emf.Registry) { r.Counter("A", emf.Count); r.Counter("A", emf.Count) }},
		{"bad unit", func(r *emf.Registry) { r.Counter("A", "Furlongs") }},
		{"empty name", func(r *emf.Registry) { r.Counter("", emf.Count) }},
		{"dimension name", func(r *emf.Registry) { r.Counter("FunctionName", emf.Count) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRegistry(t, emf.Config{})
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.f(r)
		})
	}
}

func BenchmarkAtomicAdd(b *testing.B) {
	var v atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v.Add(1)
		}
	})
}

func BenchmarkCounterAdd(b *testing.B) {
	r, _ := newRegistry(b, emf.Config{})
	c := r.Counter("Requests", emf.Count)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
}

func BenchmarkDistributionRecord(b *testing.B) {
	r, _ := newRegistry(b, emf.Config{})
	d := r.Distribution("Latency")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		x := 137 * time.Microsecond
		for pb.Next() {
			d.Record(x)
			x = (x*7 + 13*time.Microsecond) % (50 * time.Millisecond)
		}
	})
}

func BenchmarkMaybeFlushNotDue(b *testing.B) {
	r, _ := newRegistry(b, emf.Config{})
	now := t0.Add(time.Second)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = r.MaybeFlush(now)
		}
	})
}
