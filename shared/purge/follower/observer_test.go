package follower

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/obs/emf/emftest"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

// The tile function hands this metric set to the follower.
var _ Observer = (*obs.TileMetrics)(nil)

// observed is one call to an Observer.
type observed struct {
	check   bool // JournalCheck, else PurgesApplied
	elapsed time.Duration
	err     error
	purges  int
	keys    int
	age     time.Duration
}

type observer struct {
	mu    sync.Mutex // guards calls
	calls []observed
}

func (o *observer) JournalCheck(elapsed time.Duration, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observed{check: true, elapsed: elapsed, err: err})
}

func (o *observer) PurgesApplied(purges, keys int, age time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, observed{purges: purges, keys: keys, age: age})
}

func (o *observer) take() []observed {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.calls
	o.calls = nil
	return c
}

// countingRecorder is a Target that counts: each prefix drops as many keys
// as it has bytes, and everything drops 100.
type countingRecorder struct{ recorder }

func (c *countingRecorder) Purge(p string) (int, error) {
	n := len(p)
	if p == "" {
		n = 100
	}
	return n, c.purge(p)
}

// TestFollowerObserver: the observer sees every check (a good one, a 304,
// a failed one) with its duration, and the entries a check applied with the
// age of the newest.
func TestFollowerObserver(t *testing.T) {
	t.Parallel()
	obsv := &observer{}
	fe := newFollowerEnv(t, Config{Interval: time.Second, Observer: obsv})
	fe.w = fe.env.journal(journal.Options{Now: fe.clock.Now}) // entries stamped on the test's clock
	// Every read of the head takes 7ms on the test's clock.
	const rtt = 7 * time.Millisecond
	fe.srv.Faults().Add(s3local.Fault{Match: func(r *http.Request) bool {
		if matchPath(http.MethodGet, "head.json")(r) {
			fe.clock.Advance(rtt)
		}
		return false
	}})
	ctx := context.Background()

	fe.append(t, "old/") // before the start, over empty tiers: nothing to apply
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := obsv.take(); len(got) != 1 || !got[0].check || got[0].err != nil || got[0].elapsed != rtt {
		t.Errorf("start: observed %+v, want one good check of %v", got, rtt)
	}

	fe.syncAfter(ctx, time.Second) // 304
	if got := obsv.take(); len(got) != 1 || !got[0].check || got[0].err != nil || got[0].elapsed != rtt {
		t.Errorf("unchanged: observed %+v, want one good check", got)
	}
	if s := fe.f.Stats(); s.Unchanged != 1 {
		t.Fatalf("stats %+v, want the check answered 304", s)
	}

	fe.append(t, "a/", "b/1.png")
	fe.clock.Advance(500 * time.Millisecond)
	fe.append(t, "c/")
	fe.syncAfter(ctx, 1500*time.Millisecond)
	// The newest entry was recorded 1.5s before the check, which took rtt.
	want := []observed{{purges: 2, age: 1500*time.Millisecond + rtt}, {check: true, elapsed: rtt}}
	if got := obsv.take(); !slices.Equal(got, want) {
		t.Errorf("applied: observed %+v, want %+v", got, want)
	}

	fe.srv.Faults().Add(s3local.Fault{Match: matchPath(http.MethodGet, "head.json"), Times: 1, Status: http.StatusServiceUnavailable})
	fe.syncAfter(ctx, time.Second)
	got := obsv.take()
	if len(got) != 1 || !got[0].check || got[0].err == nil {
		t.Errorf("failed: observed %+v, want one failed check", got)
	}
	if err := fe.f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := obsv.take(); len(got) != 1 || !got[0].check || got[0].err != nil {
		t.Errorf("Sync: observed %+v, want one good check", got)
	}
}

// TestFollowerObserverCounts: a counting Target's counts reach the
// observer, and a check that drops both tiers for a new journal counts the
// entries it covered.
func TestFollowerObserverCounts(t *testing.T) {
	t.Parallel()
	obsv := &observer{}
	e := newEnv(t)
	clk := newClock()
	target := &countingRecorder{}
	f := New(e.journal(journal.Options{}), target, Config{Now: clk.Now, Observer: obsv}, nil)
	w := e.journal(journal.Options{Now: clk.Now})
	ctx := context.Background()
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	obsv.take()
	appendAt := func(w *journal.Journal, prefixes ...string) {
		t.Helper()
		if _, err := w.Append(ctx, prefixes, "test"); err != nil {
			t.Fatal(err)
		}
	}
	appendAt(w, "osm/", "sat/1/")
	clk.Advance(time.Second)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []observed{{purges: 1, keys: len("osm/") + len("sat/1/"), age: time.Second}, {check: true}}
	if got := obsv.take(); !slices.Equal(got, want) {
		t.Errorf("observed %+v, want %+v", got, want)
	}

	// Wiped and written again between two checks: a new journal id drops
	// everything, which covers its two entries.
	e.deleteHead(t)
	w = e.journal(journal.Options{Now: clk.Now})
	appendAt(w, "x/")
	appendAt(w, "y/")
	clk.Advance(2 * time.Second)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want = []observed{{purges: 2, keys: 100, age: 2 * time.Second}, {check: true}}
	if got := obsv.take(); !slices.Equal(got, want) {
		t.Errorf("new journal: observed %+v, want %+v", got, want)
	}
	if got := target.take(); !slices.Equal(got, []string{"prefix osm/", "prefix sat/1/", "all"}) {
		t.Errorf("target got %q", got)
	}
}

// TestFollowerObserverTileMetrics: with the tile function's metric set as
// the observer, its lines count the checks, the purges and the lag.
func TestFollowerObserverTileMetrics(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	clk := newClock()
	m, err := obs.NewTileMetrics(obs.MetricsConfig{FunctionName: "tiles"}, &out, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	f := New(e.journal(journal.Options{}), &recorder{}, Config{Now: clk.Now, Observer: m}, nil)
	w := e.journal(journal.Options{Now: clk.Now})
	ctx := context.Background()
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []string{"osm/"}, "test"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	if err := f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	e.srv.Faults().Add(s3local.Fault{Match: matchPath(http.MethodGet, "head.json"), Times: 1, Status: http.StatusInternalServerError})
	if err := f.Sync(ctx); err == nil {
		t.Fatal("a failing check succeeded")
	}
	if err := m.Flush(clk.Now()); err != nil {
		t.Fatal(err)
	}
	docs, err := emftest.ParseAll(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("got %d lines, want 1", len(docs))
	}
	d := docs[0]
	for name, want := range map[string]float64{
		obs.MetricJournalChecks: 3, obs.MetricJournalCheckErrors: 1, obs.MetricPurgesApplied: 1, obs.MetricKeysDropped: 0,
	} {
		if got := d.Numbers[name]; got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	if h := d.Histograms[obs.MetricJournalLag]; h.Cnt != 1 || h.Min != 3000 || h.Max != 3000 {
		t.Errorf("%s %+v, want one value of 3000 ms", obs.MetricJournalLag, h)
	}
}
