package aerial

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"testing"
)

func TestSameSeedSamePixels(t *testing.T) {
	t.Parallel()
	a, b, c := New(1), New(1), New(2)
	differ := 0
	for y := 0; y < 2000; y += 37 {
		for x := 0; x < 2000; x += 41 {
			r1, g1, b1 := a.At(x, y)
			r2, g2, b2 := b.At(x, y)
			if r1 != r2 || g1 != g2 || b1 != b2 {
				t.Fatalf("(%d, %d): %v,%v,%v then %v,%v,%v from the same seed", x, y, r1, g1, b1, r2, g2, b2)
			}
			if r3, _, _ := c.At(x, y); r3 != r1 {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Error("seeds 1 and 2 draw the same scene")
	}
}

func TestWritePPM(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := New(1).WritePPM(&buf, 70, 3); err != nil {
		t.Fatal(err)
	}
	head := "P6\n70 3\n255\n"
	if got, want := buf.Len(), len(head)+70*3*3; got != want || !bytes.HasPrefix(buf.Bytes(), []byte(head)) {
		t.Fatalf("%d bytes starting %q, want %d starting %q", got, buf.Bytes()[:min(12, buf.Len())], want, head)
	}
	r, g, b := New(1).At(69, 2)
	if got := buf.Bytes()[buf.Len()-3:]; got[0] != r || got[1] != g || got[2] != b {
		t.Errorf("last pixel %v, want %v,%v,%v", got, r, g, b)
	}
	if err := New(1).WritePPM(&buf, 0, 3); err == nil {
		t.Error("an empty image: no error")
	}
}

// TestTilesLikeImagery: 256-pixel JPEG tiles of the scene at GDAL's default
// quality are the size of aerial imagery's, neither a smooth gradient's
// few KB nor noise's 50 KB and more.
func TestTilesLikeImagery(t *testing.T) {
	t.Parallel()
	s := New(1)
	for _, at := range []image.Point{{0, 0}, {1024, 512}, {3000, 2200}} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			img := image.NewRGBA(image.Rect(0, 0, 256, 256))
			for y := range 256 {
				for x := range 256 {
					r, g, b := s.At(at.X+x, at.Y+y)
					img.SetRGBA(x, y, color.RGBA{r, g, b, 255})
				}
			}
			var buf bytes.Buffer
			if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 75}); err != nil {
				t.Fatal(err)
			}
			if n := buf.Len(); n < 6<<10 || n > 40<<10 {
				t.Errorf("tile at %v: %d bytes, want 6–40 KiB", at, n)
			}
		})
	}
}
