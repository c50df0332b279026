package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/bench/e2e/floor"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

// sinkWriter is a reusable http.ResponseWriter that keeps nothing but the
// status and the byte count, so the benchmark measures the handler, not a
// recorder's buffer.
type sinkWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *sinkWriter) Header() http.Header { return w.h }
func (w *sinkWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += int64(len(p))
	return len(p), nil
}
func (w *sinkWriter) WriteHeader(code int) { w.status = code }
func (w *sinkWriter) reset()               { clear(w.h); w.status, w.n = 0, 0 }

// ServeModes are the sub-benchmarks of BenchmarkServe, floor last.
var ServeModes = []string{"memory", "disk", "origin", "static"}

// ServeFixture holds what BenchmarkServe needs: an S3 endpoint seeded with
// one IIIF image's tiles and a handler per mode.
type ServeFixture struct {
	s3       *LocalS3
	Set      tileset.Set
	reqs     []*http.Request
	handlers map[string]http.Handler
	dirs     []string
}

// NewServeFixture seeds the tiles and builds the four handlers:
// memory (every tile already in memory), disk (memory admits nothing, the
// disk tier holds every tile), origin (no tiers: every request is an S3
// GET at loopback) and static (e2e/floor over the same bytes).
func NewServeFixture(ctx context.Context, set tileset.Set) (*ServeFixture, error) {
	s3, err := NewLocalS3()
	if err != nil {
		return nil, err
	}
	f := &ServeFixture{s3: s3, Set: set, handlers: map[string]http.Handler{}}
	if err := tileset.Seed(ctx, s3.Client, Bucket, "", set); err != nil {
		f.Close()
		return nil, err
	}
	for _, t := range set {
		f.reqs = append(f.reqs, httptest.NewRequest(http.MethodGet, "/"+t.Key, nil))
	}
	o := s3.Origin()
	mem, err := NewInstance(o, TierOptions{})
	if err != nil {
		f.Close()
		return nil, err
	}
	dir, err := TempDir("serve-disk")
	if err != nil {
		f.Close()
		return nil, err
	}
	f.dirs = append(f.dirs, dir)
	dsk, err := NewInstance(o, TierOptions{NoMemory: true, DiskDir: dir})
	if err != nil {
		f.Close()
		return nil, err
	}
	org, err := NewInstance(o, TierOptions{NoMemory: true})
	if err != nil {
		f.Close()
		return nil, err
	}
	f.handlers["memory"] = mem.Server
	f.handlers["disk"] = dsk.Server
	f.handlers["origin"] = org.Server
	f.handlers["static"] = floor.New(set.Map())
	// Warm the memory and disk tiers, and check every handler answers 200.
	w := &sinkWriter{h: http.Header{}}
	for _, mode := range ServeModes {
		for _, r := range f.reqs {
			w.reset()
			f.handlers[mode].ServeHTTP(w, r)
			if w.status != http.StatusOK {
				f.Close()
				return nil, fmt.Errorf("serve fixture: %s %s: status %d", mode, r.URL.Path, w.status)
			}
		}
	}
	if dsk.Disk.Len() != len(set) || mem.Memory.Len() != len(set) {
		f.Close()
		return nil, fmt.Errorf("serve fixture: tiers not warm (memory %d, disk %d of %d)", mem.Memory.Len(), dsk.Disk.Len(), len(set))
	}
	return f, nil
}

// Close stops the endpoint and removes the disk tier.
func (f *ServeFixture) Close() {
	f.s3.Close()
	for _, d := range f.dirs {
		os.RemoveAll(d)
	}
}

// Bench is the body of BenchmarkServe/<mode>: one GET per op, cycling
// through the tiles, into a reused sink writer.
func (f *ServeFixture) Bench(mode string) func(b *testing.B) {
	h := f.handlers[mode]
	return func(b *testing.B) {
		b.ReportAllocs()
		w := &sinkWriter{h: make(http.Header, 16)}
		var bytes int64
		i := 0
		for b.Loop() {
			r := f.reqs[i%len(f.reqs)]
			i++
			w.reset()
			h.ServeHTTP(w, r)
			if w.status != http.StatusOK {
				b.Fatalf("%s %s: status %d", mode, r.URL.Path, w.status)
			}
			bytes += w.n
		}
		b.SetBytes(bytes / int64(max(i, 1)))
	}
}

// HandlerResult is section 0.
type HandlerResult struct {
	Tiles   int          `json:"tiles"`
	Bytes   int64        `json:"bytes"`
	Runs    int          `json:"runs"`
	Modes   []ModeResult `json:"modes"`
	Targets []Target     `json:"targets"`
	Command string       `json:"command"`
}

// ModeResult is one sub-benchmark (the median of Runs runs by ns/op).
type ModeResult struct {
	Mode        string  `json:"mode"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
	N           int     `json:"n"`
	VsStatic    float64 `json:"vs_static"`
}

// RunHandler runs BenchmarkServe's modes in this process: runs rounds, each
// running every mode once, in turn, so that a mode and the floor share the
// machine's state of the moment. A mode's ns/op is its median over the
// rounds; its ratio to the floor is the median of the rounds' ratios.
func RunHandler(ctx context.Context, set tileset.Set, runs int) (HandlerResult, error) {
	f, err := NewServeFixture(ctx, set)
	if err != nil {
		return HandlerResult{}, err
	}
	defer f.Close()
	res := HandlerResult{Tiles: len(set), Bytes: set.Bytes(), Runs: runs,
		Command: "cd bench && go test -run '^$' -bench BenchmarkServe -benchmem ./e2e/"}
	all := make([][]ModeResult, len(ServeModes))
	ratios := make([][]float64, len(ServeModes))
	for range runs {
		round := make([]float64, len(ServeModes))
		for i, mode := range ServeModes {
			r := testing.Benchmark(f.Bench(mode))
			round[i] = float64(r.T.Nanoseconds()) / float64(r.N)
			all[i] = append(all[i], ModeResult{Mode: mode, NsPerOp: round[i],
				AllocsPerOp: r.AllocsPerOp(), BytesPerOp: r.AllocedBytesPerOp(), N: r.N})
		}
		for i := range ServeModes {
			ratios[i] = append(ratios[i], round[i]/round[len(round)-1])
		}
	}
	for i := range ServeModes {
		m := medianMode(all[i])
		m.VsStatic = stats.MedianFloat(ratios[i])
		res.Modes = append(res.Modes, m)
	}
	res.Targets = []Target{withReason(Target{What: "memory hit ns/op ≤ 1.5x static", Want: 1.5, Got: res.Modes[0].VsStatic, Unit: "x"}.Check(),
		"per request the handler validates the path, reads the clock twice (the request's time and its Server-Timing), looks the key up in the memory tier's index, checks the conditional and Range headers and copies the tile's prepared fields; the floor looks the path up in a Go map and copies prebuilt header slices")}
	return res, nil
}

func medianMode(all []ModeResult) ModeResult {
	slices.SortFunc(all, func(a, b ModeResult) int { return cmp.Compare(a.NsPerOp, b.NsPerOp) })
	return all[(len(all)-1)/2]
}
