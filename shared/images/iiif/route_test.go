package iiif

import (
	"net/http"
	"testing"
)

func TestParsePath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path   string
		ok     bool
		status int // of the error; 0: none
		want   Route
		dir    string
	}{
		{"/osm/1/2/3.png", false, 0, Route{}, ""},
		{"/iiif/1/a/info.json", false, 0, Route{}, ""},
		{"/iiif/3/a", true, 0, Route{Version: V3, ID: "a", Kind: RouteBase}, "iiif/3/a/"},
		{"/iiif/3/maps%2Fa/info.json", true, 0, Route{Version: V3, ID: "maps/a", Kind: RouteInfo}, "iiif/3/maps%2Fa/"},
		{"/iiif/2/maps%2fa/info.json", true, 0, Route{Version: V2, ID: "maps/a", Kind: RouteInfo}, "iiif/2/maps%2Fa/"},
		{"/iiif/3/a/manifest.json", true, 0, Route{Version: V3, ID: "a", Kind: RouteManifest}, "iiif/3/a/"},
		{"/iiif/2/a/manifest.json", true, http.StatusNotFound, Route{}, ""},
		{"/iiif/3/my%20map/full/max/0/default.jpg", true, 0,
			Route{Version: V3, ID: "my map", Kind: RouteImage, Params: [4]string{"full", "max", "0", "default.jpg"}}, "iiif/3/my%20map/"},
		{"/iiif/3/a/full/max/0", true, http.StatusNotFound, Route{}, ""},
		{"/iiif/3//info.json", true, http.StatusBadRequest, Route{}, ""},
		{"/iiif/3/a%zz/info.json", true, http.StatusBadRequest, Route{}, ""},
		{"/iiif/3/a%00/info.json", true, http.StatusBadRequest, Route{}, ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			r, ok, err := ParsePath(c.path)
			if ok != c.ok || (err == nil) != (c.status == 0) || (err != nil && StatusOf(err) != c.status) {
				t.Fatalf("got %+v, %v, %v; want ok %v, status %d", r, ok, err, c.ok, c.status)
			}
			if err == nil && ok && (r != c.want || r.Dir() != c.dir) {
				t.Errorf("got %+v (dir %q), want %+v (dir %q)", r, r.Dir(), c.want, c.dir)
			}
		})
	}
}

// FuzzParsePath: no path makes ParsePath panic; a route it reads names a
// directory that reads back as the same image (ParseKey of its info.json).
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/iiif/3/maps%2Fa/full/max/0/default.jpg", "/iiif/2/a/info.json", "/iiif/3/x", "/iiif/3/%2F%2F/info.json", "/tiles/1/2/3.png"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r, ok, err := ParsePath(path)
		if !ok || err != nil {
			return
		}
		back, ok := ParseKey(r.Dir() + "info.json")
		if !ok || back.ID != r.ID || back.Version != r.Version {
			t.Fatalf("%q: dir %q reads back as %+v, %v", path, r.Dir(), back, ok)
		}
	})
}
