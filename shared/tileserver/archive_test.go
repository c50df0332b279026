package tileserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// archiveEnv is env with archives on: the server is rebuilt over the same
// tiers and S3 with Deps.Archives set.
type archiveEnv struct {
	*env
	ranged atomic.Int64 // ranged GETs of archives that reached S3
	logs   *logBuffer   // the server's log
}

// logBuffer is a log sink safe for the server's goroutines.
type logBuffer struct{ syncbuf.Buffer }

// lines returns the lines that contain s.
func (l *logBuffer) lines(s string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

func newArchiveEnv(t *testing.T, opts ...option) *archiveEnv {
	t.Helper()
	ae := &archiveEnv{logs: &logBuffer{}}
	var cfg servertest.Config
	// Probing and opening archives and images is several reads each: a
	// loaded machine under -race needs more than the two seconds newEnv
	// gives a byte fetch. A test's own option still wins.
	opts = append([]option{withConfig(func(c *servertest.Config) { c.OriginTimeout = 30 * time.Second })}, opts...)
	opts = append(opts,
		withS3Wrapper(func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Range") != "" {
					ae.ranged.Add(1)
				}
				h.ServeHTTP(w, r)
			})
		}),
		func(_ *env, c *servertest.Config, _ *origin.Config) { cfg = *c })
	ae.env = newEnv(t, opts...)
	srv, err := servertest.New(cfg, servertest.Deps{Memory: ae.mem, Disk: ae.disk, Origin: ae.client, Purger: purge.NewPurger(ae.journal, purge.PurgerConfig{}, nil), Archives: ae.client,
		Logger: slog.New(slog.NewTextHandler(ae.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ae.srv = srv
	return ae
}

// pyramid is every tile of zooms 0..maxZ with distinct random bytes.
func pyramid(maxZ uint8, seed uint64) map[pmtiles.ZXY][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	tiles := map[pmtiles.ZXY][]byte{}
	for z := range maxZ + 1 {
		for x := range uint32(1) << z {
			for y := range uint32(1) << z {
				b := make([]byte, 20+rng.IntN(200))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				tiles[pmtiles.ZXY{Z: z, X: x, Y: y}] = b
			}
		}
	}
	return tiles
}

func path(name string, t pmtiles.ZXY, ext string) string {
	return fmt.Sprintf("/%s/%d/%d/%d.%s", name, t.Z, t.X, t.Y, ext)
}

// TestArchiveTilesByteIdentical: every tile of archives written clustered
// and not, with and without leaf directories, comes back byte for byte
// under the object key space, fills memory and disk, and lists as a key.
func TestArchiveTilesByteIdentical(t *testing.T) {
	t.Parallel()
	tiles := pyramid(4, 7)
	for _, tt := range []struct {
		name string
		opts pmtilestest.Options
	}{
		{"clustered", pmtilestest.Options{Clustered: true}},
		{"unclustered", pmtilestest.Options{}},
		{"clustered leaves", pmtilestest.Options{Clustered: true, MaxRootBytes: 60, LeafEntries: 16}},
		{"unclustered gzip leaves", pmtilestest.Options{InternalCompression: pmtiles.CompressionGzip, MaxRootBytes: 60, LeafEntries: 16}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newArchiveEnv(t)
			archive := pmtilestest.Build(tiles, tt.opts)
			etag := e.put("a.pmtiles", archive, "application/octet-stream", "")
			for zxy, want := range tiles {
				r := e.do("GET", path("a", zxy, "png"))
				expect(t, r, 200, "MISS")
				if got := body(t, r); got != string(want) {
					t.Fatalf("%v: got %d bytes, want the %d that went in", zxy, len(got), len(want))
				}
				if ct := r.Header.Get("Content-Type"); ct != "image/png" {
					t.Fatalf("%v: Content-Type %q", zxy, ct)
				}
				if et := r.Header.Get("Etag"); !strings.HasPrefix(et, strings.TrimSuffix(etag, `"`)+"/") {
					t.Fatalf("%v: ETag %q not derived from the archive's %q", zxy, et, etag)
				}
			}
			zxy := pmtiles.ZXY{Z: 3, X: 2, Y: 5}
			expect(t, e.do("GET", path("a", zxy, "png")), 200, "HIT-MEMORY")
			e.mem.DeletePrefix("")
			r := e.do("GET", path("a", zxy, "png"))
			expect(t, r, 200, "HIT-DISK")
			if body(t, r) != string(tiles[zxy]) {
				t.Fatal("disk copy differs")
			}
			// Keys the archive lacks.
			expect(t, e.do("GET", "/a/5/0/0.png"), 404, "MISS")
			expect(t, e.do("GET", "/a/5/0/0.png"), 404, "HIT-MEMORY")
			expect(t, e.do("GET", "/a/1/0/0.jpg"), 404, "")
			keys := body(t, e.do("GET", "/_tilesieve/keys?prefix=a/3/", "Authorization", "Bearer test-admin-token"))
			if !strings.Contains(keys, `"key":"a/3/2/5.png"`) {
				t.Fatalf("keys listing lacks the archive tile: %s", keys)
			}
		})
	}
}

// TestArchiveMissingTile204: MISSING_TILE applies to tiles an archive
// lacks as to missing objects.
func TestArchiveMissingTile204(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t, withConfig(func(c *servertest.Config) { c.MissingTile = "204" }))
	e.put("a.pmtiles", pmtilestest.Build(pyramid(1, 1), pmtilestest.Options{Clustered: true}), "", "")
	expect(t, e.do("GET", "/a/1/1/1.png"), 200, "MISS")
	expect(t, e.do("GET", "/a/2/1/1.png"), 204, "MISS")
}

// TestArchiveGzipVector: gzip'd vector tiles go out as stored to clients
// that accept gzip and decoded to those that do not, under .pbf and .mvt.
func TestArchiveGzipVector(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	raw := map[pmtiles.ZXY][]byte{}
	stored := map[pmtiles.ZXY][]byte{}
	for zxy, b := range pyramid(2, 3) {
		raw[zxy] = b
		stored[zxy] = gz(b)
	}
	e.put("v.pmtiles", pmtilestest.Build(stored, pmtilestest.Options{Clustered: true, TileType: pmtiles.TileTypeMVT, TileCompression: pmtiles.CompressionGzip}), "", "")
	zxy := pmtiles.ZXY{Z: 2, X: 3, Y: 1}
	r := e.do("GET", path("v", zxy, "pbf"), "Accept-Encoding", "gzip")
	expect(t, r, 200, "MISS")
	if r.Header.Get("Content-Encoding") != "gzip" || body(t, r) != string(stored[zxy]) || r.Header.Get("Content-Type") != "application/vnd.mapbox-vector-tile" {
		t.Fatalf("gzip client: %v", r.Header)
	}
	r = e.do("GET", path("v", zxy, "pbf"))
	expect(t, r, 200, "HIT-MEMORY")
	if r.Header.Get("Content-Encoding") != "" || body(t, r) != string(raw[zxy]) {
		t.Fatalf("identity client: %v", r.Header)
	}
	r = e.do("GET", path("v", zxy, "mvt"))
	expect(t, r, 200, "MISS")
	if body(t, r) != string(raw[zxy]) {
		t.Fatal(".mvt: wrong bytes")
	}
}

// TestArchiveEveryCompression: archives whose directories and tiles use
// each compression serve every tile byte for byte as stored to clients that
// accept the tiles' coding, and decoded, with an ETag of their own, to
// clients that do not.
func TestArchiveEveryCompression(t *testing.T) {
	t.Parallel()
	raw := pyramid(3, 9)
	for _, ic := range []pmtiles.Compression{pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		for _, tc := range []pmtiles.Compression{pmtiles.CompressionNone, pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
			t.Run(fmt.Sprintf("%v directories, %v tiles", ic, tc), func(t *testing.T) {
				t.Parallel()
				e := newArchiveEnv(t)
				stored := map[pmtiles.ZXY][]byte{}
				for zxy, b := range raw {
					stored[zxy] = pmtilestest.Compress(b, tc)
				}
				e.put("v.pmtiles", pmtilestest.Build(stored, pmtilestest.Options{Clustered: true, TileType: pmtiles.TileTypeMVT,
					InternalCompression: ic, TileCompression: tc, MaxRootBytes: 60, LeafEntries: 16, Metadata: map[string]any{"name": "v"}}), "", "")
				enc := tc.ContentEncoding()
				for zxy := range raw {
					r := e.do("GET", path("v", zxy, "pbf"), "Accept-Encoding", "gzip, deflate, br, zstd")
					expect(t, r, 200, "MISS")
					if got := body(t, r); got != string(stored[zxy]) || r.Header.Get("Content-Encoding") != enc {
						t.Fatalf("%v: accepting client: got %d bytes, Content-Encoding %q, want %d bytes, %q", zxy, len(got), r.Header.Get("Content-Encoding"), len(stored[zxy]), enc)
					}
					tag := r.Header.Get("Etag")
					r = e.do("GET", path("v", zxy, "pbf"))
					expect(t, r, 200, "HIT-MEMORY")
					if got := body(t, r); got != string(raw[zxy]) || r.Header.Get("Content-Encoding") != "" {
						t.Fatalf("%v: identity client: got %d bytes, Content-Encoding %q, want %d bytes, none", zxy, len(got), r.Header.Get("Content-Encoding"), len(raw[zxy]))
					}
					if got := r.Header.Get("Etag"); (enc == "") != (got == tag) {
						t.Fatalf("%v: identity ETag %q beside stored %q", zxy, got, tag)
					}
				}
				var tj struct{ Name string }
				decodeJSON(t, body(t, e.do("GET", "/v.json")), &tj)
				if tj.Name != "v" {
					t.Errorf("TileJSON name: got %q, want %q", tj.Name, "v")
				}
			})
		}
	}
}

// TestArchiveReplacedUnderRead: the archive is replaced behind the
// instance's back (no purge); the next read pinned to the old ETag gets a
// 412, the tileset is dropped on this instance, the read is retried once
// and answers the new bytes, and tiles cached before are gone.
func TestArchiveReplacedUnderRead(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	v1, v2 := pyramid(3, 1), pyramid(3, 2)
	e.put("a.pmtiles", pmtilestest.Build(v1, pmtilestest.Options{Clustered: true, MaxRootBytes: 60, LeafEntries: 16}), "", "")
	a, b := pmtiles.ZXY{Z: 3, X: 1, Y: 1}, pmtiles.ZXY{Z: 3, X: 6, Y: 7}
	if got := body(t, e.do("GET", path("a", a, "png"))); got != string(v1[a]) {
		t.Fatal("v1 bytes")
	}
	e.put("a.pmtiles", pmtilestest.Build(v2, pmtilestest.Options{MaxRootBytes: 60, LeafEntries: 16}), "", "")
	expectBody(t, e.do("GET", path("a", b, "png")), 200, "MISS", string(v2[b]))
	// A tile cached before the replacement is dropped with the tileset.
	expectBody(t, e.do("GET", path("a", a, "png")), 200, "MISS", string(v2[a]))
}

// TestArchiveRevalidation: an aged archive tile is revalidated by checking
// the archive's ETag (one 1-byte ranged GET), without refetching bytes; a
// replaced archive revalidates to the new bytes.
func TestArchiveRevalidation(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	v1, v2 := pyramid(2, 1), pyramid(2, 2)
	e.put("a.pmtiles", pmtilestest.Build(v1, pmtilestest.Options{Clustered: true}), "", "")
	zxy := pmtiles.ZXY{Z: 2, X: 1, Y: 3}
	expect(t, e.do("GET", path("a", zxy, "png")), 200, "MISS")
	e.clock.Advance(2 * time.Hour)
	before := e.s3Reqs.Load()
	r := e.do("GET", path("a", zxy, "png"))
	expect(t, r, 200, "REVALIDATED")
	if n := e.s3Reqs.Load() - before; n != 1 {
		t.Fatalf("revalidation took %d S3 requests, want 1", n)
	}
	if body(t, r) != string(v1[zxy]) {
		t.Fatal("revalidated bytes")
	}
	e.put("a.pmtiles", pmtilestest.Build(v2, pmtilestest.Options{Clustered: true}), "", "")
	e.clock.Advance(2 * time.Hour)
	expectBody(t, e.do("GET", path("a", zxy, "png")), 200, "MISS", string(v2[zxy]))
}

// TestArchiveRequestsPerTile counts S3 requests: a cold archive costs one
// ranged GET for header and root; with leaf directories cached, each new
// tile costs one ranged GET.
func TestArchiveRequestsPerTile(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	tiles := pyramid(5, 9)
	e.put("a.pmtiles", pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true, MaxRootBytes: 200, LeafEntries: 64}), "", "")
	before := e.s3Reqs.Load()
	expect(t, e.do("GET", "/a/0/0/0.png"), 200, "MISS")
	// The probe (header and root), then the leaf and the tile; the object
	// read beside the probe is counted apart (env.beside).
	cold := e.s3Reqs.Load() - before
	t.Logf("first tile of a cold archive: %d S3 requests, and the object read beside the probe", cold)
	// The probe of each tileset format side by side, the leaf, the tile.
	if want := tilesetProbes(false) + 2; cold > int64(want) {
		t.Fatalf("first tile: %d S3 requests, want at most %d", cold, want)
	}
	// Warm every leaf.
	for zxy := range tiles {
		if zxy.Z == 4 {
			e.do("GET", path("a", zxy, "png"))
		}
	}
	before = e.s3Reqs.Load()
	n := 0
	for zxy := range tiles {
		if zxy.Z == 5 {
			expect(t, e.do("GET", path("a", zxy, "png")), 200, "MISS")
			n++
		}
	}
	per := float64(e.s3Reqs.Load()-before) / float64(n)
	t.Logf("cold tiles with directories cached: %.3f S3 requests per tile over %d tiles", per, n)
	if per > 1.1 {
		t.Fatalf("%.3f S3 requests per cold tile with directories cached, want at most 1.1", per)
	}
	// The name was probed once, so at most one object read ran beside a
	// probe (none reached S3 if it was cancelled before it was sent).
	if n := e.beside.Load(); n > 1 {
		t.Errorf("%d object reads of keys under the archive's name reached S3, want at most the one beside its probe", n)
	}
}

// TestObjectTilesetCost: an object tileset pays for the archive check once
// per ArchiveTTL, beside (not before) its object read.
func TestObjectTilesetCost(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t, withConfig(func(c *servertest.Config) { c.ArchiveTTL = time.Minute }))
	for i := range 4 {
		e.put(fmt.Sprintf("osm/2/%d/0.png", i), []byte(fmt.Sprint("tile", i)), "image/png", "")
	}
	count := func(path string) int64 {
		before := e.s3Reqs.Load()
		expect(t, e.do("GET", path), 200, "MISS")
		return e.s3Reqs.Load() - before
	}
	probes := tilesetProbes(false)
	if n := count("/osm/2/0/0.png"); n != 1+probes {
		t.Fatalf("first miss: %d S3 requests, want %d (object GET and one probe per tileset format, side by side)", n, 1+probes)
	}
	if n := count("/osm/2/1/0.png"); n != 1 {
		t.Fatalf("miss within the TTL: %d S3 requests, want 1", n)
	}
	e.clock.Advance(time.Minute)
	if n := count("/osm/2/2/0.png"); n != 1+probes {
		t.Fatalf("miss after the TTL: %d S3 requests, want %d", n, 1+probes)
	}
	expect(t, e.do("GET", "/osm/2/2/0.png"), 200, "HIT-MEMORY")
}

// TestArchiveMalformed: an archive that is not one is a 502 with a short
// body, for the TTL, and costs no read per request.
func TestArchiveMalformed(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	good := pmtilestest.Build(pyramid(1, 1), pmtilestest.Options{Clustered: true})
	for name, b := range map[string][]byte{
		"junk":     bytes.Repeat([]byte("x"), 300),
		"short":    []byte("PMTiles"),
		"badroot":  append(append([]byte{}, good[:pmtiles.HeaderLen]...), bytes.Repeat([]byte{0xff}, 64)...),
		"truncate": good[:len(good)-5],
	} {
		e.put(name+".pmtiles", b, "", "")
		r := e.do("GET", "/"+name+"/1/1/1.png")
		expect(t, r, 502, "")
		if got, want := body(t, r), "invalid or unsupported PMTiles archive\n"; got != want {
			t.Fatalf("%s: got body %q, want %q", name, got, want)
		}
	}
	before := e.s3Reqs.Load()
	expect(t, e.do("GET", "/junk/0/0/0.png"), 502, "")
	if n := e.s3Reqs.Load() - before; n != 0 {
		t.Fatalf("a known malformed archive cost %d S3 requests", n)
	}
}

// TestRefusalIsNoOutage: an origin answer refused for what S3 holds (a
// malformed archive; an IIIF answer past a bound, in
// TestIIIFAnswerOverTheByteBound) is no S3 failure: expired copies are
// still revalidated, not served stale as during an outage.
func TestRefusalIsNoOutage(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	e.put("s/1/0/0.png", []byte("tile"), "image/png", "")
	expect(t, e.do("GET", "/s/1/0/0.png"), 200, "MISS")
	e.clock.Advance(2 * time.Hour)
	e.put("junk.pmtiles", bytes.Repeat([]byte("x"), 300), "", "")
	expect(t, e.do("GET", "/junk/1/1/1.png"), 502, "")
	expect(t, e.do("GET", "/s/1/0/0.png"), 200, "REVALIDATED")
}

// TestArchiveRefusedAtLoad: a truncated archive, and archives whose root
// names bytes past their sections, are refused when the server first opens
// them, with one log line that says why; their tiles and TileJSON then
// answer 502 without another line or S3 request until the TTL.
func TestArchiveRefusedAtLoad(t *testing.T) {
	t.Parallel()
	tiles := pyramid(3, 2)
	good := pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true, MaxRootBytes: 60, LeafEntries: 16})
	h, err := pmtiles.ParseHeader(good)
	if err != nil {
		t.Fatal(err)
	}
	shrunk := func(edit func(*pmtiles.Header)) []byte {
		b := bytes.Clone(good)
		h := h
		edit(&h)
		copy(b, pmtilestest.EncodeHeader(h))
		return b
	}
	for _, c := range []struct {
		name, why string
		b         []byte
	}{
		{"truncated", "tile data at", good[:len(good)-100]},
		{"cut in the root", "lies outside the archive", good[:200]},
		{"leaves shrunk", "leaf directory at", shrunk(func(h *pmtiles.Header) { h.LeafDirectoryLength = 10 })},
		{"random bytes", "bad magic", bytes.Repeat([]byte{0x9c, 0x41, 0x07}, 6000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newArchiveEnv(t)
			e.put("bad.pmtiles", c.b, "", "")
			expect(t, e.do("GET", "/bad/1/1/1.png"), 502, "")
			before := e.s3Reqs.Load()
			for _, p := range []string{"/bad/0/0/0.png", "/bad/2/1/1.png", "/bad.json"} {
				r := e.do("GET", p)
				expect(t, r, 502, "")
				if got, want := body(t, r), "invalid or unsupported PMTiles archive\n"; got != want {
					t.Errorf("%s: got body %q, want %q", p, got, want)
				}
			}
			if n := e.s3Reqs.Load() - before; n != 0 {
				t.Errorf("a refused archive cost %d S3 requests after its load", n)
			}
			lines := e.logs.lines("bad")
			if len(lines) != 1 || !strings.Contains(lines[0], `msg="archive refused"`) || !strings.Contains(lines[0], c.why) || !strings.Contains(lines[0], "name=bad") {
				t.Errorf("log: got %q, want one line: archive refused, name=bad, %q", lines, c.why)
			}
		})
	}
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
}

// TestTilePastMaxTileBytesIsNotRead: a tile larger than MAX_TILE_BYTES, an
// archive tile (deduplicated, under several tile ids) or an object, is
// refused with the 502 before a byte of it is read or allocated, and the
// refusal is remembered: many requests allocate far less than one tile, and
// make no S3 request after the first; a purge forgets it.
func TestTilePastMaxTileBytesIsNotRead(t *testing.T) {
	const limit = 1 << 20
	big := make([]byte, 4*limit)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	e := newArchiveEnv(t, func(_ *env, _ *servertest.Config, oc *origin.Config) { oc.MaxObjectBytes = limit })
	dups := []pmtiles.ZXY{{Z: 2, X: 0, Y: 0}, {Z: 2, X: 0, Y: 1}, {Z: 2, X: 1, Y: 0}, {Z: 2, X: 1, Y: 1}}
	tiles := map[pmtiles.ZXY][]byte{{Z: 0, X: 0, Y: 0}: []byte("small")}
	for _, zxy := range dups {
		tiles[zxy] = big
	}
	e.put("a.pmtiles", pmtilestest.Build(tiles, pmtilestest.Options{Dedup: true, Clustered: true}), "application/octet-stream", "")
	e.put("big/1/0/0.png", big, "image/png", "")
	refused := func(t *testing.T, p string) {
		t.Helper()
		r := e.do("GET", p)
		if got := body(t, r); r.StatusCode != http.StatusBadGateway || !strings.Contains(got, "tile larger than MAX_TILE_BYTES") {
			t.Fatalf("%s: got %d %q, want 502 tile larger than MAX_TILE_BYTES", p, r.StatusCode, got)
		}
	}
	expect(t, e.do("GET", path("a", pmtiles.ZXY{}, "png")), 200, "MISS") // the archive is open
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"archive tile", []string{path("a", dups[0], "png"), path("a", dups[1], "png"), path("a", dups[2], "png"), path("a", dups[3], "png")}},
		{"object", []string{"/big/1/0/0.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.paths {
				refused(t, p) // found too large once
			}
			const rounds = 16
			reqs := e.s3Reqs.Load()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for range rounds {
				for _, p := range tc.paths {
					refused(t, p)
				}
			}
			runtime.ReadMemStats(&after)
			n := rounds * len(tc.paths)
			t.Logf("%d refused requests: %d bytes allocated, %d S3 requests", n, after.TotalAlloc-before.TotalAlloc, e.s3Reqs.Load()-reqs)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(big))/4 {
				t.Errorf("%d refused requests allocated %d bytes, want far below the %d-byte tile", n, alloc, len(big))
			}
			if got := e.s3Reqs.Load() - reqs; got != 0 {
				t.Errorf("%d refused requests made %d S3 requests, want 0 (the refusal is remembered)", n, got)
			}
		})
	}
	// A purge forgets the refusal: a smaller object under the key is served.
	e.put("big/1/0/0.png", []byte("now small"), "image/png", "")
	if _, err := e.srv.Engine().Purge("big/"); err != nil {
		t.Fatal(err)
	}
	r := e.do("GET", "/big/1/0/0.png")
	if got := body(t, r); r.StatusCode != http.StatusOK || got != "now small" {
		t.Fatalf("after the purge: got %d %q, want 200 now small", r.StatusCode, got)
	}
}

// TestArchiveNamesAreBounded: 60,000 distinct first path segments, none an
// archive, leave at most archive.MaxNames names remembered and the heap
// (after GC, the memory tier emptied) within 8 MiB of where it started
// (the names alone would take about 30 MB); a name that is no archive is
// probed once within the TTL while it is remembered. Under -short or -race
// the bound is 512 names and the flood 1,025 (past the bound twice, the
// same pruning at an eighth of the requests); the heap bound bites only in
// the full run.
func TestArchiveNamesAreBounded(t *testing.T) {
	names, maxNames := 60_000, archive.MaxNames // about 30 s of CPU: two S3 requests each
	if testing.Short() || raceEnabled {
		maxNames = 512
		names = 2*maxNames + 1
	}
	// A flood on a busy machine: the bound is what is measured, so no
	// request may fail on the 2 s origin deadline of the other tests.
	e := newArchiveEnv(t, func(_ *env, c *servertest.Config, o *origin.Config) {
		c.OriginTimeout, o.Timeout = time.Minute, time.Minute
		c.ArchiveMaxNames = maxNames
	})
	e.put("osm/1/0/0.png", []byte("tile"), "image/png", "")
	expect(t, e.do("GET", "/osm/1/0/0.png"), 200, "MISS")
	probes := e.ranged.Load()
	expect(t, e.do("GET", "/osm/1/0/1.png"), 404, "MISS")
	if got := e.ranged.Load() - probes; got != 0 {
		t.Fatalf("a second tile of a known object tileset made %d archive probes, want 0", got)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	const workers = 16
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < names; i += workers {
				r := e.do("GET", fmt.Sprintf("/n%05d/1/0/0.png", i))
				if r.StatusCode != http.StatusNotFound {
					t.Errorf("name %d: got %d, want 404", i, r.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := e.srv.ArchiveNames(); got > maxNames {
		t.Errorf("got %d names remembered after %d distinct ones, want at most %d", got, names, maxNames)
	}
	e.mem.DeletePrefix("") // the remembered 404s are the memory tier's, charged to its bound
	runtime.GC()
	runtime.GC() // and pooled buffers
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d distinct first segments: %d names remembered, heap in use %+d bytes", names, e.srv.ArchiveNames(), grown)
	if grown > 8<<20 {
		t.Errorf("heap in use grew by %d bytes, want at most 8 MiB", grown)
	}
}

// tilesetProbes is how many probes a tileset name costs: one per format of
// tilesets served (the formats read whole are off without a stager), side
// by side.
func tilesetProbes(stager bool) int64 {
	n := int64(0)
	for _, f := range formats.Table {
		if f.Tiles && (stager || f.Staging != formats.Whole) {
			n++
		}
	}
	return n
}
