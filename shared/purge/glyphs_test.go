package purge

import (
	"slices"
	"testing"
)

// TestWorkerFontPurgesStacks: a change of one font's glyph range purges its
// font directory, in the journal and on the CDN, so the font stacks
// composed with that font (DIR/A,FONT/…) are purged with it.
func TestWorkerFontPurgesStacks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		event, key string
		prefixes   []string
		paths      []string
	}{
		{"ObjectCreated:Put", "fonts/Noto Sans Regular/0-255.pbf", []string{"fonts/"}, []string{"/fonts/*"}},
		{"ObjectRemoved:Delete", "osm/glyphs/Open Sans/256-511.pbf", []string{"osm/glyphs/"}, []string{"/osm/glyphs/*"}},
		{"ObjectCreated:Put", "osm/1/0/0.pbf", []string{"osm/1/0/0.pbf"}, []string{"/osm/1/0/0.pbf"}},
	} {
		t.Run(tt.event+" "+tt.key, func(t *testing.T) {
			t.Parallel()
			processOne(t, tt.event, tt.key, tt.prefixes, tt.paths)
		})
	}
}

// TestPrefixRequestFontStacks: an admin purge of a font reaches the stacks
// composed with it.
func TestPrefixRequestFontStacks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		prefix string
		want   []string
	}{
		{"fonts/Noto Sans Regular/", []string{"fonts/"}},
		{"fonts/Noto", []string{"fonts/"}},
		{"fonts/", []string{"fonts.json", "fonts/"}}, // a top-level directory: its TileJSON too
		{"osm/1/", []string{"osm/1/"}},
	} {
		t.Run(tt.prefix, func(t *testing.T) {
			if got := PrefixRequest(tt.prefix, "admin", "id").Prefixes; !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
