package tileset

import (
	"bytes"
	"image/jpeg"
	"io"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestPoolSizesAndComment(t *testing.T) {
	t.Parallel()
	p := NewPool(4, 256, 10_000, 60_000, 1)
	for i, b := range p {
		if len(b) < 8_000 || len(b) > 70_000 {
			t.Errorf("image %d: %d bytes, want about 10-60 KB", i, len(b))
		}
		c := WithComment(b, "iiif/x/0,0,512,512/512,/0/default.jpg")
		img, err := jpeg.Decode(bytes.NewReader(c))
		if err != nil {
			t.Fatalf("image %d with comment does not decode: %v", i, err)
		}
		if img.Bounds().Dx() != 256 {
			t.Errorf("image %d: width %d", i, img.Bounds().Dx())
		}
	}
	s := Build([]string{"a/1.jpg", "a/2.jpg"}, p)
	if bytes.Equal(s[0].Body, s[1].Body) {
		t.Errorf("two keys got the same bytes")
	}
}

func TestIIIFPyramid(t *testing.T) {
	t.Parallel()
	tiles := IIIFPyramid("img", 8192, 6144, 512)
	counts := map[int]int{}
	for _, tl := range tiles {
		counts[tl.Scale]++
		if err := tile.ValidateKey(tl.Key); err != nil {
			t.Errorf("%s: %v", tl.Key, err)
		}
		if !strings.HasSuffix(tl.Key, "/0/default.jpg") {
			t.Errorf("%s: not an IIIF tile key", tl.Key)
		}
	}
	want := map[int]int{1: 192, 2: 48, 4: 12, 8: 4, 16: 1}
	for s, n := range want {
		if counts[s] != n {
			t.Errorf("scale %d: got %d tiles, want %d", s, counts[s], n)
		}
	}
	if tiles[0].Key != "iiif/img/0,0,512,512/512,/0/default.jpg" {
		t.Errorf("first key %q", tiles[0].Key)
	}
}

func TestXYZ(t *testing.T) {
	t.Parallel()
	keys := XYZ("osm", "jpg", 0, 2)
	if len(keys) != 1+4+16 || keys[0] != "osm/0/0/0.jpg" || keys[20] != "osm/2/3/3.jpg" {
		t.Errorf("got %d keys: %v", len(keys), keys)
	}
}

func TestGenerated(t *testing.T) {
	t.Parallel()
	g := NewGenerated(10_000, 7)
	a, err := io.ReadAll(g)
	if err != nil || len(a) != 10_000 {
		t.Fatalf("read %d, %v", len(a), err)
	}
	if _, err := g.Seek(1234, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 100)
	if _, err := io.ReadFull(g, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, a[1234:1334]) {
		t.Errorf("seeked read differs")
	}
	if end, _ := g.Seek(0, io.SeekEnd); end != 10_000 {
		t.Errorf("end %d", end)
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, want string }{
		{"osm/1/0/0.jpg", "image/jpeg"},
		{"img/info.json", "application/json"},
		{"x/0/0/0.PNG", "image/png"}, // the product's table, any case
		{"notes.txt", "application/octet-stream"},
		{"noext", "application/octet-stream"},
	} {
		if got := ContentType(tc.key); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.key, got, tc.want)
		}
	}
}
