package layout

import (
	"strings"
	"testing"
)

func TestAlpha(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		photometric, bands int
		extra              uint64
		band               int
		premultiplied      bool
	}{
		{"gray", photoMinIsBlack, 1, 0, -1, false},
		{"gray alpha unspecified", photoMinIsBlack, 2, 0, 1, false},
		{"rgb", photoRGB, 3, 0, -1, false},
		{"rgba straight", photoRGB, 4, 2, 3, false},
		{"rgba premultiplied", photoRGB, 4, 1, 3, true},
		{"rgba unspecified", photoRGB, 4, 0, 3, false},
		{"rgb and two unspecified", photoRGB, 5, 0, -1, false},
		{"rgb and two, alpha first", photoRGB, 5, 2, 3, false},
		{"cmyk", photoSeparated, 4, 0, -1, false},
		{"ycbcr alpha", photoYCbCr, 4, 2, 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			band, pre := Alpha(tc.photometric, tc.bands, tc.extra)
			if band != tc.band || pre != tc.premultiplied {
				t.Errorf("got %d %v, want %d %v", band, pre, tc.band, tc.premultiplied)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	gray := Layout{TileWidth: 16, TileHeight: 16, Bands: 1, Bits: 8, Format: formatUint, Photometric: photoMinIsBlack,
		Compression: compDeflate, Predictor: predNone, Planar: 1, Alpha: -1}
	with := func(f func(*Layout)) Layout { l := gray; f(&l); return l }
	tests := []struct {
		name string
		l    Layout
		mask bool
		want string // "" when supported, else a part of the reason
	}{
		{"gray", gray, false, ""},
		{"rgb jpeg", with(func(l *Layout) { l.Bands, l.Photometric, l.Compression = 3, photoRGB, compJPEG }), false, ""},
		{"ycbcr jpeg", with(func(l *Layout) { l.Bands, l.Photometric, l.Compression = 3, photoYCbCr, compJPEG }), false, ""},
		{"min-is-white jpeg", with(func(l *Layout) { l.Photometric, l.Compression = photoMinIsWhite, compJPEG }), false, ""},
		{"ycbcr deflate", with(func(l *Layout) { l.Bands, l.Photometric = 3, photoYCbCr }), false, "photometric 6"},
		{"rgba webp", with(func(l *Layout) { l.Bands, l.Photometric, l.Compression, l.Alpha = 4, photoRGB, compWebP, 3 }), false, ""},
		{"rgba jpeg", with(func(l *Layout) { l.Bands, l.Photometric, l.Compression, l.Alpha = 4, photoRGB, compJPEG, 3 }), false, "4 bands"},
		{"int16", with(func(l *Layout) { l.Bits, l.Format = 16, formatInt }), false, ""},
		{"int16 jpeg", with(func(l *Layout) { l.Bits, l.Format, l.Compression = 16, formatInt, compJPEG }), false, "16-bit"},
		{"float32 predictor 3", with(func(l *Layout) { l.Bits, l.Format, l.Predictor = 32, formatFloat, predFloat }), false, ""},
		{"float64", with(func(l *Layout) { l.Bits, l.Format = 64, formatFloat }), false, "64-bit"},
		{"int8", with(func(l *Layout) { l.Format = formatInt }), false, "format 2"},
		{"predictor 3 on integers", with(func(l *Layout) { l.Predictor = predFloat }), false, "predictor 3"},
		{"predictor 2 ignored without LZW or Deflate", with(func(l *Layout) { l.Predictor, l.Compression, l.Bits = 2, 1, 8 }), false, ""},
		{"planar rgb", with(func(l *Layout) { l.Bands, l.Photometric, l.Planar = 3, photoRGB, 2 }), false, "PlanarConfiguration 2"},
		{"planar gray", with(func(l *Layout) { l.Planar = 2 }), false, ""},
		{"1-bit mask", with(func(l *Layout) { l.Bits, l.Photometric = 1, 4 }), true, ""},
		{"jpeg mask", with(func(l *Layout) { l.Compression = compJPEG }), true, "mask"},
		{"1-bit image", with(func(l *Layout) { l.Bits = 1 }), false, "1-bit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.l.Check(tc.mask)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTileBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		l    Layout
		want uint64
	}{
		{Layout{TileWidth: 256, TileHeight: 256, Bands: 3, Bits: 8, Planar: 1}, 196608},
		{Layout{TileWidth: 10, TileHeight: 3, Bands: 1, Bits: 1, Planar: 1}, 6},
		{Layout{TileWidth: 16, TileHeight: 16, Bands: 3, Bits: 16, Planar: 2}, 512},
	} {
		if got := tc.l.TileBytes(); got != tc.want {
			t.Errorf("%+v: got %d, want %d", tc.l, got, tc.want)
		}
	}
}
