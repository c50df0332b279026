package workload

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestCantaloupe(t *testing.T) {
	t.Parallel()
	w := Cantaloupe("img")
	if len(w.Phases) != 1 || w.Phases[0].Concurrency != 10 || w.Requests() != 91 || len(w.Keys()) != 91 {
		t.Errorf("got %d phases, %d requests, %d keys", len(w.Phases), w.Requests(), len(w.Keys()))
	}
}

func TestMirador(t *testing.T) {
	t.Parallel()
	w := Mirador("img")
	want := []struct{ n, c int }{{2, 2}, {28, 6}, {50, 6}, {24, 18}}
	if len(w.Phases) != len(want) {
		t.Fatalf("got %d phases, want %d", len(w.Phases), len(want))
	}
	for i, p := range w.Phases {
		if len(p.Keys) != want[i].n || p.Concurrency != want[i].c {
			t.Errorf("phase %d: got %d keys at %d, want %d at %d", i+1, len(p.Keys), p.Concurrency, want[i].n, want[i].c)
		}
	}
	if len(w.Keys()) != w.Requests() {
		t.Errorf("keys repeat: %d distinct of %d", len(w.Keys()), w.Requests())
	}
	for _, k := range w.Keys() {
		if err := tile.ValidateKey(k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if !strings.HasSuffix(w.Phases[0].Keys[0], "info.json") {
		t.Errorf("phase 1 starts with %q", w.Phases[0].Keys[0])
	}
}

func TestRunConcurrencyAndBarrier(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	var phase2Started atomic.Bool
	var phase1Done atomic.Int32
	w := Workload{Phases: []Phase{
		{Keys: []string{"a1", "a2", "a3", "a4", "a5", "a6"}, Concurrency: 3},
		{Keys: []string{"b1", "b2"}, Concurrency: 2},
	}}
	f := func(_ context.Context, k string) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		if k[0] == 'a' {
			if phase2Started.Load() {
				t.Errorf("phase 2 began before phase 1 ended")
			}
			phase1Done.Add(1)
		} else {
			phase2Started.Store(true)
		}
		if k == "b2" {
			return errors.New("boom")
		}
		return nil
	}
	res := Run(context.Background(), w, f)
	if len(res.Latencies) != 8 || res.Errors != 1 || res.FirstErr != "boom" || len(res.Phases) != 2 {
		t.Errorf("got %d latencies, %d errors (%q), %d phases", len(res.Latencies), res.Errors, res.FirstErr, len(res.Phases))
	}
	if peak.Load() > 3 {
		t.Errorf("peak concurrency %d, want ≤ 3", peak.Load())
	}
}

func TestHTTPFetcher(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("tile"))
	}))
	defer srv.Close()
	f := HTTPFetcher(srv.Client(), srv.URL+"/")
	if err := f(context.Background(), "a/b.jpg"); err != nil {
		t.Errorf("got %v", err)
	}
	if err := f(context.Background(), "missing"); err == nil {
		t.Errorf("404 was not an error")
	}
}

func TestZipf(t *testing.T) {
	t.Parallel()
	z := NewZipf(1000, 1.0, 1)
	counts := make([]int, 1000)
	for range 100_000 {
		counts[z.Next()]++
	}
	// P(rank 0) = 1/H(1000) ≈ 0.134; rank 1 about half of that.
	if c := counts[0]; c < 12_500 || c > 14_300 {
		t.Errorf("rank 0 drawn %d times, want about 13,400", c)
	}
	if r := float64(counts[0]) / float64(counts[1]); r < 1.8 || r > 2.2 {
		t.Errorf("rank0/rank1 = %.2f, want about 2", r)
	}
	for _, r := range []int{0, 1, 999, 123456} {
		if s := TileSize(r); s < 10_000 || s > 60_000 {
			t.Errorf("TileSize(%d) = %d", r, s)
		}
	}
}
