package viewer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  viewer.Config
		ok   bool
	}{
		{"demo", viewer.Config{Template: "/demo/{z}/{x}/{y}.png", MaxZoom: 4, Zoom: 2}, true},
		{"no placeholders", viewer.Config{Template: "/demo/tile.png", MaxZoom: 4}, false},
		{"relative", viewer.Config{Template: "demo/{z}/{x}/{y}.png", MaxZoom: 4}, false},
		{"zoom outside", viewer.Config{Template: "/{z}/{x}/{y}", MaxZoom: 4, Zoom: 5}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: got %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestMountServesThePageAtRootOnly(t *testing.T) {
	t.Parallel()
	page, err := viewer.Handler(viewer.Config{
		Template: "/demo/{z}/{x}/{y}.png", MaxZoom: 4, Zoom: 2,
		Hints: []viewer.Hint{{Label: "Upload", Command: "aws s3 cp a.png s3://tiles/x </script>"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tiles := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tile "+r.URL.Path) })
	srv := httptest.NewServer(viewer.Mount(page, tiles))
	defer srv.Close()

	for _, tc := range []struct{ path, want string }{
		{"/", "<!doctype html>"},
		{"/demo/0/0/0.png", "tile /demo/0/0/0.png"},
		{"/index.html", "tile /index.html"},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(b), tc.want) {
			t.Errorf("GET %s: got %.40q, want %q…", tc.path, b, tc.want)
		}
		if tc.path == "/" {
			body := string(b)
			if !strings.Contains(body, `"Template":"/demo/{z}/{x}/{y}.png"`) || !strings.Contains(body, `"MaxZoom":4`) {
				t.Errorf("the page does not carry its configuration")
			}
			if strings.Contains(body, "x </script>") {
				t.Errorf("a hint was not escaped")
			}
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusMethodNotAllowed; got != want || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: got %d, Allow %q, want %d, Allow GET, HEAD", got, resp.Header.Get("Allow"), want)
	}
}

// TestAssets: Mount serves the style viewer and MapLibre under
// AssetsPrefix, gzip to clients that take it and decoded to others, and
// leaves every other path to the tiles.
func TestAssets(t *testing.T) {
	t.Parallel()
	tiles := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tile "+r.URL.Path) })
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") })
	h := viewer.Mount(page, tiles)
	for _, c := range []struct {
		name, method, path, ae string
		status                 int
		encoding, contentType  string
		bodyHas                string
	}{
		{"style page", "GET", viewer.StylePage, "", 200, "", "text/html; charset=utf-8", "maplibregl.Map"},
		{"maplibre gzip", "GET", "/_viewer/maplibre-gl.js", "gzip, br", 200, "gzip", "text/javascript; charset=utf-8", "\x1f\x8b"},
		{"maplibre decoded", "GET", "/_viewer/maplibre-gl.js", "", 200, "", "text/javascript; charset=utf-8", "maplibregl"},
		{"maplibre gzip refused", "GET", "/_viewer/maplibre-gl.js", "gzip;q=0", 200, "", "text/javascript; charset=utf-8", "maplibregl"},
		{"css", "GET", "/_viewer/maplibre-gl.css", "", 200, "", "text/css; charset=utf-8", ".maplibregl-map"},
		{"IIIF page", "GET", viewer.IIIFPageOf("demo/image"), "", 200, "", "text/html; charset=utf-8", "OpenSeadragon({"},
		{"openseadragon gzip", "GET", "/_viewer/openseadragon.min.js", "gzip", 200, "gzip", "text/javascript; charset=utf-8", "\x1f\x8b"},
		{"openseadragon decoded", "GET", "/_viewer/openseadragon.min.js", "", 200, "", "text/javascript; charset=utf-8", "openseadragon 6.1.1"},
		{"unknown asset", "GET", "/_viewer/nope.js", "", 404, "", "", ""},
		{"post", "POST", viewer.StylePage, "", 405, "", "", ""},
		{"root", "GET", "/", "", 200, "", "", "page"},
		{"tile", "GET", "/demo/0/0/0.png", "", 200, "", "", "tile /demo/0/0/0.png"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, nil)
			if c.ae != "" {
				req.Header.Set("Accept-Encoding", c.ae)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			r := rec.Result()
			b, _ := io.ReadAll(r.Body)
			if r.StatusCode != c.status {
				t.Fatalf("status: got %d, want %d", r.StatusCode, c.status)
			}
			if got := r.Header.Get("Content-Encoding"); got != c.encoding {
				t.Errorf("Content-Encoding: got %v, want %v", got, c.encoding)
			}
			if c.contentType != "" && r.Header.Get("Content-Type") != c.contentType {
				t.Errorf("Content-Type: got %v, want %v", r.Header.Get("Content-Type"), c.contentType)
			}
			if !strings.Contains(string(b), c.bodyHas) {
				t.Errorf("body: got %.80q, want it to contain %q", b, c.bodyHas)
			}
		})
	}
}

// TestIIIFPageOf: the IIIF page names an image by its id, escaped as a
// query value (the page escapes it again as one path segment).
func TestIIIFPageOf(t *testing.T) {
	t.Parallel()
	if got, want := viewer.IIIFPageOf("maps/a b"), "/_viewer/iiif.html?id=maps%2Fa+b"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestVendoredBuilds: each vendored build is the release its VERSION
// names, with its licence beside it.
func TestVendoredBuilds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dir, js, version string }{
		{"maplibre", "maplibre-gl.js", "maplibre-gl 5.24.1 "},
		{"openseadragon", "openseadragon.min.js", "openseadragon 6.1.1 "},
	} {
		v, err := os.ReadFile(filepath.Join(c.dir, "VERSION"))
		if err != nil || !strings.HasPrefix(string(v), c.version) {
			t.Errorf("%s/VERSION: got %q, %v, want it to start with %q", c.dir, v, err, c.version)
		}
		if l, err := os.ReadFile(filepath.Join(c.dir, "LICENSE.txt")); err != nil || !strings.Contains(string(l), "Redistribution and use in source and binary forms") {
			t.Errorf("%s/LICENSE.txt: %v, want the BSD licence", c.dir, err)
		}
		rec := httptest.NewRecorder()
		viewer.Assets().ServeHTTP(rec, httptest.NewRequest("GET", viewer.AssetsPrefix+c.js, nil))
		if n := strings.TrimSpace(strings.Fields(c.version)[1]); !strings.Contains(rec.Body.String()[:min(rec.Body.Len(), 2000)], n) {
			t.Errorf("%s: the build does not name release %s near its start", c.js, n)
		}
	}
}

// TestPageLinksTheImage: with Config.Image the map page links to the IIIF
// page of that image; without it, to none.
func TestPageLinksTheImage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		image string
		want  bool
	}{{"demo/image", true}, {"", false}} {
		h, err := viewer.Handler(viewer.Config{Template: "/demo/{z}/{x}/{y}.png", MaxZoom: 2, Image: c.image})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		link := `id="image-link" href="/_viewer/iiif.html?id=demo%2Fimage"`
		if got := strings.Contains(rec.Body.String(), link); got != c.want {
			t.Errorf("Image %q: link %s present %v, want %v", c.image, link, got, c.want)
		}
	}
}
