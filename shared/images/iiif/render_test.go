package iiif_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/pixel"
)

// levelTiles serves levels of distinct pixels as 256×256 tiles padded with
// magenta, so padding that leaks into an answer shows.
type levelTiles struct {
	levels []*image.RGBA
	err    error
}

func newLevelTiles(img iiif.Image) *levelTiles {
	s := &levelTiles{}
	for l, lv := range img.Levels {
		m := image.NewRGBA(image.Rect(0, 0, lv.Width, lv.Height))
		for y := range lv.Height {
			for x := range lv.Width {
				m.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y), uint8(l * 60), 0xff})
			}
		}
		s.levels = append(s.levels, m)
	}
	return s
}

func (s *levelTiles) Tile(_ context.Context, level, x, y int) (image.Image, error) {
	if s.err != nil {
		return nil, s.err
	}
	t := image.NewRGBA(image.Rect(0, 0, 256, 256))
	draw.Draw(t, t.Rect, &image.Uniform{color.RGBA{0xff, 0, 0xff, 0xff}}, image.Point{}, draw.Src)
	draw.Draw(t, t.Rect, s.levels[level], image.Pt(x*256, y*256), draw.Src)
	return t, nil
}

func newRenderer(t *testing.T, mod func(*pixel.Config), maxDecoded int64) *iiif.Renderer {
	t.Helper()
	cfg := pixel.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	pipe, err := pixel.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := iiif.NewRenderer(pipe, maxDecoded)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func render(t *testing.T, r *iiif.Renderer, v iiif.Version, path string, img iiif.Image, src iiif.TileSource) ([]byte, iiif.Resolved, error) {
	t.Helper()
	res, err := resolvePath(v, path, img, bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := iiif.NewPlan(res, img)
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Render(context.Background(), res, plan, img, src)
	return out, res, err
}

// TestRenderPaddedTile checks that a matched edge tile, whose stored tile
// is padded, is answered with its content only.
func TestRenderPaddedTile(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256, false)
	img.JPEGTiles = false
	src := newLevelTiles(img)
	out, res, err := render(t, newRenderer(t, nil, 1<<24), iiif.V3, "512,512,489,189/244,94/0/default.png", img, src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if got.Bounds().Dx() != res.Width || got.Bounds().Dy() != res.Height {
		t.Fatalf("got %v, want %dx%d", got.Bounds(), res.Width, res.Height)
	}
	for y := range res.Height {
		for x := range res.Width {
			want := src.levels[1].RGBAAt(256+x, 256+y)
			if g := color.RGBAModel.Convert(got.At(x, y)); g != want {
				t.Fatalf("pixel %d,%d: got %v, want %v", x, y, g, want)
			}
		}
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256, false)
	src := newLevelTiles(img)
	_, _, err := render(t, newRenderer(t, nil, 100_000), iiif.V3, "full/max/0/default.jpg", img, src)
	if iiif.StatusOf(err) != 501 {
		t.Errorf("over the decode bound: got %v, want 501", err)
	}
	_, _, err = render(t, newRenderer(t, func(c *pixel.Config) { c.MaxBytes = 500 }, 1<<24), iiif.V3, "full/max/0/default.png", img, src)
	var e *iiif.Error
	if !errors.As(err, &e) || e.Status() != 501 || !strings.Contains(e.Message(), "500 bytes") {
		t.Errorf("over the byte bound: got %v, want 501 naming the bound", err)
	}
	_, _, err = render(t, newRenderer(t, func(c *pixel.Config) { c.MaxPixels = 10_000 }, 1<<24), iiif.V3, "full/max/0/default.png", img, src)
	if iiif.StatusOf(err) != 501 {
		t.Errorf("over the pixel bound: got %v, want 501", err)
	}
	broken := &levelTiles{err: errors.New("s3: slow down")}
	_, _, err = render(t, newRenderer(t, nil, 1<<24), iiif.V3, "full/max/0/default.jpg", img, broken)
	if !errors.Is(err, broken.err) || iiif.StatusOf(err) != 500 {
		t.Errorf("tile source error: got %v, want it wrapped, status 500", err)
	}
	if _, err := iiif.NewRenderer(nil, 1); err == nil {
		t.Error("NewRenderer(nil): got no error")
	}
}

// grayTiles serves a gray image's levels as *image.Gray tiles, as a reader
// decodes single-band JPEG tiles.
type grayTiles struct{ levelTiles }

func (s *grayTiles) Tile(ctx context.Context, level, x, y int) (image.Image, error) {
	t, err := s.levelTiles.Tile(ctx, level, x, y)
	if err != nil {
		return nil, err
	}
	g := image.NewGray(t.Bounds())
	draw.Draw(g, g.Rect, t, image.Point{}, draw.Src)
	return g, nil
}

// TestRenderGray checks a gray image's default and color qualities come
// out as one-band answers, scaled, turned or not.
func TestRenderGray(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256, false)
	img.Gray = true
	src := &grayTiles{*newLevelTiles(img)}
	for _, path := range []string{
		"full/400,/0/default.jpg",
		"0,0,256,256/256,256/0/color.jpg",
		"100,100,300,200/150,/90/default.png",
		"full/max/!0/gray.png",
	} {
		out, res, err := render(t, newRenderer(t, nil, 1<<24), iiif.V3, path, img, src)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		w, h := res.OutputSize()
		if cfg.ColorModel != color.GrayModel || cfg.Width != w || cfg.Height != h {
			t.Errorf("%s: got %dx%d %v, want %dx%d gray", path, cfg.Width, cfg.Height, cfg.ColorModel, w, h)
		}
	}
}
