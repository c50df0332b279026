package tileserver_test

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// amplifier is a gzip stream of n bytes that compresses about 50 to 1, as
// a vector tile full of repeated features may: small stored, large decoded,
// and within the decoder's ratio bound (a bomb of zeros is refused by it).
// Streams are built once per size (dear under -race) and only read.
func amplifier(t testing.TB, n int) []byte {
	t.Helper()
	if b, ok := amplified.Load(n); ok {
		return b.([]byte)
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression)
	rng := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 1<<10)
	for n > 0 {
		clear(chunk)
		for i := range 12 {
			chunk[i*80] = byte(rng.Uint32())
		}
		k := min(n, len(chunk))
		zw.Write(chunk[:k])
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	amplified.Store(n, b.Bytes())
	return b.Bytes()
}

// amplified holds amplifier's streams by decoded size.
var amplified sync.Map

// countingSink discards a body and counts its bytes.
type countingSink struct {
	h      http.Header
	status int
	n      int64
}

func (s *countingSink) Header() http.Header         { return s.h }
func (s *countingSink) Write(p []byte) (int, error) { s.n += int64(len(p)); return len(p), nil }
func (s *countingSink) WriteHeader(code int)        { s.status = code }

// TestDecodedVariantBounded: concurrent clients without gzip of a small
// gzip tile that decodes large decode it at most once per tile version: the
// decoded variant is kept in the memory tier when it fits, streamed when it
// does not, and refused past MAX_TILE_BYTES, and the bytes allocated for
// the burst stay far below one decode per client. Not parallel: it reads
// the process's allocation counters.
func TestDecodedVariantBounded(t *testing.T) {
	const clients = 20
	for _, tc := range []struct {
		name     string
		decoded  int   // bytes the tile decodes to
		memMax   int64 // MEM_CACHE_BYTES (an entry may take an eighth)
		maxTile  int64 // MAX_TILE_BYTES
		status   int
		xcache   string // of the request after the burst
		maxAlloc uint64 // bytes the burst may allocate
	}{
		// Fits the memory tier: decoded once, then every client shares it.
		{name: "cached", decoded: 8 << 20, memMax: 128 << 20, status: 200, xcache: "HIT-MEMORY", maxAlloc: 8<<20 + 2<<20},
		// Too large for it: measured once, then decoded as each answer is
		// written, never held whole. Twice an entry's limit and no more
		// (every client decodes all of it, the dearest part under -race):
		// one whole decode held, 8 MiB on top of the burst's own 3 MiB,
		// breaks the bound.
		{name: "streamed", decoded: 8 << 20, memMax: 32 << 20, status: 200, xcache: "HIT-MEMORY", maxAlloc: 8 << 20},
		// Past MAX_TILE_BYTES: refused, and the refusal remembered.
		{name: "refused", decoded: 4 << 20, memMax: 64 << 20, maxTile: 2 << 20, status: 502, maxAlloc: 4 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withMemBytes(tc.memMax), withConfig(func(c *servertest.Config) { c.MaxTileBytes = tc.maxTile }))
			stored := amplifier(t, tc.decoded)
			e.put("z/0/0/0.pbf", stored, "application/x-protobuf", "gzip")
			// The stored tile enters the memory tier first (a gzip client).
			expect(t, e.do("GET", "/z/0/0/0.pbf", "Accept-Encoding", "gzip"), 200, "MISS")
			before := e.srv.Decodes()
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			var wg sync.WaitGroup
			sinks := make([]*countingSink, clients)
			for i := range sinks {
				sinks[i] = &countingSink{h: http.Header{}}
				wg.Go(func() {
					e.srv.ServeHTTP(sinks[i], httptest.NewRequest("GET", "/z/0/0/0.pbf", nil))
				})
			}
			wg.Wait()
			runtime.ReadMemStats(&m1)
			alloc := m1.TotalAlloc - m0.TotalAlloc
			decodes := e.srv.Decodes() - before
			t.Logf("%d clients of a %d-byte gzip tile decoding to %d bytes: %d bytes allocated, %d whole decodes",
				clients, len(stored), tc.decoded, alloc, decodes)
			for i, s := range sinks {
				if s.status != tc.status {
					t.Fatalf("client %d: got status %d, want %d", i, s.status, tc.status)
				}
				if tc.status == 200 && s.n != int64(tc.decoded) {
					t.Fatalf("client %d: got %d bytes, want %d", i, s.n, tc.decoded)
				}
				if tc.status == 200 && s.h.Get("Content-Length") != strconv.Itoa(tc.decoded) {
					t.Fatalf("client %d: got Content-Length %q, want %d", i, s.h.Get("Content-Length"), tc.decoded)
				}
			}
			if decodes != 1 {
				t.Errorf("got %d whole decodes, want 1", decodes)
			}
			if alloc > tc.maxAlloc {
				t.Errorf("got %d bytes allocated, want at most %d", alloc, tc.maxAlloc)
			}
			// The next client is answered without another decode.
			w := &countingSink{h: http.Header{}}
			e.srv.ServeHTTP(w, httptest.NewRequest("GET", "/z/0/0/0.pbf", nil))
			if w.status != tc.status || (tc.xcache != "" && w.h.Get("X-Cache") != tc.xcache) {
				t.Fatalf("after the burst: got %d %q, want %d %q", w.status, w.h.Get("X-Cache"), tc.status, tc.xcache)
			}
			if got := e.srv.Decodes() - before; got != 1 {
				t.Errorf("after the burst: got %d whole decodes, want 1", got)
			}
		})
	}
}

// TestDecodedVariantPurgedWithItsTile: the decoded variant kept beside a
// tile leaves with every purge that covers the tile (its key, a prefix of
// it), is not listed as a key of its own, and a new version of the tile is
// never answered with the old version's variant.
func TestDecodedVariantPurgedWithItsTile(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"v/3/1/2.pbf", "v/3/", ""} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.put("v/3/1/2.pbf", gz("version one"), "application/x-protobuf", "gzip")
			if got := body(t, e.do("GET", "/v/3/1/2.pbf")); got != "version one" {
				t.Fatalf("got %q, want %q", got, "version one")
			}
			if got := e.mem.Len(); got != 2 {
				t.Fatalf("got %d memory entries, want 2 (the tile and its decoded variant)", got)
			}
			keys := body(t, e.do("GET", "/_tilesieve/keys?prefix=v/", "Authorization", "Bearer test-admin-token"))
			if n := strings.Count(keys, `"tier":"memory"`); n != 1 {
				t.Fatalf("got %d memory keys listed, want 1: %s", n, keys)
			}
			e.put("v/3/1/2.pbf", gz("version two"), "application/x-protobuf", "gzip")
			e.srv.Engine().Purge(prefix)
			if got := e.mem.Len(); got != 0 {
				t.Fatalf("after the purge: got %d memory entries, want 0", got)
			}
			r := e.do("GET", "/v/3/1/2.pbf")
			if got := body(t, r); got != "version two" {
				t.Fatalf("after the purge: got %q, want %q", got, "version two")
			}
		})
	}
}

// TestDecodedVariantNewVersion: a variant kept for one version of a tile
// is not served for another, even when no purge removed it.
func TestDecodedVariantNewVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put("v/3/1/2.pbf", gz("version one"), "application/x-protobuf", "gzip")
	if got := body(t, e.do("GET", "/v/3/1/2.pbf")); got != "version one" {
		t.Fatalf("got %q, want %q", got, "version one")
	}
	// The tile alone is replaced in the memory tier, as a revalidation
	// that found a new version does.
	etag := e.put("v/3/1/2.pbf", gz("version two"), "application/x-protobuf", "gzip")
	old, _ := e.mem.Get("v/3/1/2.pbf")
	nt := *old
	nt.Body, nt.ETag, nt.Prepared = gz("version two"), etag, nil
	e.mem.Set("v/3/1/2.pbf", &nt)
	before := e.srv.Decodes()
	if got := body(t, e.do("GET", "/v/3/1/2.pbf")); got != "version two" {
		t.Fatalf("got %q, want %q", got, "version two")
	}
	if got := e.srv.Decodes() - before; got != 1 {
		t.Fatalf("got %d decodes, want 1", got)
	}
}

// TestStreamedVariantAnswers: a decoded variant too large for the memory
// tier answers HEAD with its size, conditionals on its own ETag, and GET
// with the whole decoded body, all from its one measuring decode.
func TestStreamedVariantAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMemBytes(8<<20)) // an entry may take 1 MiB
	const decoded = 2 << 20
	etag := e.put("s/1/0/0.pbf", amplifier(t, decoded), "application/x-protobuf", "gzip")
	identity := etag[:len(etag)-1] + `-identity"`
	for _, tc := range []struct {
		name, method string
		hdr          []string
		status       int
		length       string
		bodyLen      int
	}{
		{name: "HEAD", method: "HEAD", status: 200, length: strconv.Itoa(decoded)},
		{name: "GET", method: "GET", status: 200, length: strconv.Itoa(decoded), bodyLen: decoded},
		{name: "If-None-Match", method: "GET", hdr: []string{"If-None-Match", identity}, status: 304},
		{name: "If-Match other", method: "GET", hdr: []string{"If-Match", etag}, status: 412, length: "20", bodyLen: 20},
		{name: "Range", method: "GET", hdr: []string{"Range", "bytes=0-9"}, status: 200, length: strconv.Itoa(decoded), bodyLen: decoded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, "/s/1/0/0.pbf", tc.hdr...)
			b := body(t, r)
			if r.StatusCode != tc.status || r.Header.Get("Content-Length") != tc.length || len(b) != tc.bodyLen {
				t.Fatalf("got %d, Content-Length %q, %d bytes; want %d, %q, %d bytes",
					r.StatusCode, r.Header.Get("Content-Length"), len(b), tc.status, tc.length, tc.bodyLen)
			}
			if tc.status != 412 && (r.Header.Get("Etag") != identity || r.Header.Get("Content-Encoding") != "") {
				t.Fatalf("got ETag %q, Content-Encoding %q; want %q, none", r.Header.Get("Etag"), r.Header.Get("Content-Encoding"), identity)
			}
		})
	}
	if got := e.srv.Decodes(); got != 1 {
		t.Errorf("got %d whole decodes, want 1", got)
	}
}
