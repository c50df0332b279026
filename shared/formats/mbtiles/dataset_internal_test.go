package mbtiles

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats"
)

func TestAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format, ext string
		want        bool
	}{
		{"pbf", "pbf", true}, {"pbf", "MVT", true}, {"mvt", "pbf", true},
		{"jpg", "jpeg", true}, {"png", "png", true}, {"png", "jpg", false},
		{"", "png", false}, {"webp", "png", false},
	} {
		if got := (&dataset{format: tc.format}).Accepts(formats.TileRequest{Ext: tc.ext}); got != tc.want {
			t.Errorf("format %q, Accepts(%q): got %v, want %v", tc.format, tc.ext, got, tc.want)
		}
	}
}
