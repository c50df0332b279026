package tileserver_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// TestContentTypesByKey: objects stored without a type, or with a generic
// or the vector-tile one, are served with the type their key names; a glyph
// range is a protobuf, not a vector tile.
func TestContentTypesByKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		key, stored, want string
	}{
		{"fonts/Noto Sans Regular/0-255.pbf", "", "application/x-protobuf"},
		{"fonts/Noto Sans Regular/256-511.pbf", "application/vnd.mapbox-vector-tile", "application/x-protobuf"},
		{"osm/fonts/Open Sans/0-255.pbf", "binary/octet-stream", "application/x-protobuf"},
		{"osm/1/0/0.pbf", "", "application/vnd.mapbox-vector-tile"},
		{"osm/sprite@2x.png", "application/octet-stream", "image/png"},
		{"osm/style.json", "", "application/json"},
		{"osm/1/0/0.webp", "", "image/webp"},
	} {
		t.Run(c.key, func(t *testing.T) {
			e.put(c.key, []byte("body"), c.stored, "")
			r := e.do("GET", (&url.URL{Path: "/" + c.key}).EscapedPath())
			expect(t, r, 200, "MISS")
			if got := r.Header.Get("Content-Type"); got != c.want {
				t.Errorf("Content-Type: got %v, want %v", got, c.want)
			}
		})
	}
}

// TestStyleRewritten: NAME/style.json is served with its URLs that are ours
// under the base it is served from (the Host, the CDN's forwarded host),
// one rendering and ETag per base, 304 on a match, gzip-stored styles
// rendered too; a re-upload and its purge serve the new style.
func TestStyleRewritten(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *servertest.Config) { c.CDNSecret = "stack-secret" }))
	stored := `{"version":8,"sources":{"osm":{"type":"vector","url":"http://127.0.0.1:8080/osm.json"},` +
		`"other":{"type":"vector","url":"https://elsewhere.example/x.json"}},` +
		`"sprite":"http://127.0.0.1:8080/osm/sprite","glyphs":"/fonts/{fontstack}/{range}.pbf","layers":[]}`
	e.put("osm/style.json", []byte(stored), "application/json", "")
	e.put("gz/style.json", gz(`{"version":8,"sources":{},"sprite":"sprite","layers":[]}`), "application/json", "gzip")
	want := func(base string) string {
		return `{"version":8,"sources":{"osm":{"type":"vector","url":"` + base + `/osm.json"},` +
			`"other":{"type":"vector","url":"https://elsewhere.example/x.json"}},` +
			`"sprite":"` + base + `/osm/sprite","glyphs":"` + base + `/fonts/{fontstack}/{range}.pbf","layers":[]}`
	}
	etags := map[string]string{}
	for _, c := range []struct {
		name, path string
		hdr        []string
		host, want string
	}{
		{"host", "/osm/style.json", nil, "tiles.example", want("http://tiles.example")},
		{"other host", "/osm/style.json", nil, "b.example", want("http://b.example")},
		{"cdn", "/osm/style.json", []string{"X-Forwarded-Host", "d1.cloudfront.net", tileserver.CDNSecretHeader, "stack-secret"}, "origin.example", want("https://d1.cloudfront.net")},
		{"forwarded without the secret", "/osm/style.json", []string{"X-Forwarded-Host", "evil.example"}, "tiles.example", want("http://tiles.example")},
		{"gzip stored", "/gz/style.json", nil, "tiles.example", `{"version":8,"sources":{},"sprite":"http://tiles.example/gz/sprite","layers":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := doHostHeaders(e, c.path, c.host, c.hdr...)
			if got := body(t, r); r.StatusCode != 200 || got != c.want {
				t.Fatalf("got %d %v, want 200 %v", r.StatusCode, got, c.want)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type: got %v, want application/json", got)
			}
			etag := r.Header.Get("Etag")
			if prev, ok := etags[c.want]; ok && prev != etag {
				t.Errorf("ETag: got %v, want %v as for the same rendering", etag, prev)
			}
			for w, tag := range etags {
				if w != c.want && tag == etag {
					t.Errorf("ETag %v is also another rendering's", etag)
				}
			}
			etags[c.want] = etag
			if r := doHostHeaders(e, c.path, c.host, append(c.hdr, "If-None-Match", etag)...); r.StatusCode != 304 {
				t.Errorf("If-None-Match: got %d, want 304", r.StatusCode)
			}
		})
	}
	// A re-upload is purged by its key; the next answer is the new style.
	e.put("osm/style.json", []byte(strings.Replace(stored, `"layers":[]`, `"layers":[{"id":"bg","type":"background"}]`, 1)), "application/json", "")
	if _, err := e.srv.Engine().Purge("osm/style.json"); err != nil {
		t.Fatal(err)
	}
	r := doHostHeaders(e, "/osm/style.json", "tiles.example")
	expect(t, r, 200, "MISS")
	if got := body(t, r); !strings.Contains(got, `"id":"bg"`) || !strings.Contains(got, `"url":"http://tiles.example/osm.json"`) {
		t.Fatalf("after the purge: got %v", got)
	}
}

// doHostHeaders is a GET that arrives at host with the header pairs hdr.
func doHostHeaders(e *env, path, host string, hdr ...string) *http.Response {
	e.t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec.Result()
}

// fontRange is one font's glyph range 0-255 with a glyph per id of ids,
// each glyph's advance set to mark the font.
func fontRange(name string, advance uint32, ids ...uint32) []byte {
	s := glyphs.Stack{Name: name, Range: "0-255"}
	for _, id := range ids {
		s.Glyphs = append(s.Glyphs, glyphs.Glyph{ID: id, Advance: advance})
	}
	return glyphs.Encode([]glyphs.Stack{s})
}

// TestGlyphStacksComposed: a font stack not stored as one is composed from
// its fonts' ranges read through the tiers (gzip-stored ones decoded), a
// memory hit once composed, 304 on its ETag; a stack stored as one is
// served as stored; none of the fonts is 404, a bad range 400; a purge of
// the font directory (what a font's re-upload derives) serves the new font.
func TestGlyphStacksComposed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := fontRange("A", 1, 32, 65)
	b := fontRange("B", 2, 65, 66)
	e.put("fonts/A/0-255.pbf", a, "", "")
	e.put("fonts/B/0-255.pbf", gz(string(b)), "application/x-protobuf", "gzip")
	e.put("fonts/A,C/0-255.pbf", []byte("stored stack"), "application/x-protobuf", "")
	compose := func(key string, pbfs ...[]byte) string {
		r, err := glyphs.ParseKey(key)
		if err != nil {
			t.Fatal(err)
		}
		out, err := glyphs.Compose(r, pbfs)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	for _, c := range []struct {
		name, key string
		status    int
		want      string
	}{
		{"two fonts", "fonts/A,B/0-255.pbf", 200, compose("fonts/A,B/0-255.pbf", a, b)},
		{"other order", "fonts/B,A/0-255.pbf", 200, compose("fonts/B,A/0-255.pbf", b, a)},
		{"spaces and one missing", "fonts/Missing, B/0-255.pbf", 200, compose("fonts/Missing,B/0-255.pbf", nil, b)},
		{"stored as one", "fonts/A,C/0-255.pbf", 200, "stored stack"},
		{"none stored", "fonts/X,Y/0-255.pbf", 404, ""},
		{"one font missing", "fonts/X/0-255.pbf", 404, ""},
		{"unaligned range", "fonts/A,B/0-100.pbf", 400, ""},
		{"too many fonts", "fonts/A,B,C,D,E,F,G,H,I/0-255.pbf", 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := (&url.URL{Path: "/" + c.key}).EscapedPath()
			r := e.do("GET", p)
			got := body(t, r)
			if r.StatusCode != c.status || (c.status == 200 && got != c.want) {
				t.Fatalf("got %d %q, want %d %q", r.StatusCode, got, c.status, c.want)
			}
			if c.status != 200 {
				return
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
				t.Errorf("Content-Type: got %v, want application/x-protobuf", ct)
			}
			again := e.do("GET", p)
			expect(t, again, 200, "HIT-MEMORY")
			if got := body(t, again); got != c.want {
				t.Errorf("again: got %q, want %q", got, c.want)
			}
			if r := e.do("GET", p, "If-None-Match", r.Header.Get("Etag")); r.StatusCode != 304 {
				t.Errorf("If-None-Match: got %d, want 304", r.StatusCode)
			}
		})
	}
	// A's new version, purged as the worker derives it: the stack changes.
	a2 := fontRange("A", 9, 32, 65, 67)
	e.put("fonts/A/0-255.pbf", a2, "", "")
	r := e.do("GET", "/fonts/A,B/0-255.pbf")
	if got := body(t, r); got != compose("fonts/A,B/0-255.pbf", a, b) {
		t.Fatalf("before the purge: got %q, want the old stack", got)
	}
	if _, err := e.srv.Engine().Purge("fonts/"); err != nil {
		t.Fatal(err)
	}
	r = e.do("GET", "/fonts/A,B/0-255.pbf")
	if got, want := body(t, r), compose("fonts/A,B/0-255.pbf", a2, b); got != want {
		t.Fatalf("after the purge: got %q, want %q", got, want)
	}
}

// TestCatalogPurged: the catalog is cached, but every purge the instance
// applies drops it: an upload is listed as soon as its purge is seen, not
// a TTL later.
func TestCatalogPurged(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	e.put("a/0/0/0.png", []byte("t"), "image/png", "")
	names := func() []string {
		t.Helper()
		r := e.do("GET", "/_tilesieve/catalog")
		expect(t, r, 200, "")
		var c docs.Catalog
		decodeJSON(t, body(t, r), &c)
		var n []string
		for _, ts := range c.Tilesets {
			n = append(n, ts.Name)
		}
		return n
	}
	if got, want := names(), []string{"a"}; !slices.Equal(got, want) {
		t.Fatalf("catalog: got %v, want %v", got, want)
	}
	e.put("b/3/1/1.webp", []byte("t"), "image/webp", "")
	if got, want := names(), []string{"a"}; !slices.Equal(got, want) {
		t.Fatalf("catalog before the purge: got %v, want %v (cached)", got, want)
	}
	if _, err := e.srv.Engine().Purge("b/3/1/1.webp"); err != nil {
		t.Fatal(err)
	}
	if got, want := names(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("catalog after the purge: got %v, want %v", got, want)
	}
}

// TestTileJSONFromKeys: a directory without metadata.json (or a NAME.json
// object) has a TileJSON built from its keys: format and zoom levels; 304
// while they hold; a directory whose keys are no tile pyramid has none.
func TestTileJSONFromKeys(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	for _, k := range []string{"r/2/1/1.png", "r/2/1/2.png", "r/5/3/4.png", "r/12/0/0.png", "r/notes/x.txt"} {
		e.put(k, []byte("t"), "", "")
	}
	e.put("v/0/0/0.pbf", []byte("t"), "", "")
	e.put("j/3/0/0.jpeg", []byte("t"), "", "")
	e.put("fonts/Noto Sans Regular/0-255.pbf", []byte("g"), "", "")
	e.put("own/0/0/0.png", []byte("t"), "", "")
	e.put("own.json", []byte(`{"tilejson":"3.0.0","tiles":["https://x.example/{z}/{x}/{y}.png"]}`), "application/json", "")
	for _, c := range []struct {
		name       string
		status     int
		tiles      string
		minZ, maxZ int
		layers     bool
	}{
		{"r", 200, "http://example.com/r/{z}/{x}/{y}.png", 2, 12, false},
		{"v", 200, "http://example.com/v/{z}/{x}/{y}.pbf", 0, 0, true},
		{"j", 200, "http://example.com/j/{z}/{x}/{y}.jpg", 3, 3, false},
		{"fonts", 404, "", 0, 0, false},
		{"none", 404, "", 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("GET", "/"+c.name+".json")
			b := body(t, r)
			if r.StatusCode != c.status {
				t.Fatalf("status: got %d %s, want %d", r.StatusCode, b, c.status)
			}
			if c.status != 200 {
				return
			}
			var tj tileset.TileJSON
			decodeJSON(t, b, &tj)
			if !slices.Equal(tj.Tiles, []string{c.tiles}) || tj.MinZoom != c.minZ || tj.MaxZoom != c.maxZ || (tj.VectorLayers != nil) != c.layers {
				t.Fatalf("TileJSON: got %+v, want tiles %v, zooms %d-%d", tj, c.tiles, c.minZ, c.maxZ)
			}
			if r := e.do("GET", "/"+c.name+".json", "If-None-Match", r.Header.Get("Etag")); r.StatusCode != 304 {
				t.Errorf("If-None-Match: got %d, want 304", r.StatusCode)
			}
		})
	}
	// A stored NAME.json is served as it is.
	if got := body(t, e.do("GET", "/own.json")); !strings.Contains(got, "https://x.example/") {
		t.Errorf("own.json: got %v, want the stored object", got)
	}
}

// TestGlyphStackReleasesItsFonts: the fonts a stack is composed from are
// read through the tiers, from memory hits whose bodies are off the heap
// once they are large enough: the composition releases them (the env's
// cleanup fails the test if a lease is left), and a font replaced meanwhile
// never shows through the stack composed from its old bytes.
func TestGlyphStackReleasesItsFonts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := make([]uint32, 256)
	for i := range ids {
		ids[i] = uint32(i)
	}
	a, b := fontRange("A", 1, ids...), fontRange("B", 2, ids...)
	if len(a) < memory.MinOffHeap || len(b) < memory.MinOffHeap {
		t.Fatalf("font ranges of %d and %d bytes: too small to be kept off the heap", len(a), len(b))
	}
	e.put("fonts/A/0-255.pbf", a, "application/x-protobuf", "")
	e.put("fonts/B/0-255.pbf", b, "application/x-protobuf", "")
	r, err := glyphs.ParseKey("fonts/A,B/0-255.pbf")
	if err != nil {
		t.Fatal(err)
	}
	want, err := glyphs.Compose(r, [][]byte{a, b})
	if err != nil {
		t.Fatal(err)
	}
	// The fonts enter the memory tier, then the stack is composed from
	// their memory hits.
	expectBody(t, e.do("GET", "/fonts/A/0-255.pbf"), 200, "MISS", string(a))
	expectBody(t, e.do("GET", "/fonts/B/0-255.pbf"), 200, "MISS", string(b))
	for range 3 {
		e.mem.Delete("fonts/A,B/0-255.pbf")
		if got := body(t, e.do("GET", "/fonts/A,B/0-255.pbf")); got != string(want) {
			t.Fatalf("stack: got %d bytes, want %d", len(got), len(want))
		}
	}
}
