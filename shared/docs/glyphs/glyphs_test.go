package glyphs_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// handBuilt is a range as fontnik writes it, byte by byte: one stack
// "Noto Sans Regular", range "0-255", a space without bitmap and an "A".
var handBuilt = []byte{
	0x0a, 0x3b, // stacks (1, bytes), 59 bytes
	0x0a, 0x11, 'N', 'o', 't', 'o', ' ', 'S', 'a', 'n', 's', ' ', 'R', 'e', 'g', 'u', 'l', 'a', 'r', // name
	0x12, 0x05, '0', '-', '2', '5', '5', // range
	0x1a, 0x0c, // glyph, 12 bytes
	0x08, 0x20, // id 32
	0x18, 0x00, // width 0
	0x20, 0x00, // height 0
	0x28, 0x00, // left 0
	0x30, 0x33, // top -26 (zigzag 51)
	0x38, 0x06, // advance 6
	0x1a, 0x11, // glyph, 17 bytes
	0x08, 0x41, // id 65
	0x12, 0x03, 0x01, 0x02, 0x03, // bitmap
	0x18, 0x01, // width 1
	0x20, 0x01, // height 1
	0x28, 0x01, // left -1 (zigzag 1)
	0x30, 0x13, // top -10 (zigzag 19)
	0x38, 0x07, // advance 7
}

var handBuiltStacks = []glyphs.Stack{{
	Name:  "Noto Sans Regular",
	Range: "0-255",
	Glyphs: []glyphs.Glyph{
		{ID: 32, Top: -26, Advance: 6},
		{ID: 65, Bitmap: []byte{1, 2, 3}, Width: 1, Height: 1, Left: -1, Top: -10, Advance: 7},
	},
}}

func TestDecodeHandBuilt(t *testing.T) {
	t.Parallel()
	got, err := glyphs.Decode(handBuilt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, handBuiltStacks) {
		t.Errorf("got %+v, want %+v", got, handBuiltStacks)
	}
	if enc := glyphs.Encode(got); !bytes.Equal(enc, handBuilt) {
		t.Errorf("round trip: got % x, want % x", enc, handBuilt)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		stacks []glyphs.Stack
	}{
		{"none", nil},
		{"empty stack", []glyphs.Stack{{Name: "", Range: "0-255"}}},
		{"empty bitmap kept apart from none", []glyphs.Stack{{Name: "A", Range: "0-255", Glyphs: []glyphs.Glyph{{ID: 1, Bitmap: []byte{}}}}}},
		{"extremes", []glyphs.Stack{{Name: "A", Range: "65280-65535", Glyphs: []glyphs.Glyph{
			{ID: 65535, Width: 1<<32 - 1, Height: 1 << 31, Left: -1 << 31, Top: 1<<31 - 1, Advance: 1 << 20},
		}}}},
		{"two stacks", append(handBuiltStacks, glyphs.Stack{Name: "B", Range: "256-511", Glyphs: []glyphs.Glyph{{ID: 300, Advance: 9}}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			enc := glyphs.Encode(c.stacks)
			got, err := glyphs.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.stacks) {
				t.Errorf("got %+v, want %+v", got, c.stacks)
			}
			if again := glyphs.Encode(got); !bytes.Equal(again, enc) {
				t.Errorf("got % x, want % x", again, enc)
			}
		})
	}
}

func TestDecodeSkipsUnknownFields(t *testing.T) {
	t.Parallel()
	in := []byte{
		0x0a, 0x1a, // stacks, 26 bytes
		0x0a, 0x01, 'A', // name
		0x21, 1, 2, 3, 4, 5, 6, 7, 8, // field 4, fixed64
		0x1a, 0x0c, // glyph, 12 bytes
		0x08, 0x41, // id 65
		0x78, 0x05, // field 15, varint
		0x45, 1, 2, 3, 4, // field 8, fixed32
		0x82, 0x01, 0x00, // field 16 (an extension), empty bytes
	}
	got, err := glyphs.Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []glyphs.Stack{{Name: "A", Glyphs: []glyphs.Glyph{{ID: 65}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"truncated", handBuilt[:len(handBuilt)-1]},
		{"length past the end", []byte{0x0a, 0x05, 0x0a}},
		{"bad key varint", []byte{0x80}},
		{"bad value varint", []byte{0x08, 0xff}},
		{"field number 0", []byte{0x00, 0x00}},
		{"group", []byte{0x0b, 0x0c}},
		{"stacks a varint", []byte{0x08, 0x01}},
		{"name a varint", []byte{0x0a, 0x02, 0x08, 0x01}},
		{"glyph without id", []byte{0x0a, 0x04, 0x1a, 0x02, 0x38, 0x06}},
		{"id a bytes field", []byte{0x0a, 0x05, 0x1a, 0x03, 0x0a, 0x01, 0x00}},
		{"bitmap a varint", []byte{0x0a, 0x06, 0x1a, 0x04, 0x08, 0x01, 0x10, 0x01}},
		{"id past 32 bits", []byte{0x0a, 0x08, 0x1a, 0x06, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10}},
		{"fixed32 cut short", []byte{0x0a, 0x04, 0x1a, 0x02, 0x0d, 0x01}},
		{"too large", make([]byte, glyphs.MaxPBFBytes+1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := glyphs.Decode(c.in)
			if !errors.Is(err, glyphs.ErrPBF) {
				t.Errorf("got %+v, %v, want %v", got, err, glyphs.ErrPBF)
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		key   string
		want  glyphs.Request
		canon string
	}{
		{"fonts/Noto Sans Regular/0-255.pbf", glyphs.Request{Dir: "fonts", Fonts: []string{"Noto Sans Regular"}, Start: 0, End: 255}, ""},
		{"osm/glyphs/A,B/256-511.pbf", glyphs.Request{Dir: "osm/glyphs", Fonts: []string{"A", "B"}, Start: 256, End: 511}, ""},
		{"fonts/A, B ,A/65280-65535.pbf", glyphs.Request{Dir: "fonts", Fonts: []string{"A", "B"}, Start: 65280, End: 65535}, "fonts/A,B/65280-65535.pbf"},
		{"fonts/1,2,3,4,5,6,7,8/0-255.pbf", glyphs.Request{Dir: "fonts", Fonts: strings.Split("1,2,3,4,5,6,7,8", ","), End: 255}, ""},
	} {
		t.Run(c.key, func(t *testing.T) {
			t.Parallel()
			got, err := glyphs.ParseKey(c.key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			canon := c.canon
			if canon == "" {
				canon = c.key
			}
			if got.Key() != canon {
				t.Errorf("Key: got %q, want %q", got.Key(), canon)
			}
		})
	}
}

func TestParseKeyRefuses(t *testing.T) {
	t.Parallel()
	for _, key := range []string{
		"A/0-255.pbf",                         // no directory
		"osm/A/0-255.pbf",                     // not fonts or glyphs
		"fonts/0-255.pbf",                     // no stack
		"fonts/A/1-256.pbf",                   // not aligned
		"fonts/A/0-511.pbf",                   // two ranges
		"fonts/A/255-0.pbf",                   // backwards
		"fonts/A/65536-65791.pbf",             // past the BMP
		"fonts/A/00-255.pbf",                  // leading zero
		"fonts/A/+0-255.pbf",                  // sign
		"fonts/A/0-255.mvt",                   // not pbf
		"fonts/A/0_255.pbf",                   // no dash
		"fonts/A,,B/0-255.pbf",                // empty name
		"fonts/A,../0-255.pbf",                // dot name
		"fonts/1,2,3,4,5,6,7,8,9/0-255.pbf",   // too many fonts
		"fonts/A/0-255.pbf/x",                 // a deeper key
		"osm/fonts/3/2/1.pbf",                 // a vector tile
		"fonts/3/2.pbf",                       // a vector tile of a tileset "fonts"
		"glyphs/A/-256--1.pbf",                // negative
		"fonts/A/99999999999999999999-0.pbf",  // overflow
		"fonts/A/18446744073709551360-0.pbf",  // near overflow
		"fonts/A/9223372036854775552-0.pbf",   // end would overflow
		"fonts/A/9223372036854775807-255.pbf", // max int
	} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			got, err := glyphs.ParseKey(key)
			if !errors.Is(err, glyphs.ErrBadKey) {
				t.Errorf("got %+v, %v, want %v", got, err, glyphs.ErrBadKey)
			}
		})
	}
}

// TestParseKeyFromPath: font names arrive URL-decoded once, as the server's
// key rules give them.
func TestParseKeyFromPath(t *testing.T) {
	t.Parallel()
	key, err := tile.KeyFromPath("/osm/fonts/Noto%20Sans%20Regular%2CArial%20Unicode%20MS%20Regular/0-255.pbf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := glyphs.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Noto Sans Regular", "Arial Unicode MS Regular"}
	if !reflect.DeepEqual(got.Fonts, want) {
		t.Errorf("got %q, want %q", got.Fonts, want)
	}
	if k := got.FontKey(1); k != "osm/fonts/Arial Unicode MS Regular/0-255.pbf" {
		t.Errorf("got %q, want %q", k, "osm/fonts/Arial Unicode MS Regular/0-255.pbf")
	}
}

func TestCompose(t *testing.T) {
	t.Parallel()
	a := glyphs.Encode(handBuiltStacks) // 32 and 65
	b := glyphs.Encode([]glyphs.Stack{{Name: "Arial", Range: "0-255", Glyphs: []glyphs.Glyph{
		{ID: 66, Bitmap: []byte{9}, Advance: 8},
		{ID: 65, Bitmap: []byte{7, 7}, Advance: 99}, // A has it first
		{ID: 300, Advance: 5},                       // outside the range
	}}})
	ga, gb := handBuiltStacks[0].Glyphs, []glyphs.Glyph{{ID: 65, Bitmap: []byte{7, 7}, Advance: 99}, {ID: 66, Bitmap: []byte{9}, Advance: 8}}
	req, err := glyphs.ParseKey("fonts/Noto Sans Regular,Arial/0-255.pbf")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pbfs [][]byte
		want []glyphs.Glyph
	}{
		{"first font wins", [][]byte{a, b}, []glyphs.Glyph{ga[0], ga[1], {ID: 66, Bitmap: []byte{9}, Advance: 8}}},
		{"first font missing", [][]byte{nil, b}, gb},
		{"second font missing", [][]byte{a, nil}, ga},
		{"empty PBF", [][]byte{{}, b}, gb},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := glyphs.Compose(req, c.pbfs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := glyphs.Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			want := []glyphs.Stack{{Name: "Noto Sans Regular,Arial", Range: "0-255", Glyphs: c.want}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestComposeRefuses(t *testing.T) {
	t.Parallel()
	req, err := glyphs.ParseKey("fonts/A,B/0-255.pbf")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pbfs [][]byte
		want error
	}{
		{"no font found", [][]byte{nil, nil}, glyphs.ErrNoFonts},
		{"a bad PBF", [][]byte{handBuilt, handBuilt[:10]}, glyphs.ErrPBF},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := glyphs.Compose(req, c.pbfs)
			if !errors.Is(err, c.want) {
				t.Errorf("got % x, %v, want %v", got, err, c.want)
			}
		})
	}
	if got, err := glyphs.Compose(req, [][]byte{handBuilt}); err == nil {
		t.Errorf("one PBF for two fonts: got % x, nil, want an error", got)
	}
}

// FuzzDecode: any input is refused with ErrPBF, or decodes to stacks whose
// encoding decodes to the same stacks and encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(handBuilt)
	seeds, err := filepath.Glob("testdata/*.pbf")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		stacks, err := glyphs.Decode(in)
		if err != nil {
			if !errors.Is(err, glyphs.ErrPBF) {
				t.Fatalf("error %v is not ErrPBF", err)
			}
			return
		}
		enc := glyphs.Encode(stacks)
		again, err := glyphs.Decode(enc)
		if err != nil {
			t.Fatalf("own encoding refused: %v", err)
		}
		if !reflect.DeepEqual(again, stacks) {
			t.Fatalf("got %+v, want %+v", again, stacks)
		}
		if b := glyphs.Encode(again); !bytes.Equal(b, enc) {
			t.Fatalf("got % x, want % x", b, enc)
		}
		if len(stacks) > 0 {
			req := glyphs.Request{Dir: "fonts", Fonts: []string{"A", "B"}, Start: 0, End: 255}
			out, err := glyphs.Compose(req, [][]byte{in, in})
			if err != nil {
				t.Fatalf("compose: %v", err)
			}
			if _, err := glyphs.Decode(out); err != nil {
				t.Fatalf("composed PBF refused: %v", err)
			}
		}
	})
}

// TestComposeFiles composes two stored fonts: Bold has 32-36, Regular 32-40.
func TestComposeFiles(t *testing.T) {
	t.Parallel()
	req, bold, regular := notoStack(t)
	out, err := glyphs.Compose(req, [][]byte{bold, regular})
	if err != nil {
		t.Fatal(err)
	}
	got, err := glyphs.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := glyphs.Decode(bold)
	r, _ := glyphs.Decode(regular)
	want := append(slices.Clone(b[0].Glyphs), r[0].Glyphs[5:]...)
	if len(got) != 1 || got[0].Name != "Noto Sans Bold,Noto Sans Regular" || !reflect.DeepEqual(got[0].Glyphs, want) {
		t.Errorf("got %+v, want one stack of %+v", got, want)
	}
	for i, g := range got[0].Glyphs {
		if g.ID != uint32(32+i) {
			t.Errorf("glyph %d: got id %d, want %d", i, g.ID, 32+i)
		}
	}
}

// FuzzParseKey: a key is refused with ErrBadKey, or names a 256-aligned
// range of at most MaxFonts fonts whose canonical key parses to the same
// request.
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"fonts/Noto Sans Regular/0-255.pbf", "osm/glyphs/A, B,A/65280-65535.pbf", "fonts/A/1-256.pbf", "fonts/3/2/1.pbf"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		r, err := glyphs.ParseKey(key)
		if err != nil {
			if !errors.Is(err, glyphs.ErrBadKey) {
				t.Fatalf("error %v is not ErrBadKey", err)
			}
			return
		}
		if r.Start%glyphs.RangeSize != 0 || r.End != r.Start+glyphs.RangeSize-1 || r.End > 65535 || len(r.Fonts) == 0 || len(r.Fonts) > glyphs.MaxFonts {
			t.Fatalf("accepted %+v", r)
		}
		again, err := glyphs.ParseKey(r.Key())
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("canonical key %q: got %+v, %v, want %+v", r.Key(), again, err, r)
		}
	})
}

// notoStack is the request for a stack of the two stored fonts, Noto Sans
// Bold over Noto Sans Regular, and the stored range 0-255 of each.
func notoStack(tb testing.TB) (req glyphs.Request, bold, regular []byte) {
	tb.Helper()
	var err error
	if bold, err = os.ReadFile("testdata/noto-sans-bold-0-255.pbf"); err != nil {
		tb.Fatal(err)
	}
	if regular, err = os.ReadFile("testdata/noto-sans-regular-0-255.pbf"); err != nil {
		tb.Fatal(err)
	}
	if req, err = glyphs.ParseKey("fonts/Noto Sans Bold,Noto Sans Regular/0-255.pbf"); err != nil {
		tb.Fatal(err)
	}
	return req, bold, regular
}

func BenchmarkCompose(b *testing.B) {
	req, bold, regular := notoStack(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(bold) + len(regular)))
	for b.Loop() {
		if _, err := glyphs.Compose(req, [][]byte{bold, regular}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFontDir(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		prefix, want string
		ok           bool
	}{
		{"fonts/Noto Sans Regular/0-255.pbf", "fonts/", true},
		{"osm/glyphs/Open Sans/256-511.pbf", "osm/glyphs/", true},
		{"fonts/Noto Sans Regular/", "fonts/", true},
		{"fonts/Noto Sans Regular/0-", "fonts/", true},
		{"fonts/Noto", "fonts/", true},
		{"fonts/A,B/0-255.pbf", "fonts/", true},
		{"fonts/", "", false},
		{"fonts", "", false},
		{"osm/1/0/0.pbf", "", false},
		{"fonts/3/4/5.pbf", "", false}, // a tileset named fonts
		{"osm/style.json", "", false},
		{"", "", false},
	} {
		t.Run(c.prefix, func(t *testing.T) {
			got, ok := glyphs.FontDir(c.prefix)
			if got != c.want || ok != c.ok {
				t.Errorf("got %v %v, want %v %v", got, ok, c.want, c.ok)
			}
		})
	}
}
