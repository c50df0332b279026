package tileserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tilename"
	"github.com/tilesieve/tilesieve/shared/tileserver"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

const bucket = "tiles"

// clock is the settable clock of one test.
type clock = fakeclock.Clock

func newClock() *clock { return fakeclock.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)) }

// env is one tile server over an in-process S3 endpoint.
type env struct {
	t      testing.TB
	s3     *s3local.Server
	s3URL  string
	client *origin.Client
	mem    *memory.Cache
	disk   *disk.Store
	srv    *servertest.Stack
	clock  *clock
	s3Reqs atomic.Int64 // requests that reached the S3 endpoint, but for beside
	s3Gets atomic.Int64
	// beside counts the plain GETs of keys under an archive's name (put as
	// NAME.pmtiles or NAME.mbtiles): the object read that runs beside the
	// probe of a name. It is cancelled once the name is found to be an
	// archive, but a request it had already sent can reach S3 after the
	// answer, so s3Reqs leaves these out and tests count them apart.
	beside   atomic.Int64
	archives sync.Map // archive names put, as keys
	wrapS3   func(http.Handler) http.Handler
	journal  *journal.Journal
	metrics  servertest.Metrics
	memMax   int64 // the memory tier's bound; default 64 MiB
	// follow, when set, configures the journal follower built with the
	// server (follower).
	follow   *follower.Config
	follower *follower.Follower
}

// withFollower builds the server with a journal follower of e.journal.
func withFollower(cfg follower.Config) option {
	return func(e *env, _ *servertest.Config, _ *origin.Config) { e.follow = &cfg }
}

// withMemBytes sets the memory tier's bound.
func withMemBytes(n int64) option {
	return func(e *env, _ *servertest.Config, _ *origin.Config) { e.memMax = n }
}

type option func(*env, *servertest.Config, *origin.Config)

func withConfig(f func(*servertest.Config)) option {
	return func(_ *env, c *servertest.Config, _ *origin.Config) { f(c) }
}

// withS3Wrapper puts a handler in front of the S3 endpoint.
func withS3Wrapper(w func(http.Handler) http.Handler) option {
	return func(e *env, _ *servertest.Config, _ *origin.Config) { e.wrapS3 = w }
}

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	e := &env{t: t, clock: newClock()}
	s3srv, err := s3local.New(s3local.Config{Buckets: []string{bucket}})
	if err != nil {
		t.Fatal(err)
	}
	e.s3 = s3srv
	cfg := servertest.Config{
		RevalidateAfter: time.Hour,
		OriginTimeout:   2 * time.Second,
		AdminToken:      "test-admin-token",
		Now:             e.clock.Now,
	}
	ocfg := origin.Config{Bucket: bucket, Prefix: "tiles/", MaxAttempts: 3, Now: e.clock.Now}
	for _, o := range opts {
		o(e, &cfg, &ocfg)
	}
	var h http.Handler = s3srv.Handler()
	if e.wrapS3 != nil {
		h = e.wrapS3(h)
	}
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.besideRead(r) {
			e.beside.Add(1)
		} else {
			e.s3Reqs.Add(1)
		}
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/"+bucket+"/tiles/") {
			e.s3Gets.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(counted)
	t.Cleanup(hs.Close)
	e.s3URL = hs.URL
	api := s3srv.Client(hs.URL)
	e.client = origin.NewWithS3(api, ocfg)
	if e.memMax == 0 {
		e.memMax = 64 << 20
	}
	// Bodies off the heap, as the tile function keeps them: every answer
	// must release its lease (checked at cleanup).
	e.mem, err = memory.New(memory.Config{MaxBytes: e.memMax, OffHeap: true})
	if err != nil {
		t.Fatal(err)
	}
	e.disk, err = disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 64 << 20, Now: e.clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.journal = journal.New(api, bucket, "_tilesieve/journal/", journal.Options{Now: e.clock.Now})
	deps := servertest.Deps{Memory: e.mem, Disk: e.disk, Origin: e.client, Purger: purge.NewPurger(e.journal, purge.PurgerConfig{}, nil), Metrics: e.metrics}
	if e.follow != nil {
		deps.Follow = func(eng *tiers.Engine) tiers.Syncer {
			fc := *e.follow
			if fc.Now == nil {
				fc.Now = e.clock.Now
			}
			e.follower = follower.New(e.journal, eng, fc, nil)
			return e.follower
		}
	}
	e.srv, err = servertest.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	// Runs before the S3 endpoint closes (registered after it); reads
	// e.srv then, so a server a test rebuilt is the one closed.
	t.Cleanup(func() {
		if err := e.srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		e.checkLeases()
	})
	return e
}

// checkLeases fails the test when the memory tier still holds bytes off
// the heap once every entry is gone and every answer written: an answer
// (or a reader of the tiers) that never released its lease keeps its
// tile's block from ever being reused.
func (e *env) checkLeases() {
	e.t.Helper()
	e.mem.DeletePrefix("")
	if n := e.mem.OffHeapBytes(); n != 0 {
		e.t.Errorf("the memory tier holds %d bytes off the heap with no entry and no answer being written: a lease was never released", n)
	}
}

func (e *env) put(key string, body []byte, contentType, encoding string) string {
	e.t.Helper()
	for _, ext := range tilename.SingleFileExts {
		if name, ok := strings.CutSuffix(key, ext); ok && !strings.Contains(name, "/") {
			e.archives.Store(name, true)
		}
	}
	etag := s3localtest.Put(e.t, e.s3.Client(e.s3URL), bucket, "tiles/"+key, body, contentType, encoding)
	return etag
}

// besideRead reports whether r is a plain GET of a key under an archive's
// name (see env.beside).
func (e *env) besideRead(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+bucket+"/tiles/")
	if !ok || r.Method != http.MethodGet || r.Header.Get("Range") != "" {
		return false
	}
	name, _, nested := strings.Cut(rest, "/")
	_, archive := e.archives.Load(name)
	return nested && archive
}

// do sends one request straight to the handler.
func (e *env) do(method, path string, hdr ...string) *http.Response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expectBody is expect, and r's body is want.
func expectBody(t *testing.T, r *http.Response, status int, xcache, want string) {
	t.Helper()
	expect(t, r, status, xcache)
	if got := body(t, r); got != want {
		if len(got) > 64 || len(want) > 64 {
			t.Fatalf("body: got %d bytes, want %d bytes (X-Cache %s)", len(got), len(want), xcache)
		}
		t.Fatalf("body: got %q, want %q (X-Cache %s)", got, want, xcache)
	}
}

func expect(t *testing.T, r *http.Response, status int, xcache string) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("status: got %d, want %d (X-Cache %q)", r.StatusCode, status, r.Header.Get("X-Cache"))
	}
	if xcache != "" && r.Header.Get("X-Cache") != xcache {
		t.Fatalf("X-Cache: got %q, want %q", r.Header.Get("X-Cache"), xcache)
	}
}

func TestTiersMissMemoryDisk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	etag := e.put("osm/1/0/0.png", []byte("tile-100"), "image/png", "")

	r := e.do("GET", "/osm/1/0/0.png")
	expectBody(t, r, 200, "MISS", "tile-100")
	for _, h := range []string{"Content-Type", "Content-Length", "Etag", "Last-Modified", "Cache-Control", "Server-Timing"} {
		if r.Header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}
	if r.Header.Get("Etag") != etag || r.Header.Get("Content-Type") != "image/png" || r.Header.Get("Content-Length") != "8" {
		t.Errorf("headers: %v", r.Header)
	}
	if !strings.HasPrefix(r.Header.Get("Server-Timing"), "origin;dur=") {
		t.Errorf("Server-Timing: %q", r.Header.Get("Server-Timing"))
	}

	expect(t, e.do("GET", "/osm/1/0/0.png"), 200, "HIT-MEMORY")
	e.mem.DeletePrefix("")
	r = e.do("GET", "/osm/1/0/0.png")
	expectBody(t, r, 200, "HIT-DISK", "tile-100")
	expect(t, e.do("GET", "/osm/1/0/0.png"), 200, "HIT-MEMORY")
	if n := e.s3Gets.Load(); n != 1 {
		t.Fatalf("S3 GETs: got %d, want 1", n)
	}
}

func TestConditionalRangeHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	data := []byte("0123456789abcdefghij")
	etag := e.put("t/2/1/1.png", data, "image/png", "")
	r := e.do("GET", "/t/2/1/1.png")
	expect(t, r, 200, "MISS")
	lm := r.Header.Get("Last-Modified")

	expect(t, e.do("GET", "/t/2/1/1.png", "If-None-Match", etag), 304, "HIT-MEMORY")
	expect(t, e.do("GET", "/t/2/1/1.png", "If-None-Match", `"other", `+etag), 304, "")
	expect(t, e.do("GET", "/t/2/1/1.png", "If-None-Match", `"other"`), 200, "")
	expect(t, e.do("GET", "/t/2/1/1.png", "If-Modified-Since", lm), 304, "")

	r = e.do("GET", "/t/2/1/1.png", "Range", "bytes=2-5")
	expect(t, r, 206, "HIT-MEMORY")
	if got := body(t, r); got != "2345" || r.Header.Get("Content-Range") != "bytes 2-5/20" {
		t.Fatalf("range: got %q %q", got, r.Header.Get("Content-Range"))
	}
	expect(t, e.do("GET", "/t/2/1/1.png", "Range", "bytes=50-60"), 416, "")

	r = e.do("HEAD", "/t/2/1/1.png")
	expect(t, r, 200, "HIT-MEMORY")
	if got := body(t, r); got != "" || r.Header.Get("Content-Length") != "20" || r.Header.Get("Etag") != etag {
		t.Fatalf("HEAD: body %q, headers %v", got, r.Header)
	}
}

// gz is b gzipped, as a tile is stored with Content-Encoding: gzip.
func gz[T string | []byte](b T) []byte {
	return pmtilestest.Compress([]byte(b), pmtiles.CompressionGzip)
}

func TestGzipPassThroughAndDecode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stored := gz("vector tile bytes")
	etag := e.put("v/3/1/2.pbf", stored, "application/x-protobuf", "gzip")

	r := e.do("GET", "/v/3/1/2.pbf", "Accept-Encoding", "br, gzip")
	expect(t, r, 200, "MISS")
	if got := body(t, r); got != string(stored) || r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip client: encoding %q vary %q, body equal=%v", r.Header.Get("Content-Encoding"), r.Header.Get("Vary"), got == string(stored))
	}
	r = e.do("GET", "/v/3/1/2.pbf")
	expect(t, r, 200, "HIT-MEMORY")
	if got := body(t, r); got != "vector tile bytes" || r.Header.Get("Content-Encoding") != "" {
		t.Fatalf("identity client: got %q, encoding %q", got, r.Header.Get("Content-Encoding"))
	}
	// The decoded representation has a strong ETag of its own.
	if r.Header.Get("Etag") != etag[:len(etag)-1]+`-identity"` || r.Header.Get("Content-Length") != "17" {
		t.Fatalf("identity client: etag %q length %q", r.Header.Get("Etag"), r.Header.Get("Content-Length"))
	}
	expect(t, e.do("GET", "/v/3/1/2.pbf", "Accept-Encoding", "gzip;q=0"), 200, "")
	if r := e.do("GET", "/v/3/1/2.pbf", "Accept-Encoding", "gzip;q=0"); r.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip;q=0 got gzip")
	}
}

func TestMissingTile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode, path string
		status     int
		ctype      string
	}{
		{"404", "/osm/9/9/9.png", 404, "text/plain; charset=utf-8"},
		{"204", "/osm/9/9/9.png", 204, ""},
		{"empty", "/osm/9/9/9.png", 200, "image/png"},
		{"empty", "/osm/9/9/9.pbf", 200, "application/vnd.mapbox-vector-tile"},
		{"empty", "/osm/9/9/9.bin", 404, "text/plain; charset=utf-8"},
	} {
		t.Run(tc.mode+tc.path, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withConfig(func(c *servertest.Config) {
				c.MissingTile = tc.mode
				c.NegativeCacheControl = "public, max-age=30"
			}))
			r := e.do("GET", tc.path)
			expect(t, r, tc.status, "")
			if r.Header.Get("Cache-Control") != "public, max-age=30" {
				t.Errorf("Cache-Control: %q", r.Header.Get("Cache-Control"))
			}
			if r.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type: got %q, want %q", r.Header.Get("Content-Type"), tc.ctype)
			}
		})
	}
}

func TestRevalidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put("r/1/1/1.png", []byte("v1"), "image/png", "")
	expect(t, e.do("GET", "/r/1/1/1.png"), 200, "MISS")

	e.clock.Advance(2 * time.Hour)
	r := e.do("GET", "/r/1/1/1.png")
	expectBody(t, r, 200, "REVALIDATED", "v1")
	expect(t, e.do("GET", "/r/1/1/1.png"), 200, "HIT-MEMORY")
	// The disk copy was renewed too: read back from disk, it is fresh.
	e.mem.DeletePrefix("")
	expect(t, e.do("GET", "/r/1/1/1.png"), 200, "HIT-DISK")
	if n := e.s3Gets.Load(); n != 2 {
		t.Fatalf("S3 GETs: got %d, want 2 (the fill and one revalidation)", n)
	}

	e.put("r/1/1/1.png", []byte("v2"), "image/png", "")
	e.clock.Advance(2 * time.Hour)
	r = e.do("GET", "/r/1/1/1.png")
	expectBody(t, r, 200, "MISS", "v2")
}

func TestPurgePrefixBothTiers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, k := range []string{"osm/12/1/1.png", "osm/12/1/2.png", "osm/1/0/0.png", "other/1/0/0.png"} {
		e.put(k, []byte(k), "image/png", "")
		expect(t, e.do("GET", "/"+k), 200, "MISS")
	}
	e.srv.Engine().Purge("osm/12/")
	if _, ok := e.mem.Get("osm/12/1/1.png"); ok {
		t.Fatal("purged key still in memory")
	}
	if _, ok := e.disk.Get("osm/12/1/2.png"); ok {
		t.Fatal("purged key still on disk")
	}
	expect(t, e.do("GET", "/osm/1/0/0.png"), 200, "HIT-MEMORY")
	expect(t, e.do("GET", "/other/1/0/0.png"), 200, "HIT-MEMORY")
	expect(t, e.do("GET", "/osm/12/1/1.png"), 200, "MISS")
}

func TestBadRequestsNeverReachS3(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// (A bad escape such as %zz never reaches a handler: net/http and the
	// Lambda adapter refuse it first; shared/tile's tests cover it.)
	for _, p := range []string{"/osm/%2e%2e/secret", "/osm//1.png", "/osm/a%2Fb.png", "/osm/%00.png", "/" + strings.Repeat("a/", 40) + "x"} {
		req := httptest.NewRequest("GET", p, nil)
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: got %d, want 400", p, rec.Code)
		}
	}
	r := e.do("POST", "/osm/1/0/0.png")
	expect(t, r, 405, "")
	if r.Header.Get("Allow") != "GET, HEAD, OPTIONS" { // CORS is on by default
		t.Errorf("Allow: %q", r.Header.Get("Allow"))
	}
	if n := e.s3Reqs.Load(); n != 0 {
		t.Fatalf("S3 saw %d requests for bad input", n)
	}
}

func TestConcurrentMissesMakeOneFetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put("hot/1/1/1.png", []byte("hot"), "image/png", "")
	e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("hot/1/1/1.png"), Delay: 100 * time.Millisecond, Times: 1})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			r := e.do("GET", "/hot/1/1/1.png")
			if r.StatusCode != 200 || body(t, r) != "hot" {
				t.Errorf("got %d", r.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := e.s3Gets.Load(); n != 1 {
		t.Fatalf("S3 GETs: got %d, want 1", n)
	}
}

func TestOriginFaults(t *testing.T) {
	t.Parallel()
	t.Run("5xx without a copy is 502", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.put("f/1/1/1.png", []byte("x"), "image/png", "")
		e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("f/1/1/1.png"), Status: 500})
		r := e.do("GET", "/f/1/1/1.png")
		expect(t, r, 502, "")
		if !strings.Contains(body(t, r), "origin error") {
			t.Fatal("no short body")
		}
	})
	t.Run("503 then success is served", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.put("f/1/1/1.png", []byte("x"), "image/png", "")
		e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("f/1/1/1.png"), Status: 503, Times: 2})
		expect(t, e.do("GET", "/f/1/1/1.png"), 200, "MISS")
	})
	t.Run("5xx with an expired copy inside stale-if-error is STALE", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.put("f/1/1/1.png", []byte("old"), "image/png", "")
		expect(t, e.do("GET", "/f/1/1/1.png"), 200, "MISS")
		e.clock.Advance(2 * time.Hour)
		e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("f/1/1/1.png"), Status: 500})
		r := e.do("GET", "/f/1/1/1.png")
		expect(t, r, 200, "STALE")
		if body(t, r) != "old" {
			t.Fatal("stale body wrong")
		}
		// Past max-age + stale-if-error (1 h + 1 day) the copy may not be used.
		e.clock.Advance(25 * time.Hour)
		expect(t, e.do("GET", "/f/1/1/1.png"), 502, "")
	})
	t.Run("a hung S3 is 504 within the deadline", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.put("f/1/1/1.png", []byte("x"), "image/png", "")
		e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("f/1/1/1.png"), Delay: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, "GET", "/f/1/1/1.png", nil)
		rec := httptest.NewRecorder()
		start := time.Now()
		e.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusGatewayTimeout {
			t.Fatalf("got %d, want 504", rec.Code)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("answered after %v, past the deadline", d)
		}
	})
	t.Run("a truncated body is an error, never a short tile", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		full := bytes.Repeat([]byte("z"), 100_000)
		e.put("f/1/1/1.png", full, "image/png", "")
		e.s3.Faults().Add(s3local.Fault{Match: s3local.MatchGet("f/1/1/1.png"), TruncateAfter: 5000})
		r := e.do("GET", "/f/1/1/1.png")
		expect(t, r, 502, "")
		if _, ok := e.mem.Get("f/1/1/1.png"); ok {
			t.Fatal("a truncated tile was cached")
		}
	})
}

func TestDiskThatCannotWriteStillServes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A disk tier whose directory is gone and cannot be recreated: its path
	// is now a regular file.
	dir := filepath.Join(t.TempDir(), "d")
	broken, err := disk.Open(disk.Config{Dir: dir, MaxBytes: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := servertest.New(servertest.Config{Now: e.clock.Now}, servertest.Deps{Memory: e.mem, Disk: broken, Origin: e.client})
	if err != nil {
		t.Fatal(err)
	}
	e.put("d/1/1/1.png", []byte("served"), "image/png", "")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "/d/1/1/1.png", nil))
	if rec.Code != 200 || rec.Body.String() != "served" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	if srv.Stats().Handler.DiskWriteErrors != 1 {
		t.Fatalf("disk write errors: %+v", srv.Stats().Handler)
	}
}

// TestPurgeRaceFillNotReinserted forces the interleaving: a fill of the old
// version is in flight (S3 has answered, the bytes are on their way) when a
// purge of its key is applied. The old bytes must not be put back.
func TestPurgeRaceFillNotReinserted(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	var hold atomic.Bool
	e := newEnv(t, withS3Wrapper(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "race/1/1/1.png") || !hold.CompareAndSwap(true, false) {
				next.ServeHTTP(w, r)
				return
			}
			// Serve the old version into a buffer, then hold it back.
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			close(arrived)
			<-release
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	}))
	e.put("race/1/1/1.png", []byte("old"), "image/png", "")
	hold.Store(true)
	done := make(chan *http.Response)
	go func() { done <- e.do("GET", "/race/1/1/1.png") }()
	<-arrived
	// The new version lands and its purge is applied while the old one is in flight.
	e.put("race/1/1/1.png", []byte("new"), "image/png", "")
	e.srv.Engine().Purge("race/")
	close(release)
	r := <-done
	if got := body(t, r); got != "old" {
		t.Fatalf("in-flight request: got %q (it began before the purge, so old is expected)", got)
	}
	if _, ok := e.mem.Get("race/1/1/1.png"); ok {
		t.Fatal("the old fill was inserted into memory after the purge")
	}
	if _, ok := e.disk.Get("race/1/1/1.png"); ok {
		t.Fatal("the old fill was written to disk after the purge")
	}
	r = e.do("GET", "/race/1/1/1.png")
	expectBody(t, r, 200, "MISS", "new")
	if e.srv.Stats().Handler.DroppedFills != 1 {
		t.Fatalf("dropped fills: %+v", e.srv.Stats().Handler)
	}
}

func TestHealthAndAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, k := range []string{"a/1/1/1.png", "a/1/1/2.png", "b/1/1/1.png"} {
		e.put(k, []byte(k), "image/png", "")
		e.do("GET", "/"+k)
	}
	r := e.do("GET", "/_tilesieve/health")
	expect(t, r, 200, "")
	var h admin.Health
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil || h.Memory.Entries != 3 || h.Disk.Entries != 3 {
		t.Fatalf("health: %+v %v", h, err)
	}

	expect(t, e.do("GET", "/_tilesieve/stats"), 401, "")
	expect(t, e.do("GET", "/_tilesieve/stats", "Authorization", "Bearer nope"), 403, "")
	r = e.do("GET", "/_tilesieve/stats", "Authorization", "Bearer test-admin-token")
	expect(t, r, 200, "")
	expect(t, e.do("GET", "/_tilesieve/stats", admin.TokenHeader, "test-admin-token"), 200, "")
	expect(t, e.do("GET", "/_tilesieve/stats", admin.TokenHeader, "wrong"), 403, "")
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("admin Cache-Control: %q", r.Header.Get("Cache-Control"))
	}

	r = e.do("GET", "/_tilesieve/keys?prefix=a/&limit=10", "Authorization", "Bearer test-admin-token")
	expect(t, r, 200, "")
	lines := strings.Split(strings.TrimSpace(body(t, r)), "\n")
	if len(lines) != 4 { // two keys, memory and disk
		t.Fatalf("keys: %q", lines)
	}
	var first struct{ Key, Tier string }
	json.Unmarshal([]byte(lines[0]), &first)
	if first.Key != "a/1/1/1.png" || first.Tier != "memory" {
		t.Fatalf("first line: %q", lines[0])
	}

	r = e.do("POST", "/_tilesieve/purge?prefix=a/", "Authorization", "Bearer test-admin-token")
	expect(t, r, 200, "")
	var res admin.PurgeResult
	if err := json.NewDecoder(r.Body).Decode(&res); err != nil || res.MemoryEntries != 2 || res.DiskEntries != 2 || res.JournalSeq == 0 {
		t.Fatalf("purge: %+v %v", res, err)
	}
	snap, err := e.journal.Read(context.Background(), "")
	// The tileset a/ and its TileJSON a.json, as an upload of a/ purges them.
	if err != nil || len(snap.Entries) != 1 || !slices.Equal(snap.Entries[0].Prefixes, []string{"a.json", "a/"}) {
		t.Fatalf("journal: %+v %v", snap, err)
	}
	r = e.do("DELETE", "/_tilesieve/cache/b/1", "Authorization", "Bearer test-admin-token")
	expect(t, r, 200, "")
	expect(t, e.do("POST", "/_tilesieve/purge?prefix=../", "Authorization", "Bearer test-admin-token"), 400, "")
	expect(t, e.do("GET", "/_tilesieve/purge", "Authorization", "Bearer test-admin-token"), 405, "")
}

func TestAdminOffWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *servertest.Config) { c.AdminToken = "" }))
	expect(t, e.do("POST", "/_tilesieve/purge?prefix=a/", "Authorization", "Bearer x"), 404, "")
	expect(t, e.do("GET", "/_tilesieve/health"), 200, "")
}

// sink is a reusable ResponseWriter, so allocation counts are the handler's.
type sink struct{ h http.Header }

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) Write(p []byte) (int, error) { return len(p), nil }
func (s *sink) WriteHeader(int)             {}

func TestMemoryHitAllocations(t *testing.T) {
	e := newEnv(t)
	e.put("a/1/1/1.png", []byte("tile"), "image/png", "")
	expect(t, e.do("GET", "/a/1/1/1.png"), 200, "MISS")
	req := httptest.NewRequest("GET", "/a/1/1/1.png", nil)
	w := &sink{h: http.Header{}}
	allocs := testing.AllocsPerRun(200, func() {
		clear(w.h)
		e.srv.ServeHTTP(w, req)
	})
	if w.h.Get("X-Cache") != "HIT-MEMORY" {
		t.Fatalf("not a memory hit: %v", w.h)
	}
	// One backing array for the header values, one string for the formatted ones.
	if allocs > 2 {
		t.Fatalf("a memory hit allocated %v times, want at most 2", allocs)
	}
}

// TestRememberedMisses: a 404 is remembered for the negative max-age, so a
// sparse tileset's missing tiles do not cost an S3 GET each, and a purge of
// the key (what an upload causes) forgets it at once.
func TestRememberedMisses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *servertest.Config) { c.NegativeCacheControl = "public, max-age=60" }))
	expect(t, e.do("GET", "/sparse/5/1/1.png"), 404, "MISS")
	expect(t, e.do("GET", "/sparse/5/1/1.png"), 404, "HIT-MEMORY")
	expect(t, e.do("HEAD", "/sparse/5/1/1.png"), 404, "HIT-MEMORY")
	if n := e.s3Gets.Load(); n != 1 {
		t.Fatalf("S3 GETs: got %d, want 1", n)
	}
	// After the negative max-age, S3 is asked again.
	e.clock.Advance(61 * time.Second)
	expect(t, e.do("GET", "/sparse/5/1/1.png"), 404, "MISS")
	if n := e.s3Gets.Load(); n != 2 {
		t.Fatalf("S3 GETs after max-age: got %d, want 2", n)
	}
	// An upload's purge forgets the remembered 404 at once.
	e.put("sparse/5/1/1.png", []byte("now here"), "image/png", "")
	e.srv.Engine().Purge("sparse/5/")
	r := e.do("GET", "/sparse/5/1/1.png")
	expect(t, r, 200, "MISS")
	if body(t, r) != "now here" {
		t.Fatal("wrong body after the purge")
	}
	if st := e.srv.Stats().Handler; st.NegativeHits != 2 {
		t.Fatalf("negative hits: %+v", st)
	}
	// A remembered 404 never reaches the disk tier.
	if _, ok := e.disk.Get("sparse/5/9/9.png"); ok {
		t.Fatal("disk holds a 404")
	}
}

// TestMissBesideADueCheck: when a request finds a journal check due while
// the last good check still vouches for the tiers, a miss fetches its tile
// and is answered while the check is still in flight: the S3 endpoint holds
// the check's journal read until the answer has been given.
func TestMissBesideADueCheck(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	release := make(chan struct{})
	journalHeld := make(chan struct{}, 1)
	e := newEnv(t, withS3Wrapper(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if armed.Load() && strings.HasPrefix(r.URL.Path, "/"+bucket+"/_tilesieve/journal/") {
				journalHeld <- struct{}{}
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
			}
			h.ServeHTTP(w, r)
		})
	}), withFollower(follower.Config{Interval: time.Second, Timeout: 10 * time.Second}))
	e.put("o/1/0/0.png", []byte("tile"), "image/png", "")
	fol := e.follower
	if err := fol.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := e.srv
	started := e.clock.Now()
	e.clock.Advance(2 * time.Second)
	if !fol.Due(e.clock.Now()) {
		t.Fatal("no check due after the interval")
	}
	armed.Store(true)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/o/1/0/0.png", nil))
	if rec.Code != 200 || rec.Body.String() != "tile" || rec.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("got %d %q %s, want 200 tile MISS", rec.Code, rec.Body.String(), rec.Header().Get("X-Cache"))
	}
	select {
	case <-journalHeld: // the check started beside the answer, and is held
	case <-time.After(10 * time.Second):
		t.Fatal("no journal check started beside the answer")
	}
	if s := fol.Stats(); !s.LastOK.Equal(started) {
		t.Errorf("follower %+v as the answer returned, want the last good check still the one at start (%v)", s, started)
	}
	close(release)
	h.Drain()
	if s := fol.Stats(); s.Checks != 2 || s.Failures != 0 || !s.LastOK.Equal(e.clock.Now()) {
		t.Errorf("follower %+v, want one successful check after the one at start, at %v", s, e.clock.Now())
	}
}

// TestSyncedHandlerChecksBeforeAdmin: requests other than tile reads wait
// for a due check before they are answered, and none is made when none is
// due.
func TestSyncedHandlerChecksBeforeAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withFollower(follower.Config{Interval: time.Second}))
	fol := e.follower
	if err := fol.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := e.srv
	serve := func(method, path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec.Code
	}
	// Start made the first check.
	if code := serve("GET", "/_tilesieve/health"); code != 200 || fol.Stats().Checks != 1 {
		t.Fatalf("health: %d, %d checks; want 200 and no check before the interval", code, fol.Stats().Checks)
	}
	e.clock.Advance(time.Second)
	if code := serve("GET", "/_tilesieve/health"); code != 200 || fol.Stats().Checks != 2 || fol.Due(e.clock.Now()) {
		t.Fatalf("health: %d, %+v; want 200 after one check", code, fol.Stats())
	}
	e.clock.Advance(time.Second)
	if code := serve("POST", "/o/1/0/0.png"); code != http.StatusMethodNotAllowed || fol.Stats().Checks != 3 {
		t.Fatalf("POST: %d, %+v; want 405 after a second check", code, fol.Stats())
	}
}

// TestExtraKeptBesideTheTile: with Config.Extra, what it builds as a tile
// enters the memory tier (from the fields of the tile's memory-hit answer
// and its body) is handed to each memory hit of the tile in its stored
// representation, and to no other answer, and the memory tier's byte bound
// is charged for it.
func TestExtraKeptBesideTheTile(t *testing.T) {
	t.Parallel()
	built := 0
	e := newEnv(t, withConfig(func(c *servertest.Config) {
		c.Extra = func(hit []tileserver.Field, body []byte) tileserver.Extra {
			built++
			return &extra{hit: hit, body: body}
		}
	}))
	tileBody := bytes.Repeat([]byte{0, 1, 2, 0xff}, 3000)
	e.put("p/1/0/0.png", tileBody, "image/png", "")
	serve := func(hdr ...string) *tileserver.Response {
		var req tileserver.Request
		req.Method, req.Path = "GET", "/p/1/0/0.png"
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header[tileserver.HdrIfNoneMatch] = hdr[i+1]
		}
		resp := new(tileserver.Response)
		e.srv.Serve(context.Background(), &req, resp)
		t.Cleanup(resp.Release) // as an adapter does once it has written the answer
		return resp
	}
	if r := serve(); r.Status != 200 || r.Get("X-Cache") != "MISS" || r.Extra() != nil {
		t.Fatalf("miss: %d %s, extra %v", r.Status, r.Get("X-Cache"), r.Extra())
	}
	r := serve()
	x, ok := r.Extra().(*extra)
	if !ok || built != 1 || !bytes.Equal(x.body, tileBody) {
		t.Fatalf("memory hit: extra %v after %d built, want the one built with the tile", r.Extra(), built)
	}
	// The fields it was built with are the answer's, Server-Timing's value
	// aside (the request's).
	fields := r.Fields()
	if len(x.hit) != len(fields) || x.hit[len(x.hit)-1].Name != "Server-Timing" || x.hit[0].Name != "X-Cache" {
		t.Fatalf("fields: got %v, want the answer's %v, X-Cache first and Server-Timing last", x.hit, fields)
	}
	for _, f := range x.hit[:len(x.hit)-1] {
		if got := r.Get(f.Name); got != f.Values[0] {
			t.Errorf("field %s: built with %q, the answer's is %q", f.Name, f.Values[0], got)
		}
	}
	// A conditional hit is not the 200 the extra was built for.
	if x := serve("If-None-Match", r.Get("Etag")).Extra(); x != nil {
		t.Error("a 304 was handed the extra of the 200")
	}
	if charged, min := e.mem.Stats().Bytes, int64(len(tileBody))*3; charged < min {
		t.Errorf("memory tier charged %d bytes for a %d-byte tile and its extra, want at least %d", charged, len(tileBody), min)
	}
}

// extra is an Extra that keeps what it was built from and costs twice its
// body.
type extra struct {
	hit  []tileserver.Field
	body []byte
}

func (x *extra) Cost() int64 { return 2 * int64(len(x.body)) }

// TestHitAnswersMatchTheGeneralPath: a plain GET or HEAD of a cached tile is
// answered from the tile's prepared fields; a request the conditionals do
// not change (If-None-Match with another tag) takes the general path. Both
// must be the same answer, field for field, from memory and from disk,
// under each CORS policy.
func TestHitAnswersMatchTheGeneralPath(t *testing.T) {
	t.Parallel()
	for _, cors := range []string{"*", "none", "https://app.example"} {
		e := newEnv(t, withConfig(func(c *servertest.Config) { c.CORSAllowOrigins = cors }))
		e.put("h/1/0/0.png", []byte("png bytes"), "image/png", "")
		e.put("h/1/0/0.pbf", gz("vector bytes"), "application/x-protobuf", "gzip")
		for _, key := range []string{"h/1/0/0.png", "h/1/0/0.pbf"} {
			for _, method := range []string{"GET", "HEAD"} {
				serve := func(memory bool, hdr ...string) (*tileserver.Response, []tileserver.Field) {
					if !memory {
						e.mem.DeletePrefix("h/")
					}
					var req tileserver.Request
					req.Method, req.Path = method, "/"+key
					req.Header[tileserver.HdrAcceptEncoding] = "gzip"
					for i := 0; i+1 < len(hdr); i += 2 {
						switch hdr[i] {
						case "If-None-Match":
							req.Header[tileserver.HdrIfNoneMatch] = hdr[i+1]
						case "Origin":
							req.Header[tileserver.HdrOrigin] = hdr[i+1]
						}
					}
					resp := new(tileserver.Response)
					e.srv.Serve(context.Background(), &req, resp)
					fields := slices.Clone(resp.Fields())
					for i, f := range fields {
						if f.Name == "Server-Timing" {
							name, _, _ := strings.Cut(f.Values[0], ";")
							fields[i].Values = []string{name} // the duration differs
						}
					}
					return resp, fields
				}
				serve(true) // fills both tiers
				for _, memory := range []bool{true, false} {
					for _, origin := range [][]string{nil, {"Origin", "https://app.example"}} {
						fast, ff := serve(memory, origin...)
						general, gf := serve(memory, append([]string{"If-None-Match", `"another"`}, origin...)...)
						where := fmt.Sprintf("CORS %q, %s %s, memory %v, %v", cors, method, key, memory, origin)
						if fast.Status != 200 || general.Status != 200 || !bytes.Equal(fast.Body, general.Body) {
							t.Errorf("%s: status %d and %d, bodies %q and %q", where, fast.Status, general.Status, fast.Body, general.Body)
						}
						if !reflect.DeepEqual(ff, gf) {
							t.Errorf("%s: fields differ\nplain:   %v\ngeneral: %v", where, ff, gf)
						}
						if want := map[bool]string{true: "HIT-MEMORY", false: "HIT-DISK"}[memory]; fast.Get("X-Cache") != want {
							t.Errorf("%s: X-Cache %q, want %q", where, fast.Get("X-Cache"), want)
						}
					}
				}
			}
		}
	}
}
