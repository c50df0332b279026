package tileserver_test

import (
	"net/url"
	"testing"
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
