package demotiles_test

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
)

func TestRenderIsAPNGTileInItsZoomColour(t *testing.T) {
	t.Parallel()
	for _, s := range []demotiles.Spec{{Z: 0}, {Z: 4, X: 15, Y: 15}, {Z: 9, X: 511, Y: 300}, {Z: 2, X: 1, Y: 1, Caption: "updated"}} {
		b, err := demotiles.Render(s)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if got := img.Bounds().Size(); got.X != demotiles.Size || got.Y != demotiles.Size {
			t.Fatalf("%+v: got %v, want 256×256", s, got)
		}
		want := demotiles.ZoomColor(s.Z)
		if got := color.RGBAModel.Convert(img.At(10, 10)).(color.RGBA); got != want {
			t.Errorf("%+v: background got %v, want %v", s, got, want)
		}
		// Ink is present in the middle band, where z/x/y is written.
		ink := 0
		for x := 0; x < demotiles.Size; x++ {
			for y := 110; y < 146; y++ {
				if c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); c.R < 0x40 && c.G < 0x40 {
					ink++
				}
			}
		}
		if ink < 200 {
			t.Errorf("%+v: %d ink pixels in the label band, want a visible label", s, ink)
		}
	}
}

func TestRenderDiffersPerTile(t *testing.T) {
	t.Parallel()
	a, _ := demotiles.Render(demotiles.Spec{Z: 3, X: 1, Y: 2})
	b, _ := demotiles.Render(demotiles.Spec{Z: 3, X: 2, Y: 1})
	c, _ := demotiles.Render(demotiles.Spec{Z: 3, X: 1, Y: 2, Caption: "v2"})
	if bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatal("different tiles rendered the same bytes")
	}
}

func TestSeedWritesThePyramid(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]int{}
	n, err := demotiles.Seed(context.Background(), 2, 4, func(_ context.Context, key string, b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		got[key] = len(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 21 || len(got) != 21 || demotiles.Count(2) != 21 || demotiles.Count(4) != 341 {
		t.Fatalf("got %d stored, %d keys, want 21", n, len(got))
	}
	for _, k := range []string{"demo/0/0/0.png", "demo/2/3/3.png", "demo/1/0/1.png"} {
		if got[k] == 0 {
			t.Errorf("missing %s", k)
		}
	}
}
