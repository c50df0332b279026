package tileserver_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tileserver"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// TestTileJSONArchive: NAME.json of an archive, from its header and
// metadata, with tile URLs under the request's host, the CDN's forwarded
// host, or PUBLIC_URL; cached, with an ETag per base, 304 on a match.
func TestTileJSONArchive(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t, withConfig(func(c *servertest.Config) { c.CDNSecret = "stack-secret" }))
	md := map[string]any{"name": "Roads", "attribution": "© contributors",
		"vector_layers": []any{map[string]any{"id": "roads", "fields": map[string]any{}}}}
	e.put("v.pmtiles", pmtilestest.Build(pyramid(2, 1), pmtilestest.Options{Clustered: true, TileType: pmtiles.TileTypeMVT, Metadata: md,
		Edit: func(h *pmtiles.Header) {
			h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7 = -1800000000, -850000000, 1800000000, 850000000
			h.CenterZoom = 1
		}}), "", "")
	r := e.do("GET", "/v.json")
	expect(t, r, 200, "MISS")
	var tj tileset.TileJSON
	decodeJSON(t, body(t, r), &tj)
	if tj.TileJSON != "3.0.0" || tj.Name != "Roads" || tj.Attribution != "© contributors" || tj.MinZoom != 0 || tj.MaxZoom != 2 ||
		!slices.Equal(tj.Tiles, []string{"http://example.com/v/{z}/{x}/{y}.pbf"}) ||
		!slices.Equal(tj.Bounds, []float64{-180, -85, 180, 85}) || string(tj.VectorLayers) != `[{"fields":{},"id":"roads"}]` {
		t.Fatalf("TileJSON: %+v", tj)
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Cache-Control") == "no-store" {
		t.Fatalf("headers: %v", r.Header)
	}
	etag := r.Header.Get("Etag")
	expect(t, e.do("GET", "/v.json", "If-None-Match", etag), 304, "HIT-MEMORY")

	r = e.do("GET", "/v.json", "X-Forwarded-Host", "d1.cloudfront.net", tileserver.CDNSecretHeader, "stack-secret")
	expect(t, r, 200, "HIT-MEMORY")
	decodeJSON(t, body(t, r), &tj)
	if tj.Tiles[0] != "https://d1.cloudfront.net/v/{z}/{x}/{y}.pbf" || r.Header.Get("Etag") == etag {
		t.Fatalf("forwarded host: %q, ETag %q", tj.Tiles, r.Header.Get("Etag"))
	}

	pub := newArchiveEnv(t, withConfig(func(c *servertest.Config) { c.PublicURL = "https://tiles.example.org/" }))
	pub.put("v.pmtiles", pmtilestest.Build(pyramid(1, 1), pmtilestest.Options{Clustered: true}), "", "")
	r = pub.do("GET", "/v.json", "X-Forwarded-Host", "evil.example")
	tj = tileset.TileJSON{}
	decodeJSON(t, body(t, r), &tj)
	if tj.Tiles[0] != "https://tiles.example.org/v/{z}/{x}/{y}.png" || tj.Format != "png" || tj.VectorLayers != nil {
		t.Fatalf("PUBLIC_URL: %+v", tj)
	}
}

// TestForwardedHostNeedsTheCDN: a request names the host of a document's
// URLs through X-Forwarded-Host only when it carries the CDN's secret; a
// direct request (no secret, a wrong one, or no secret configured) gets
// the host it came to, and PUBLIC_URL wins over everything.
func TestForwardedHostNeedsTheCDN(t *testing.T) {
	t.Parallel()
	const secret = "stack-secret"
	for _, tt := range []struct {
		name       string
		cdnSecret  string // Config.CDNSecret
		publicURL  string
		hdr        []string
		wantTile   string // TileJSON's first tile URL
		wantInfoID string // info.json's id
	}{
		{"no secret configured, forwarded host ignored", "", "",
			[]string{"X-Forwarded-Host", "evil.example", "X-Forwarded-Proto", "https"},
			"http://a.example/v/{z}/{x}/{y}.png", "http://a.example/books/b1"},
		{"no secret configured, even with the header", "", "",
			[]string{"X-Forwarded-Host", "evil.example", tileserver.CDNSecretHeader, ""},
			"http://a.example/v/{z}/{x}/{y}.png", "http://a.example/books/b1"},
		{"secret configured, request without it", secret, "",
			[]string{"X-Forwarded-Host", "evil.example"},
			"http://a.example/v/{z}/{x}/{y}.png", "http://a.example/books/b1"},
		{"secret configured, wrong secret", secret, "",
			[]string{"X-Forwarded-Host", "evil.example", tileserver.CDNSecretHeader, "stack-secreT"},
			"http://a.example/v/{z}/{x}/{y}.png", "http://a.example/books/b1"},
		{"secret configured, a prefix of it", secret, "",
			[]string{"X-Forwarded-Host", "evil.example", tileserver.CDNSecretHeader, "stack"},
			"http://a.example/v/{z}/{x}/{y}.png", "http://a.example/books/b1"},
		{"through the CDN", secret, "",
			[]string{"X-Forwarded-Host", "d1.cloudfront.net", tileserver.CDNSecretHeader, secret},
			"https://d1.cloudfront.net/v/{z}/{x}/{y}.png", "https://d1.cloudfront.net/books/b1"},
		// Viewers reach the CDN over https; a viewer-sent proto would be
		// cached for everyone.
		{"through the CDN, a viewer's X-Forwarded-Proto is not believed", secret, "",
			[]string{"X-Forwarded-Host", "d1.cloudfront.net", "X-Forwarded-Proto", "http", tileserver.CDNSecretHeader, secret},
			"https://d1.cloudfront.net/v/{z}/{x}/{y}.png", "https://d1.cloudfront.net/books/b1"},
		{"through the CDN, invalid host falls back", secret, "",
			[]string{"X-Forwarded-Host", "evil.example/x?", tileserver.CDNSecretHeader, secret},
			"http://a.example/v/{z}/{x}/{y}.png", "http://a.example/books/b1"},
		{"PUBLIC_URL wins over the CDN", secret, "https://tiles.example.org",
			[]string{"X-Forwarded-Host", "d1.cloudfront.net", tileserver.CDNSecretHeader, secret},
			"https://tiles.example.org/v/{z}/{x}/{y}.png", "https://tiles.example.org/books/b1"},
		{"PUBLIC_URL wins over a direct request", "", "https://tiles.example.org",
			[]string{"X-Forwarded-Host", "evil.example"},
			"https://tiles.example.org/v/{z}/{x}/{y}.png", "https://tiles.example.org/books/b1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newArchiveEnv(t, withConfig(func(c *servertest.Config) {
				c.CDNSecret, c.PublicURL = tt.cdnSecret, tt.publicURL
			}))
			e.put("v.pmtiles", pmtilestest.Build(pyramid(1, 1), pmtilestest.Options{Clustered: true}), "", "")
			e.put("books/b1/info.json", []byte(`{"@context":"http://iiif.io/api/image/3/context.json","id":"https://old.example/x","type":"ImageService3"}`), "application/json", "")
			get := func(path string) string {
				t.Helper()
				req := httptest.NewRequest("GET", path, nil)
				req.Host = "a.example"
				for i := 0; i+1 < len(tt.hdr); i += 2 {
					req.Header.Set(tt.hdr[i], tt.hdr[i+1])
				}
				rec := httptest.NewRecorder()
				e.srv.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Fatalf("%s: got status %d, want 200", path, rec.Code)
				}
				return rec.Body.String()
			}
			var tj tileset.TileJSON
			decodeJSON(t, get("/v.json"), &tj)
			if len(tj.Tiles) != 1 || tj.Tiles[0] != tt.wantTile {
				t.Errorf("TileJSON tiles: got %q, want [%q]", tj.Tiles, tt.wantTile)
			}
			var info struct{ ID string }
			decodeJSON(t, get("/books/b1/info.json"), &info)
			if info.ID != tt.wantInfoID {
				t.Errorf("info.json id: got %q, want %q", info.ID, tt.wantInfoID)
			}
		})
	}
}

// TestTileJSONObjects: NAME.json of an object tileset from the
// NAME/metadata.json tippecanoe writes; without one, NAME.json is the
// object of that name as it is, or a 404.
func TestTileJSONObjects(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	e.put("osm/metadata.json", []byte(`{"name":"osm","format":"pbf","minzoom":"0","maxzoom":"14","bounds":"-10,-20,30,40","center":"1,2,3",
		"json":"{\"vector_layers\":[{\"id\":\"water\"}]}"}`), "application/json", "")
	r := doHost(e.env, "/osm.json", "localhost:8080")
	expect(t, r, 200, "MISS")
	var tj tileset.TileJSON
	decodeJSON(t, body(t, r), &tj)
	if tj.Tiles[0] != "http://localhost:8080/osm/{z}/{x}/{y}.pbf" || tj.MaxZoom != 14 || !slices.Equal(tj.Bounds, []float64{-10, -20, 30, 40}) ||
		!slices.Equal(tj.Center, []float64{1, 2, 3}) || string(tj.VectorLayers) != `[{"id":"water"}]` {
		t.Fatalf("TileJSON: %+v", tj)
	}
	e.put("style.json", []byte(`{"version":8}`), "application/json", "")
	r = e.do("GET", "/style.json")
	expect(t, r, 200, "MISS")
	if got := body(t, r); got != `{"version":8}` {
		t.Fatalf("a plain JSON object: %q", got)
	}
	expect(t, e.do("GET", "/none.json"), 404, "")
	// A metadata.json stored with any coding the server decodes.
	for _, c := range []pmtiles.Compression{pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		name := "m" + c.ContentEncoding()
		e.put(name+"/metadata.json", pmtilestest.Compress([]byte(`{"name":"`+name+`","format":"png","maxzoom":"3"}`), c), "application/json", c.ContentEncoding())
		r := e.do("GET", "/"+name+".json")
		expect(t, r, 200, "MISS")
		var tj tileset.TileJSON
		decodeJSON(t, body(t, r), &tj)
		if tj.Name != name || tj.MaxZoom != 3 {
			t.Errorf("%v metadata.json: got name %q, max zoom %d, want %q, 3", c, tj.Name, tj.MaxZoom, name)
		}
	}
}

// TestInfoJSONRewrite: IIIF info.json answers name the image by the URL it
// is served from: "id" for Image API 3, "@id" for 2; other bytes as stored.
func TestInfoJSONRewrite(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	e.put("books/b1/p7/info.json", []byte(`{"@context":"http://iiif.io/api/image/3/context.json","id":"https://old.example/x","type":"ImageService3","width":100}`), "application/json", "")
	e.put("books/b2/info.json", []byte(`{"@context":"http://iiif.io/api/image/2/context.json","@id":"https://old.example/y","width":100}`), "application/json", "")
	for _, tt := range []struct {
		path, host, want string
	}{
		{"/books/b1/p7/info.json", "a.example", `{"@context":"http://iiif.io/api/image/3/context.json","id":"http://a.example/books/b1/p7","type":"ImageService3","width":100}`},
		{"/books/b2/info.json", "a.example", `{"@context":"http://iiif.io/api/image/2/context.json","@id":"http://a.example/books/b2","width":100}`},
		{"/books/b2/info.json", "b.example", `{"@context":"http://iiif.io/api/image/2/context.json","@id":"http://b.example/books/b2","width":100}`},
	} {
		r := doHost(e.env, tt.path, tt.host)
		if got := body(t, r); r.StatusCode != 200 || got != tt.want {
			t.Errorf("%s via %s: %d %s, want %s", tt.path, tt.host, r.StatusCode, got, tt.want)
		}
	}
	// The stored bytes stay in the tiers; a purge drops them and their renderings.
	expect(t, doHost(e.env, "/books/b2/info.json", "a.example"), 200, "HIT-MEMORY")
	if _, err := e.srv.Engine().Purge("books/"); err != nil {
		t.Fatal(err)
	}
	expect(t, doHost(e.env, "/books/b2/info.json", "a.example"), 200, "MISS")
}

// doHost is a GET that arrives at host.
func doHost(e *env, path, host string) *http.Response {
	e.t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = host
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	return rec.Result()
}

// TestCatalog lists archives, object tilesets with a metadata.json and
// directories whose keys show a tile pyramid, with their TileJSON URLs,
// without a token.
func TestCatalog(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t, withConfig(func(c *servertest.Config) { c.CDNSecret = "stack-secret" }))
	e.put("a.pmtiles", pmtilestest.Build(pyramid(1, 1), pmtilestest.Options{Clustered: true}), "", "")
	e.put("osm/metadata.json", []byte(`{"format":"png"}`), "application/json", "")
	e.put("osm/0/0/0.png", []byte("t"), "image/png", "")
	e.put("plain/0/0/0.png", []byte("t"), "image/png", "")
	e.put("fonts/Noto Sans Regular/0-255.pbf", []byte("g"), "", "")
	e.put("osm-style/style.json", []byte("{}"), "", "")
	e.put("odd/1/x/0.png", []byte("t"), "image/png", "")
	r := e.do("GET", "/_tilesieve/catalog", "X-Forwarded-Host", "cdn.example", tileserver.CDNSecretHeader, "stack-secret")
	expect(t, r, 200, "")
	var c docs.Catalog
	decodeJSON(t, body(t, r), &c)
	want := []docs.CatalogEntry{
		{Name: "a", Kind: "pmtiles", TileJSON: "https://cdn.example/a.json"},
		{Name: "osm", Kind: "objects", TileJSON: "https://cdn.example/osm.json"},
		{Name: "plain", Kind: "objects", TileJSON: "https://cdn.example/plain.json"},
	}
	if !slices.Equal(c.Tilesets, want) {
		t.Fatalf("catalog: got %+v, want %+v", c.Tilesets, want)
	}
	// Cached: a second listing within the TTL costs no S3 request.
	before := e.s3Reqs.Load()
	expect(t, e.do("GET", "/_tilesieve/catalog"), 200, "")
	if n := e.s3Reqs.Load() - before; n != 0 {
		t.Fatalf("cached catalog: %d S3 requests", n)
	}
	expect(t, e.do("POST", "/_tilesieve/catalog"), 405, "")
}

// TestArchiveReuploadReachesEveryInstance: two instances serve an
// archive; it is re-uploaded and the worker runs on the event; within the
// bound both answer the new bytes (tiles and TileJSON).
func TestArchiveReuploadReachesEveryInstance(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, 8<<20)
	for _, in := range f.instances {
		startWithArchives(f, in)
	}
	v1, v2 := pyramid(2, 1), pyramid(2, 2)
	f.put("a.pmtiles", pmtilestest.Build(v1, pmtilestest.Options{Clustered: true, Metadata: map[string]any{"name": "one"}}))
	zxy := pmtiles.ZXY{Z: 2, X: 3, Y: 0}
	key := fmt.Sprintf("a/%d/%d/%d.png", zxy.Z, zxy.X, zxy.Y)
	for i := range f.instances {
		f.expect(i, key, 200, string(v1[zxy]), "MISS")
		f.expect(i, key, 200, string(v1[zxy]), "HIT-MEMORY")
		f.expect(i, "a.json", 200, "", "")
	}
	f.put("a.pmtiles", pmtilestest.Build(v2, pmtilestest.Options{Metadata: map[string]any{"name": "two"}}))
	f.notify(0, "a.pmtiles", false)
	f.clock.Advance(bound)
	for i := range f.instances {
		f.expect(i, key, 200, string(v2[zxy]), "MISS")
		_, doc, _ := f.get(i, "a.json")
		var tj tileset.TileJSON
		decodeJSON(t, doc, &tj)
		if tj.Name != "two" {
			t.Fatalf("instance %d: TileJSON %+v after the re-upload", i, tj)
		}
	}
}

// TestArchiveReuploadReachesAnInstanceWhoseJournalFails: as above, with the
// journal failing for the instance after the worker recorded the purge.
// Past the bound its copies are revalidated with S3, and so is the
// archive's version: an ETag checked before the purge may be the one the
// purge replaced, so it is not trusted for the archive's TTL.
func TestArchiveReuploadReachesAnInstanceWhoseJournalFails(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1, 8<<20)
	startWithArchives(f, f.instances[0])
	v1, v2 := pyramid(2, 1), pyramid(2, 2)
	f.put("a.pmtiles", pmtilestest.Build(v1, pmtilestest.Options{Clustered: true}))
	zxy := pmtiles.ZXY{Z: 2, X: 3, Y: 0}
	key := fmt.Sprintf("a/%d/%d/%d.png", zxy.Z, zxy.X, zxy.Y)
	f.expect(0, key, 200, string(v1[zxy]), "MISS")
	f.put("a.pmtiles", pmtilestest.Build(v2, pmtilestest.Options{}))
	f.notify(0, "a.pmtiles", false)
	f.journalFault(http.StatusServiceUnavailable)
	f.clock.Advance(bound)
	f.expect(0, key, 200, string(v2[zxy]), "")
}

// TestStagedArchiveReuploadReachesAnInstanceWhoseJournalFails: the same
// with the archive's copy staged on local disk, whose reads never ask S3:
// past the bound a tile not yet in the tiers is read only once S3 has said
// the copy's version is still the archive's.
func TestStagedArchiveReuploadReachesAnInstanceWhoseJournalFails(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1, 8<<20)
	in := f.instances[0]
	startWithArchives(f, in)
	v1, v2 := pyramid(2, 1), pyramid(2, 2)
	b1 := pmtilestest.Build(v1, pmtilestest.Options{Clustered: true})
	f.put("a.pmtiles", b1)
	h, err := f.api.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("tiles/a.pmtiles")})
	if err != nil {
		t.Fatal(err)
	}
	in.srv.UseLocalArchive("a", aws.ToString(h.ETag), pmtiles.ReaderAt(bytes.NewReader(b1)))
	first, later := pmtiles.ZXY{Z: 2, X: 3, Y: 0}, pmtiles.ZXY{Z: 2, X: 1, Y: 2}
	keyOf := func(z pmtiles.ZXY) string { return fmt.Sprintf("a/%d/%d/%d.png", z.Z, z.X, z.Y) }
	f.expect(0, keyOf(first), 200, string(v1[first]), "MISS")
	f.put("a.pmtiles", pmtilestest.Build(v2, pmtilestest.Options{}))
	f.notify(0, "a.pmtiles", false)
	f.journalFault(http.StatusServiceUnavailable)
	f.clock.Advance(bound)
	f.expect(0, keyOf(later), 200, string(v2[later]), "")
	f.expect(0, keyOf(first), 200, string(v2[first]), "")
}

// startWithArchives restarts an instance of the fleet with archives on.
func startWithArchives(f *fleet, in *instance) {
	f.t.Helper()
	f.startWith(in, nil, true)
}

// TestCatalogShowsRefusedArchive: listing the catalog opens the archives it
// names as a request would, so a truncated one is reported there with its
// reason, and in the log once, before any tile of it is asked for.
func TestCatalogShowsRefusedArchive(t *testing.T) {
	t.Parallel()
	e := newArchiveEnv(t)
	whole := pmtilestest.Build(pyramid(2, 3), pmtilestest.Options{Clustered: true})
	e.put("a.pmtiles", whole, "", "")
	e.put("bad.pmtiles", whole[:len(whole)-50], "", "")
	r := e.do("GET", "/_tilesieve/catalog")
	expect(t, r, 200, "")
	var c docs.Catalog
	decodeJSON(t, body(t, r), &c)
	if len(c.Tilesets) != 2 || c.Tilesets[0].Name != "a" || c.Tilesets[0].Error != "" ||
		c.Tilesets[1].Name != "bad" || !strings.Contains(c.Tilesets[1].Error, "tile data at") || !strings.Contains(c.Tilesets[1].Error, "lies outside the archive") {
		t.Fatalf("catalog: got %+v, want a serving and bad refused because its tile data lies outside the archive", c.Tilesets)
	}
	before := e.s3Reqs.Load()
	expect(t, e.do("GET", "/bad/1/1/1.png"), 502, "")
	expect(t, e.do("GET", "/a/1/1/1.png"), 200, "")
	if n := e.s3Reqs.Load() - before; n != 1 {
		t.Errorf("tiles after the listing: got %d S3 requests, want 1 (the good tile's bytes; both archives were opened by the listing)", n)
	}
	if lines := e.logs.lines("bad"); len(lines) != 1 || !strings.Contains(lines[0], `msg="archive refused"`) {
		t.Errorf("log: got %q, want one line: archive refused", lines)
	}
}
