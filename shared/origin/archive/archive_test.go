package archive

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestParseZXY(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		z      uint8
		x, y   uint32
		ext    string
		wantOK bool
	}{
		{"0/0/0.png", 0, 0, 0, "png", true},
		{"3/7/5.pbf", 3, 7, 5, "pbf", true},
		{"3/8/5.pbf", 0, 0, 0, "", false},  // x past the grid of zoom 3
		{"3/07/5.pbf", 0, 0, 0, "", false}, // leading zero
		{"3/-1/5.pbf", 0, 0, 0, "", false},
		{"3/1/5", 0, 0, 0, "", false},       // no extension
		{"3/1/5.a.b", 0, 0, 0, "", false},   // two dots
		{"3/1/5/6.png", 0, 0, 0, "", false}, // a segment too many
		{"32/0/0.png", 0, 0, 0, "", false},  // past MaxZoom
	} {
		t.Run(tc.in, func(t *testing.T) {
			z, x, y, ext, ok := parseZXY(tc.in)
			if ok != tc.wantOK || z != tc.z || x != tc.x || y != tc.y || ext != tc.ext {
				t.Errorf("got %d/%d/%d.%s %v, want %d/%d/%d.%s %v", z, x, y, ext, ok, tc.z, tc.x, tc.y, tc.ext, tc.wantOK)
			}
		})
	}
}

// TestTileTagNamesItsArchive: a tile's ETag names the archive version it
// was read from, which is how a revalidation is answered without a read.
func TestTileTagNamesItsArchive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ etag, want string }{
		{`"abc"`, `"abc"`},
		{`abc`, `"abc"`},
		{`"abc-2"`, `"abc-2"`},
	} {
		tag := tile.DerivedTag(tc.etag, "/10+5") // as readTile derives a tile's
		if got := archiveOfTag(tag); got != tc.want {
			t.Errorf("archiveOfTag(%s): got %s, want %s", tag, got, tc.want)
		}
	}
	if got := archiveOfTag(`"plain"`); got != "" {
		t.Errorf(`archiveOfTag("plain"): got %s, want ""`, got)
	}
}
