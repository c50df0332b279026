package tileserver_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/tileserver"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// TestObjectLargerThanMaxTileBytes: an object over MAX_TILE_BYTES is a 502
// from its Content-Length, and is not cached.
func TestObjectLargerThanMaxTileBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, _ *servertest.Config, o *origin.Config) { o.MaxObjectBytes = 64 << 10 })
	e.put("big/1/0/0.png", bytes.Repeat([]byte{1}, 65<<10), "image/png", "")
	e.put("ok/1/0/0.png", bytes.Repeat([]byte{1}, 64<<10), "image/png", "")
	r := e.do("GET", "/big/1/0/0.png")
	expect(t, r, http.StatusBadGateway, "")
	if b := body(t, r); !strings.Contains(b, "MAX_TILE_BYTES") {
		t.Errorf("body %q does not say why", b)
	}
	if e.s3Gets.Load() != 1 {
		t.Errorf("%d S3 GETs: a refused object must not be retried", e.s3Gets.Load())
	}
	expect(t, e.do("GET", "/ok/1/0/0.png"), http.StatusOK, "MISS")
}

// inFlight counts the requests the S3 endpoint is answering, and the most
// at once.
type inFlight struct {
	now, peak atomic.Int64
}

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.now.Add(1)
		for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
		}
		defer f.now.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// TestS3HangWithImpatientClients: under an S3 hang, 100 clients that give
// up leave no fetch behind (the last waiter's departure cancels it), no more
// than MaxOriginFetches reach S3 at once, and misses succeed once S3 is back.
func TestS3HangWithImpatientClients(t *testing.T) {
	t.Parallel()
	var flying inFlight
	e := newEnv(t, withS3Wrapper(flying.wrap), withConfig(func(c *servertest.Config) {
		c.MaxOriginFetches = 4
		c.OriginTimeout = time.Hour
	}))
	for i := range 100 {
		e.put(fmt.Sprintf("h/%d/0/0.png", i), []byte("tile"), "image/png", "")
	}
	// A hang that ends when the client goes away, so the endpoint's count
	// of requests in flight is the sockets the instance holds.
	e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/h/"), Delay: time.Hour})
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			rec := httptest.NewRecorder()
			e.srv.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", fmt.Sprintf("/h/%d/0/0.png", i), nil))
			if rec.Code != http.StatusGatewayTimeout {
				t.Errorf("client %d: %d, want 504", i, rec.Code)
			}
		})
	}
	wg.Wait()
	if p := e.srv.Stats().Handler.OriginInFlightPeak; p > 4 {
		t.Errorf("%d origin fetches at once, want at most MaxOriginFetches (4)", p)
	}
	// A cancelled request's socket closes a moment after its slot is
	// free, so S3 may see a few more at once, never one per client.
	if p := flying.peak.Load(); p > 8 {
		t.Errorf("%d S3 requests at once for 100 clients, want about MaxOriginFetches (4)", p)
	}
	// Every fetch is gone once its clients are: nothing waits for S3.
	for deadline := time.Now().Add(10 * time.Second); e.srv.Stats().Handler.OriginInFlight != 0 || flying.now.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d fetches and %d S3 requests still running after every client left", e.srv.Stats().Handler.OriginInFlight, flying.now.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.s3.Faults().Reset() // S3 answers again
	expect(t, e.do("GET", "/h/7/0/0.png"), http.StatusOK, "MISS")
	if s := e.srv.Stats().Handler; s.OriginFetches > 100+1 {
		t.Errorf("%d origin fetches", s.OriginFetches)
	}
}

// TestStaleWithoutWaitingAfterAFailure: once a fetch failed, expired
// copies go out stale at once (with the short stale Cache-Control) while
// one revalidation runs, instead of every request waiting for S3 again.
func TestStaleWithoutWaitingAfterAFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *servertest.Config) {
		c.OriginTimeout = 200 * time.Millisecond
		c.StaleCacheControl = "public, max-age=15"
	}))
	for _, k := range []string{"s/1/0/0.png", "s/1/0/1.png"} {
		e.put(k, []byte("old"), "image/png", "")
		expect(t, e.do("GET", "/"+k), http.StatusOK, "MISS")
	}
	e.clock.Advance(2 * time.Hour) // both expired
	release := make(chan struct{})
	t.Cleanup(func() { close(release); e.srv.Drain() }) // before the disk tier's directory goes
	e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/s/"), Hold: func() { <-release }})
	r := e.do("GET", "/s/1/0/0.png") // waits OriginTimeout, then stale
	expect(t, r, http.StatusOK, "STALE")
	if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=15" {
		t.Errorf("stale answer Cache-Control %q, want the short stale one", cc)
	}
	// Within the failure window: answered without waiting for the held S3
	// (waiting would block until the deferred release).
	done := make(chan *http.Response, 1)
	go func() { done <- e.do("GET", "/s/1/0/1.png") }()
	select {
	case r := <-done:
		expect(t, r, http.StatusOK, "STALE")
	case <-time.After(10 * time.Second):
		t.Fatal("a request after the failure waited for S3 again")
	}
}

// TestHTTPEdges: the answers RFC 9110 asks for.
func TestHTTPEdges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tileBody := bytes.Repeat([]byte("0123456789"), 2000)
	etag := e.put("x/1/0/0.png", tileBody, "image/png", "")
	e.put("x/1/0/1.pbf", []byte("compress bytes"), "application/vnd.mapbox-vector-tile", "compress")
	expect(t, e.do("GET", "/x/1/0/0.png"), 200, "MISS")

	r := e.do("GET", "/x/1/0/0.png", "Range", "bytes=-0")
	expect(t, r, http.StatusRequestedRangeNotSatisfiable, "")
	if r.Header.Get("Content-Range") != "bytes */20000" || r.Header.Get("Cache-Control") == "" {
		t.Errorf("416: Content-Range %q Cache-Control %q", r.Header.Get("Content-Range"), r.Header.Get("Cache-Control"))
	}
	r = e.do("GET", "/x/1/0/0.png", "Range", "bytes=19990-")
	expect(t, r, http.StatusPartialContent, "")
	if r.Header.Get("Content-Range") != "bytes 19990-19999/20000" || body(t, r) != "0123456789" {
		t.Errorf("206: %q", r.Header.Get("Content-Range"))
	}
	// If-Match and If-Unmodified-Since apply with and without Range.
	for _, rng := range []string{"", "bytes=0-1"} {
		hdr := []string{"If-Match", `"other"`}
		if rng != "" {
			hdr = append(hdr, "Range", rng)
		}
		expect(t, e.do("GET", "/x/1/0/0.png", hdr...), http.StatusPreconditionFailed, "")
		expect(t, e.do("GET", "/x/1/0/0.png", "If-Match", etag, "Range", "bytes=0-1"), http.StatusPartialContent, "")
		expect(t, e.do("GET", "/x/1/0/0.png", "If-Unmodified-Since", "Mon, 02 Jan 2006 15:04:05 GMT"), http.StatusPreconditionFailed, "")
	}
	// A content coding the server cannot decode goes only to clients that
	// accept it.
	r = e.do("GET", "/x/1/0/1.pbf", "Accept-Encoding", "gzip")
	expect(t, r, http.StatusNotAcceptable, "")
	if r.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("406 Vary %q", r.Header.Get("Vary"))
	}
	r = e.do("GET", "/x/1/0/1.pbf", "Accept-Encoding", "gzip, compress")
	expect(t, r, http.StatusOK, "")
	if r.Header.Get("Content-Encoding") != "compress" || r.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("compress client: %v", r.Header)
	}
	// CORS: * by default, preflights answered, never on the admin API.
	r = e.do("GET", "/x/1/0/0.png", "Origin", "https://app.example")
	if r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("ACAO %q", r.Header.Get("Access-Control-Allow-Origin"))
	}
	r = e.do("OPTIONS", "/x/1/0/0.png", "Origin", "https://app.example", "Access-Control-Request-Method", "GET",
		"Access-Control-Request-Headers", "range, if-none-match")
	expect(t, r, http.StatusNoContent, "")
	if r.Header.Get("Access-Control-Allow-Methods") == "" || r.Header.Get("Access-Control-Allow-Headers") != "range, if-none-match" {
		t.Errorf("preflight: %v", r.Header)
	}
	if r := e.do("GET", "/_tilesieve/health", "Origin", "https://app.example"); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS on the admin path space")
	}
	// Every 405 carries Allow.
	if r := e.do("DELETE", "/x/1/0/0.png"); r.StatusCode != 405 || r.Header.Get("Allow") == "" {
		t.Errorf("405: %d Allow %q", r.StatusCode, r.Header.Get("Allow"))
	}
}

// TestCORSReflectsListedOrigins: with a list, a listed origin is reflected
// with Vary: Origin, and another gets no CORS header (but the same Vary).
func TestCORSReflectsListedOrigins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *servertest.Config) { c.CORSAllowOrigins = "https://a.example, https://b.example" }))
	e.put("c/1/0/0.png", []byte("x"), "image/png", "")
	for _, tc := range []struct{ origin, want string }{
		{"https://a.example", "https://a.example"}, {"https://evil.example", ""}, {"", ""},
	} {
		r := e.do("GET", "/c/1/0/0.png", "Origin", tc.origin)
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != tc.want || r.Header.Get("Vary") != "Origin" {
			t.Errorf("origin %q: ACAO %q Vary %q, want %q and Vary: Origin", tc.origin, got, r.Header.Get("Vary"), tc.want)
		}
		// Every field the server adds for scripts is exposed to them: the
		// tier, the timings, and what the answer cost in S3.
		if tc.want != "" {
			exposed := r.Header.Get("Access-Control-Expose-Headers")
			for _, f := range []string{"X-Cache", "Server-Timing", tileserver.CostHeader} {
				if !strings.Contains(exposed, f) {
					t.Errorf("origin %q: Access-Control-Expose-Headers %q lacks %s", tc.origin, exposed, f)
				}
			}
		}
	}
	// An origin is scheme://host[:port], as a browser sends it: nothing
	// after the host, no user info.
	for _, bad := range []string{"not an origin", "ftp://a.example", "https://a.example/", "https://a.example?", "https://a.example#x", "https://u@a.example"} {
		if _, err := servertest.New(servertest.Config{CORSAllowOrigins: bad}, servertest.Deps{Memory: e.mem, Origin: e.client}); err == nil {
			t.Errorf("CORS origin %q was accepted", bad)
		}
	}
}

// discard is a ResponseWriter that keeps nothing of the body.
type discard struct {
	h      http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *discard) WriteHeader(s int)           { d.status = s }
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// TestTileTooBigForMemoryIsStreamed: a tile the memory tier does not admit
// is streamed from its disk file, not read whole per request (50 concurrent
// readers of a 2 MiB tile allocate a small fraction of 50 × 2 MiB), with
// ranges, and decoded as it streams for a client without gzip.
func TestTileTooBigForMemoryIsStreamed(t *testing.T) {
	big := make([]byte, 2<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	e := newEnv(t, withMemBytes(4<<20)) // admits entries up to 512 KiB
	e.put("big/1/0/0.png", big, "image/png", "")
	expect(t, e.do("GET", "/big/1/0/0.png"), http.StatusOK, "MISS") // fills the disk tier
	if _, ok := e.mem.Get("big/1/0/0.png"); ok {
		t.Fatal("the memory tier admitted a tile over its entry limit")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			w := &discard{}
			e.srv.ServeHTTP(w, httptest.NewRequest("GET", "/big/1/0/0.png", nil))
			if w.status != 200 || w.n != len(big) || w.h.Get("X-Cache") != "HIT-DISK" {
				t.Errorf("streamed read: %d, %d bytes, %s", w.status, w.n, w.h.Get("X-Cache"))
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(50*len(big)/4) {
		t.Errorf("50 reads of a %d-byte tile allocated %d bytes: it is read whole, not streamed", len(big), alloc)
	}
	r := e.do("GET", "/big/1/0/0.png", "Range", "bytes=100-199")
	expect(t, r, http.StatusPartialContent, "HIT-DISK")
	if b := body(t, r); b != string(big[100:200]) {
		t.Errorf("streamed range: %d bytes", len(b))
	}
	// Stored gzip, decoded as it streams for a client without gzip.
	e.put("big/1/0/1.pbf", gz(big), "application/vnd.mapbox-vector-tile", "gzip")
	expect(t, e.do("GET", "/big/1/0/1.pbf", "Accept-Encoding", "gzip"), http.StatusOK, "MISS")
	r = e.do("GET", "/big/1/0/1.pbf")
	if b := body(t, r); r.StatusCode != 200 || b != string(big) || r.Header.Get("Content-Encoding") != "" || r.Header.Get("X-Cache") != "HIT-DISK" {
		t.Errorf("decoded stream: %d, %d bytes, encoding %q, %s", r.StatusCode, len(b), r.Header.Get("Content-Encoding"), r.Header.Get("X-Cache"))
	}
	// Stored brotli and zstd, likewise.
	for i, c := range []pmtiles.Compression{pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		key := fmt.Sprintf("big/1/1/%d.pbf", i)
		stored := pmtilestest.Compress(big, c)
		e.put(key, stored, "application/vnd.mapbox-vector-tile", c.ContentEncoding())
		r := e.do("GET", "/"+key, "Accept-Encoding", c.ContentEncoding())
		if b := body(t, r); r.StatusCode != 200 || b != string(stored) || r.Header.Get("Content-Encoding") != c.ContentEncoding() {
			t.Errorf("%v client: %d, %d bytes, encoding %q", c, r.StatusCode, len(b), r.Header.Get("Content-Encoding"))
		}
		r = e.do("GET", "/"+key, "Accept-Encoding", "gzip")
		if b := body(t, r); r.StatusCode != 200 || b != string(big) || r.Header.Get("Content-Encoding") != "" || r.Header.Get("X-Cache") != "HIT-DISK" {
			t.Errorf("decoded %v stream: %d, %d bytes, encoding %q, %s", c, r.StatusCode, len(b), r.Header.Get("Content-Encoding"), r.Header.Get("X-Cache"))
		}
	}
}

// bombBytes is what a bomb decodes to: 16 times the decoder's floor
// (minDecodeOK) and far past its ratio bound (100 to 1), which is what
// refuses it; compressing more zeros only costs time under -race.
const bombBytes = 16 << 20

// TestGzipBombRefused: a small stored gzip tile that decodes to far more
// than a tile (16 MiB from a few KB) is refused to clients without gzip,
// before anything is decoded, and still passes through to those with gzip.
// Not parallel: it reads the process's allocation counters, which the
// parallel tests' allocations would otherwise add to.
func TestGzipBombRefused(t *testing.T) {
	e := newEnv(t)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(make([]byte, bombBytes))
	zw.Close()
	e.put("bomb/1/0/0.pbf", gz.Bytes(), "application/vnd.mapbox-vector-tile", "gzip")
	expect(t, e.do("GET", "/bomb/1/0/0.pbf", "Accept-Encoding", "gzip"), http.StatusOK, "MISS")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		r := e.do("GET", "/bomb/1/0/0.pbf")
		expect(t, r, http.StatusBadGateway, "")
		if b := body(t, r); !strings.Contains(b, "decodes past the limit") {
			t.Fatalf("body %q", b)
		}
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("20 refused decodes allocated %d bytes", alloc)
	}
}

// TestBrotliZstdBombsRefused: brotli and zstd tiles that decode to far
// more than a tile are refused to clients without their coding, at the
// decode limit, and pass through to clients with it.
func TestBrotliZstdBombsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, c := range []pmtiles.Compression{pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		key := fmt.Sprintf("bomb/1/1/%d.pbf", i)
		e.put(key, pmtilestest.Compress(make([]byte, bombBytes), c), "application/vnd.mapbox-vector-tile", c.ContentEncoding())
		expect(t, e.do("GET", "/"+key, "Accept-Encoding", c.ContentEncoding()), http.StatusOK, "MISS")
		r := e.do("GET", "/"+key)
		expect(t, r, http.StatusBadGateway, "")
		if got, want := body(t, r), "stored tile decodes past the limit; ask for it with Accept-Encoding: "+c.ContentEncoding()+"\n"; got != want {
			t.Errorf("%v: got body %q, want %q", c, got, want)
		}
		r = e.do("GET", "/"+key, "Accept-Encoding", "gzip")
		expect(t, r, http.StatusBadGateway, "")
	}
}

// TestCorruptBrotliZstdTile: stored bytes that do not decode are a 502
// naming the coding for clients without it.
func TestCorruptBrotliZstdTile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i, enc := range []string{"br", "zstd"} {
		key := fmt.Sprintf("bad/1/0/%d.pbf", i)
		e.put(key, []byte("\xff\xff\xff\xff not compressed"), "application/vnd.mapbox-vector-tile", enc)
		r := e.do("GET", "/"+key)
		expect(t, r, http.StatusBadGateway, "")
		if got, want := body(t, r), "stored tile is not valid "+enc+"\n"; got != want {
			t.Errorf("%s: got body %q, want %q", enc, got, want)
		}
	}
}
