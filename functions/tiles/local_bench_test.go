//go:build linux

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/tilegen"
)

// The local server's share of a memory hit, net/http's own work aside: one
// request through the handler serve runs, into a writer that keeps nothing
// but a fresh header map per request (as net/http gives each request one).
//
//	go test -run '^$' -bench 'BenchmarkLocal' -benchmem ./functions/tiles/

// localTileBytes is the size of the benchmarks' tile (section 2's 12 KB).
const localTileBytes = 12 << 10

// newLocalApp is the tile function as the local server composes it (off
// Lambda, metrics on unless noMetrics) over an in-process S3 holding one
// 12 KB tile, its memory tier warm.
func newLocalApp(b *testing.B, noMetrics bool) (*app.App, *slog.Logger) {
	b.Helper()
	s3e := s3localtest.Start(b, "tiles")
	s3localtest.Put(b, s3e.Client, "tiles", "tiles/bench/12KB.png", tilegen.Incompressible(localTileBytes), "image/png", "")
	env := map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "MEM_CACHE_BYTES": "64MiB", "DISK_CACHE_BYTES": "0",
		"SYNC_INTERVAL": "1h", // the journal check is a separate cost (section 5)
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var opts []app.Option
	if !noMetrics {
		opts = append(opts, app.WithMetrics(io.Discard))
	}
	a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(s3e.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"}), log, append(adapterOptions(cfg), opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closeApp(b, a) })
	if !cfg.Metrics.Enabled || (a.Metrics == nil) != noMetrics {
		b.Fatalf("metrics on: %v, want %v", a.Metrics != nil, !noMetrics)
	}
	return a, log
}

// headerSink is an http.ResponseWriter that keeps the status and the byte
// count; reset gives it a new header map, as net/http does per request.
type headerSink struct {
	h      http.Header
	status int
	n      int
}

func (w *headerSink) Header() http.Header { return w.h }
func (w *headerSink) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *headerSink) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += len(p)
	return len(p), nil
}
func (w *headerSink) reset() { w.h, w.status, w.n = make(http.Header), 0, 0 }

// localRequest is a GET of the tile with a context shaped like net/http's
// (the server's and the connection's values, the connection's and the
// request's cancellation), so that what walks it pays what it pays there.
func localRequest(b *testing.B) *http.Request {
	b.Helper()
	ctx := context.WithValue(context.Background(), http.ServerContextKey, &http.Server{})
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080})
	ctx, cancelConn := context.WithCancel(ctx)
	ctx, cancelReq := context.WithCancel(ctx)
	b.Cleanup(func() { cancelReq(); cancelConn() })
	r := httptest.NewRequest(http.MethodGet, "/bench/12KB.png", nil).WithContext(ctx)
	r.Header.Set("User-Agent", "ApacheBench/2.3")
	r.Header.Set("Accept", "*/*")
	return r
}

// serveOnce runs one request through h and checks it was a whole memory hit.
func serveOnce(b *testing.B, h http.Handler, w *headerSink, r *http.Request) {
	w.reset()
	h.ServeHTTP(w, r)
	if w.status != http.StatusOK || w.n != localTileBytes || w.h.Get("X-Cache") != "HIT-MEMORY" {
		b.Fatalf("answer %d, %d bytes, X-Cache %q; want a 200 memory hit of %d bytes", w.status, w.n, w.h.Get("X-Cache"), localTileBytes)
	}
}

// BenchmarkLocalMemoryHit is one memory hit through the local server's
// handler, metrics on, as main serves it.
func BenchmarkLocalMemoryHit(b *testing.B) {
	a, log := newLocalApp(b, false)
	h, r, w := localHandler(a.Handler, log), localRequest(b), &headerSink{}
	w.reset()
	h.ServeHTTP(w, r) // fills the memory tier
	serveOnce(b, h, w, r)
	b.ReportAllocs()
	b.SetBytes(localTileBytes)
	for b.Loop() {
		serveOnce(b, h, w, r)
	}
}

// BenchmarkLocalPaired prices each layer of the local server's handler
// where the machine's noise neither hides nor makes it: the handlers below
// run in turn in one process, in batches whose order rotates, each batch
// timed by the CPU time of its thread (so time the thread spends waiting
// for a core on a busy machine is not counted). It reports each handler's
// mean CPU ns per request: core is the tile server alone (metrics on),
// nometrics the tile server of a function with metrics off, recover the
// core behind withRecover, local the handler serve runs.
func BenchmarkLocalPaired(b *testing.B) {
	on, log := newLocalApp(b, false)
	off, _ := newLocalApp(b, true)
	hs := []struct {
		name string
		h    http.Handler
	}{
		{"core", on.Handler},
		{"nometrics", off.Handler},
		{"recover", withRecover(on.Handler, log)},
		{"local", localHandler(on.Handler, log)},
	}
	r, w := localRequest(b), &headerSink{}
	for _, h := range hs {
		w.reset()
		h.h.ServeHTTP(w, r) // the first of each function fills its memory tier
		serveOnce(b, h.h, w, r)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const batch = 100
	total := make([]time.Duration, len(hs))
	ops := 0
	for b.Loop() {
		for i := range hs {
			j := (i + ops) % len(hs)
			start := threadCPU(b)
			for range batch {
				serveOnce(b, hs[j].h, w, r)
			}
			total[j] += threadCPU(b) - start
		}
		ops++
	}
	for i, h := range hs {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(ops*batch), h.name+"-cpu-ns/req")
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(b *testing.B) time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		b.Fatalf("clock_gettime: %v", errno)
	}
	return time.Duration(ts.Nano())
}
