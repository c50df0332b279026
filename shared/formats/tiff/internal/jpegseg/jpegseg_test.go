package jpegseg

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

// split encodes img and splits the stream as a TIFF writer does: the
// tables (DQT, DHT) into an abbreviated stream, the rest into the tile.
func split(t *testing.T, img image.Image) (tables, tile []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	tables = []byte{0xFF, soi}
	tile = []byte{0xFF, soi}
	for i := 2; i < len(b); {
		m := b[i+1]
		if m == sos {
			tile = append(tile, b[i:]...)
			break
		}
		n := int(b[i+2])<<8 | int(b[i+3])
		seg := b[i : i+2+n]
		if m == 0xDB || m == 0xC4 {
			tables = append(tables, seg...)
		} else {
			tile = append(tile, seg...)
		}
		i += 2 + n
	}
	return append(tables, 0xFF, eoi), tile
}

func TestMergeDecodes(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 32, 16))
	for y := range 16 {
		for x := range 32 {
			img.Set(x, y, color.RGBA{uint8(8 * x), uint8(16 * y), 90, 255})
		}
	}
	tablesStream, tile := split(t, img)
	tables, err := Tables(tablesStream)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jpeg.Decode(bytes.NewReader(tile)); err == nil {
		t.Fatal("the tile decodes without its tables, want it not to")
	}
	for _, tc := range []struct {
		name  string
		color Color
		want  string
	}{{"JFIF", JFIF, "*image.YCbCr"}, {"Adobe RGB", AdobeRGB, "*image.RGBA"}} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := Merge(tables, tile, tc.color)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jpeg.Decode(bytes.NewReader(whole))
			if err != nil {
				t.Fatal(err)
			}
			if typ := typeName(got); typ != tc.want {
				t.Errorf("got %s, want %s", typ, tc.want)
			}
			if got.Bounds() != img.Bounds() {
				t.Errorf("got bounds %v, want %v", got.Bounds(), img.Bounds())
			}
		})
	}
}

func typeName(img image.Image) string {
	switch img.(type) {
	case *image.YCbCr:
		return "*image.YCbCr"
	case *image.RGBA:
		return "*image.RGBA"
	}
	return "other"
}

func TestTablesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"no SOI", []byte{0xFF, 0xDB, 0, 2, 0xFF, eoi}},
		{"no EOI", []byte{0xFF, soi, 0xFF, 0xDB, 0, 2}},
		{"length past the end", []byte{0xFF, soi, 0xFF, 0xDB, 0, 200, 0xFF, eoi}},
		{"length under 2", []byte{0xFF, soi, 0xFF, 0xDB, 0, 1, 0xFF, eoi}},
		{"scan in tables", []byte{0xFF, soi, 0xFF, sos, 0, 2, 0xFF, eoi}},
		{"garbage", []byte{0xFF, soi, 1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Tables(tc.b); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
	if _, err := Merge(nil, []byte{1, 2, 3, 4}, JFIF); err == nil {
		t.Error("got no error for a tile without SOI, want one")
	}
}

// FuzzTables checks that Tables never panics and that what it accepts
// merges into a stream starting with SOI.
func FuzzTables(f *testing.F) {
	f.Add([]byte{0xFF, soi, 0xFF, 0xDB, 0, 3, 1, 0xFF, eoi})
	f.Add([]byte{0xFF, soi, 0xFF, 0xFF, 0xFF, eoi})
	f.Fuzz(func(t *testing.T, b []byte) {
		tables, err := Tables(b)
		if err != nil {
			return
		}
		whole, err := Merge(tables, []byte{0xFF, soi, 0xFF, eoi}, AdobeRGB)
		if err != nil || whole[0] != 0xFF || whole[1] != soi {
			t.Fatalf("got %x, %v", whole, err)
		}
	})
}
