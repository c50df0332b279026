package origin

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestContentTypeFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ key, stored, want string }{
		{"osm/3/2/1.pbf", "", tile.ContentTypeMVT},
		{"osm/3/2/1.pbf", "binary/octet-stream", tile.ContentTypeMVT},
		{"osm/3/2/1.mvt", "application/octet-stream", tile.ContentTypeMVT},
		{"fonts/3/2/1.pbf", "", tile.ContentTypeMVT}, // a tileset named fonts
		{"osm/fonts/Noto Sans Regular/0-255.pbf", "", tile.ContentTypeGlyph},
		{"osm/fonts/Noto Sans Regular/0-255.pbf", tile.ContentTypeMVT, tile.ContentTypeGlyph}, // as uploaded by extension
		{"fonts/A,B/256-511.pbf", "application/octet-stream", tile.ContentTypeGlyph},
		{"glyphs/A/65280-65535.pbf", "binary/octet-stream", tile.ContentTypeGlyph},
		{"fonts/A/0-255.pbf", "application/vnd.custom", "application/vnd.custom"},
		{"fonts/A/1-256.pbf", "", tile.ContentTypeMVT}, // not a glyph range
		{"osm/sprite.json", "", "application/json"},
		{"osm/sprite@2x.json", "binary/octet-stream", "application/json"},
		{"osm/sprite.png", "", "image/png"},
		{"osm/sprite@2x.png", "application/octet-stream", "image/png"},
		{"osm/style.json", "", "application/json"},
		{"osm/style.json", "text/plain", "text/plain"},
		{"osm/3/2/1.webp", "", "image/webp"},
		{"osm/3/2/1.avif", "", "image/avif"},
		{"osm/3/2/1.jpeg", "", "image/jpeg"},
		{"osm/3/2/1.png", "image/x-stored", "image/x-stored"},
		{"osm/readme", "binary/octet-stream", "binary/octet-stream"},
		{"osm/readme", "", "application/octet-stream"},
	} {
		t.Run(c.key+" "+c.stored, func(t *testing.T) {
			t.Parallel()
			if got := ContentTypeFor(c.key, c.stored); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
