package pixel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"sync"
	"sync/atomic"
	"testing"
)

// pattern is a w×h image whose every pixel differs from its neighbours.
func pattern(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			m.SetRGBA(x, y, color.RGBA{uint8(x * 7), uint8(y * 13), uint8(x*3 + y*5), 0xff})
		}
	}
	return m
}

// tilesOf serves src as tw×th tiles padded with magenta at the edges, and
// counts decodes: in total and at once.
type tilesOf struct {
	src          image.Image
	tw, th       int
	calls        atomic.Int64
	now, maxSeen atomic.Int64
	fail         image.Point // a tile that fails, when failing
	failing      bool
	gate         chan struct{} // when set, each decode waits on it
}

var errTile = errors.New("tile read failed")

func (s *tilesOf) tile(ctx context.Context, col, row int) (image.Image, error) {
	s.calls.Add(1)
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for m := s.maxSeen.Load(); n > m && !s.maxSeen.CompareAndSwap(m, n); m = s.maxSeen.Load() {
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.failing && image.Pt(col, row) == s.fail {
		return nil, errTile
	}
	t := image.NewRGBA(image.Rect(0, 0, s.tw, s.th))
	draw.Draw(t, t.Rect, &image.Uniform{color.RGBA{0xff, 0, 0xff, 0xff}}, image.Point{}, draw.Src)
	origin := image.Pt(col*s.tw, row*s.th)
	draw.Draw(t, t.Rect, s.src, origin, draw.Src)
	return t, nil
}

func testPipeline(t *testing.T, mod func(*Config)) *Pipeline {
	t.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	m, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAssembleCrop checks that an unscaled region, within one tile or
// across several, is exactly the source's pixels, the padding never shows.
func TestAssembleCrop(t *testing.T) {
	t.Parallel()
	src := pattern(300, 200)
	for _, r := range []image.Rectangle{
		image.Rect(0, 0, 300, 200),     // all six tiles, padded edges
		image.Rect(10, 20, 60, 90),     // inside one tile
		image.Rect(256, 128, 300, 200), // the corner tile's content
		image.Rect(100, 100, 200, 150), // across four tiles
	} {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			t.Parallel()
			tiles := &tilesOf{src: src, tw: 128, th: 128}
			job := Job{Source: r, TileSize: image.Pt(128, 128), Tile: tiles.tile, Width: r.Dx(), Height: r.Dy(), Format: PNG}
			out, err := testPipeline(t, nil).Run(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			got := decodePNG(t, out)
			if got.Bounds().Size() != r.Size() {
				t.Fatalf("got %v, want %v", got.Bounds().Size(), r.Size())
			}
			for y := range r.Dy() {
				for x := range r.Dx() {
					if g, w := color.RGBAModel.Convert(got.At(x, y)), src.At(r.Min.X+x, r.Min.Y+y); g != w {
						t.Fatalf("pixel %d,%d: got %v, want %v", x, y, g, w)
					}
				}
			}
			want := (r.Max.X+127)/128 - r.Min.X/128
			want *= (r.Max.Y+127)/128 - r.Min.Y/128
			if got := tiles.calls.Load(); got != int64(want) {
				t.Errorf("decodes: got %d, want %d (each tile once)", got, want)
			}
		})
	}
}

// TestDecodeBound runs two jobs at once and checks the decodes in flight
// never pass Config.Decoders, which their runs share.
func TestDecodeBound(t *testing.T) {
	t.Parallel()
	p := testPipeline(t, func(c *Config) { c.Decoders = 3 })
	gate := make(chan struct{})
	tiles := &tilesOf{src: pattern(512, 512), tw: 64, th: 64, gate: gate}
	job := Job{Source: image.Rect(0, 0, 512, 512), TileSize: image.Pt(64, 64), Tile: tiles.tile, Width: 64, Height: 64}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := p.Run(context.Background(), job); err != nil {
				t.Error(err)
			}
		})
	}
	for range 128 {
		gate <- struct{}{}
	}
	wg.Wait()
	if got := tiles.maxSeen.Load(); got > 3 || got < 1 {
		t.Errorf("decodes at once: got %d, want 1 to 3", got)
	}
}

func TestTileErrors(t *testing.T) {
	t.Parallel()
	src := pattern(300, 200)
	failing := &tilesOf{src: src, tw: 64, th: 64, failing: true, fail: image.Pt(2, 1)}
	job := Job{Source: src.Rect, TileSize: image.Pt(64, 64), Tile: failing.tile, Width: 150, Height: 100}
	if _, err := testPipeline(t, nil).Run(context.Background(), job); !errors.Is(err, errTile) {
		t.Errorf("failing tile: got %v, want %v", err, errTile)
	}
	small := func(ctx context.Context, col, row int) (image.Image, error) {
		return image.NewRGBA(image.Rect(0, 0, 10, 10)), nil
	}
	job.Tile = small
	if _, err := testPipeline(t, nil).Run(context.Background(), job); err == nil {
		t.Error("tile smaller than its part: got no error")
	}
	job.Tile = func(context.Context, int, int) (image.Image, error) { return nil, nil }
	if _, err := testPipeline(t, nil).Run(context.Background(), job); err == nil {
		t.Error("nil tile: got no error")
	}
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tiles := &tilesOf{src: pattern(300, 200), tw: 64, th: 64}
	job := Job{Source: image.Rect(0, 0, 300, 200), TileSize: image.Pt(64, 64), Tile: tiles.tile, Width: 30, Height: 20}
	if _, err := testPipeline(t, nil).Run(ctx, job); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want %v", err, context.Canceled)
	}
	if n := tiles.calls.Load(); n != 0 {
		t.Errorf("decodes after the deadline: got %d, want 0", n)
	}
}

// TestBounds checks MaxPixels refuses before any decode and MaxBytes
// refuses instead of truncating.
func TestBounds(t *testing.T) {
	t.Parallel()
	tiles := &tilesOf{src: pattern(300, 200), tw: 64, th: 64}
	job := Job{Source: image.Rect(0, 0, 300, 200), TileSize: image.Pt(64, 64), Tile: tiles.tile, Width: 300, Height: 200, Format: PNG}
	var tooLarge *TooLargeError
	_, err := testPipeline(t, func(c *Config) { c.MaxPixels = 50_000 }).Run(context.Background(), job)
	if !errors.As(err, &tooLarge) || tooLarge.What != "source" || tiles.calls.Load() != 0 {
		t.Errorf("source over MaxPixels: got %v after %d decodes, want a TooLargeError before any", err, tiles.calls.Load())
	}
	job.Source, job.Width, job.Height = image.Rect(0, 0, 10, 10), 1000, 1000
	if _, err = testPipeline(t, func(c *Config) { c.MaxPixels = 50_000 }).Run(context.Background(), job); !errors.As(err, &tooLarge) || tooLarge.What != "answer" {
		t.Errorf("answer over MaxPixels: got %v, want a TooLargeError", err)
	}
	job.Source, job.Width, job.Height = image.Rect(0, 0, 300, 200), 300, 200
	out, err := testPipeline(t, func(c *Config) { c.MaxBytes = 1000 }).Run(context.Background(), job)
	if !errors.As(err, &tooLarge) || tooLarge.What != "encoded answer" || out != nil {
		t.Errorf("answer over MaxBytes: got %d bytes, %v; want a TooLargeError and no bytes", len(out), err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	bad := Config{JPEGQuality: 0, PNGCompression: 7, MaxBytes: 0, MaxPixels: 0, Decoders: 0}
	err := bad.Validate()
	for _, field := range []string{"JPEGQuality", "PNGCompression", "MaxBytes", "MaxPixels", "Decoders", "InFlightBytes"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(field)) {
			t.Errorf("got %v, want it to name %s", err, field)
		}
	}
}

// TestRotate checks every quarter turn, mirrored or not, against turning
// the image one pixel at a time with At and Set.
func TestRotate(t *testing.T) {
	t.Parallel()
	src := pattern(5, 3)
	for _, mirror := range []bool{false, true} {
		for _, deg := range []int{0, 90, 180, 270} {
			for _, typ := range []string{"rgba", "gray", "nrgba", "ycbcr"} {
				t.Run(fmt.Sprintf("%s/%v/%d", typ, mirror, deg), func(t *testing.T) {
					t.Parallel()
					var in image.Image = src
					switch typ {
					case "gray":
						g := image.NewGray(src.Rect)
						draw.Draw(g, g.Rect, src, image.Point{}, draw.Src)
						in = g
					case "nrgba":
						n := image.NewNRGBA(src.Rect)
						draw.Draw(n, n.Rect, src, image.Point{}, draw.Src)
						in = n
					case "ycbcr":
						var b bytes.Buffer
						if err := jpeg.Encode(&b, src, nil); err != nil {
							t.Fatal(err)
						}
						m, err := jpeg.Decode(&b)
						if err != nil {
							t.Fatal(err)
						}
						in = m
					}
					f := frame{img: in}
					if err := rotate(context.Background(), nil, &Job{Rotate: deg, Mirror: mirror}, &f); err != nil {
						t.Fatal(err)
					}
					want := turnSlowly(in, deg, mirror)
					if f.img.Bounds().Size() != want.Bounds().Size() {
						t.Fatalf("size: got %v, want %v", f.img.Bounds().Size(), want.Bounds().Size())
					}
					b := want.Bounds()
					for y := b.Min.Y; y < b.Max.Y; y++ {
						for x := b.Min.X; x < b.Max.X; x++ {
							// A YCbCr source is made RGBA first, at 8 bits,
							// where At converts at 16: allow one level.
							g, w := color.RGBAModel.Convert(f.img.At(x, y)).(color.RGBA), color.RGBAModel.Convert(want.At(x, y)).(color.RGBA)
							if d := maxDiff(g, w); d > 1 || (d > 0 && typ != "ycbcr") {
								t.Fatalf("pixel %d,%d: got %v, want %v", x, y, g, w)
							}
						}
					}
				})
			}
		}
	}
}

// turnSlowly mirrors then turns clockwise one quarter at a time.
func turnSlowly(src image.Image, deg int, mirror bool) image.Image {
	b := src.Bounds()
	cur := image.NewRGBA64(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			sx := x
			if mirror {
				sx = b.Dx() - 1 - x
			}
			cur.Set(x, y, src.At(b.Min.X+sx, b.Min.Y+y))
		}
	}
	for ; deg > 0; deg -= 90 {
		w, h := cur.Rect.Dx(), cur.Rect.Dy()
		next := image.NewRGBA64(image.Rect(0, 0, h, w))
		for y := range h {
			for x := range w {
				next.Set(h-1-y, x, cur.At(x, y))
			}
		}
		cur = next
	}
	return cur
}

// TestLuminance checks gray against what libvips' colourspace b-w gives
// (vips 8.14, measured with vips getpoint).
func TestLuminance(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ r, g, b, want uint8 }{
		{255, 0, 0, 124},
		{0, 255, 0, 218},
		{0, 0, 255, 89},
		{128, 64, 32, 80},
		{10, 200, 100, 173},
		{128, 128, 128, 128},
		{0, 0, 0, 0},
		{255, 255, 255, 255},
	} {
		if got := luminance(c.r, c.g, c.b); got != c.want {
			t.Errorf("luminance(%d,%d,%d): got %d, want %d", c.r, c.g, c.b, got, c.want)
		}
	}
}

func TestQuality(t *testing.T) {
	t.Parallel()
	src := image.NewRGBA(image.Rect(0, 0, 4, 1))
	src.SetRGBA(0, 0, color.RGBA{0xff, 0, 0, 0xff}) // red: gray 124
	src.SetRGBA(1, 0, color.RGBA{0, 0xff, 0, 0xff}) // green: gray 218
	src.SetRGBA(2, 0, color.RGBA{0, 0, 0, 0})       // transparent
	src.SetRGBA(3, 0, color.RGBA{0x40, 0, 0, 0x80}) // half-transparent red
	cases := []struct {
		q      Quality
		f      Format
		alpha  bool
		want   []color.Color
		typeOf string
	}{
		{Gray, JPEG, false, []color.Color{color.Gray{124}, color.Gray{218}, color.Gray{0}, color.Gray{26}}, "*image.Gray"},
		{Bitonal, JPEG, false, []color.Color{color.Gray{0}, color.Gray{255}, color.Gray{0}, color.Gray{0}}, "*image.Gray"},
		{Bitonal, PNG, false, []color.Color{color.Gray{0}, color.Gray{255}, color.Gray{0}, color.Gray{0}}, "*image.Paletted"},
		// JPEG flattens on white.
		{Color, JPEG, true, []color.Color{color.RGBA{255, 0, 0, 255}, color.RGBA{0, 255, 0, 255}, color.RGBA{255, 255, 255, 255}, color.RGBA{0xbf, 0x7f, 0x7f, 0xff}}, "*image.RGBA"},
		// PNG keeps alpha, in gray too.
		{Gray, PNG, true, []color.Color{color.NRGBA{124, 124, 124, 255}, color.NRGBA{218, 218, 218, 255}, color.NRGBA{0, 0, 0, 0}, color.NRGBA{58, 58, 58, 0x80}}, "*image.NRGBA"},
		{Bitonal, PNG, true, []color.Color{color.Gray{0}, color.Gray{255}, color.Gray{255}, color.Gray{255}}, "*image.Paletted"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d/%d/%v", c.q, c.f, c.alpha), func(t *testing.T) {
			t.Parallel()
			in := image.NewRGBA(src.Rect)
			copy(in.Pix, src.Pix)
			f := frame{img: in}
			if err := applyQuality(context.Background(), nil, &Job{Quality: c.q, Format: c.f, Alpha: c.alpha}, &f); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%T", f.img); got != c.typeOf {
				t.Errorf("type: got %s, want %s", got, c.typeOf)
			}
			for x, w := range c.want {
				if g, w := color.NRGBAModel.Convert(f.img.At(x, 0)), color.NRGBAModel.Convert(w); g != w {
					t.Errorf("pixel %d: got %v, want %v", x, g, w)
				}
			}
		})
	}
}

// TestEncodeFormats checks each quality encodes and decodes at its size,
// with what each format should carry (gray JPEG is one component, bitonal
// PNG is one bit).
func TestEncodeFormats(t *testing.T) {
	t.Parallel()
	tiles := &tilesOf{src: pattern(300, 200), tw: 256, th: 256}
	for _, f := range []Format{JPEG, PNG} {
		for _, q := range []Quality{Color, Gray, Bitonal} {
			t.Run(fmt.Sprintf("%d/%d", f, q), func(t *testing.T) {
				t.Parallel()
				job := Job{Source: image.Rect(0, 0, 300, 200), TileSize: image.Pt(256, 256), Tile: tiles.tile,
					Width: 150, Height: 100, Rotate: 90, Quality: q, Format: f}
				out, err := testPipeline(t, nil).Run(context.Background(), job)
				if err != nil {
					t.Fatal(err)
				}
				var cfg image.Config
				var format string
				if cfg, format, err = image.DecodeConfig(bytes.NewReader(out)); err != nil {
					t.Fatal(err)
				}
				if cfg.Width != 100 || cfg.Height != 150 || format != map[Format]string{JPEG: "jpeg", PNG: "png"}[f] {
					t.Errorf("got %s %dx%d, want %v 100x150", format, cfg.Width, cfg.Height, f)
				}
				wantModel := map[Quality]color.Model{Color: color.YCbCrModel, Gray: color.GrayModel, Bitonal: color.GrayModel}[q]
				if f == PNG {
					wantModel = map[Quality]color.Model{Color: color.RGBAModel, Gray: color.GrayModel, Bitonal: nil}[q]
				}
				if wantModel != nil && cfg.ColorModel != wantModel {
					t.Errorf("color model: got %v, want %v", cfg.ColorModel, wantModel)
				}
				if f == PNG && q == Bitonal {
					if p, ok := cfg.ColorModel.(color.Palette); !ok || len(p) != 2 {
						t.Errorf("bitonal PNG: got model %T, want a two-color palette", cfg.ColorModel)
					}
				}
			})
		}
	}
}

func maxDiff(a, b color.RGBA) int {
	d := 0
	for _, p := range [][2]uint8{{a.R, b.R}, {a.G, b.G}, {a.B, b.B}, {a.A, b.A}} {
		d = max(d, int(p[0])-int(p[1]), int(p[1])-int(p[0]))
	}
	return d
}

// opaqueImage hides its image's SubImage method.
type opaqueImage struct{ image.Image }

// TestAreaPastEdge checks an area that ends past the level's last pixel
// (a level rounded down) is sampled with that pixel repeated, not with
// black or the stored tile's padding, and that its one tile is decoded
// once even when its type cannot be cut.
func TestAreaPastEdge(t *testing.T) {
	t.Parallel()
	src := image.NewRGBA(image.Rect(0, 0, 10, 10))
	draw.Draw(src, src.Rect, &image.Uniform{color.RGBA{100, 150, 200, 255}}, image.Point{}, draw.Src)
	tiles := &tilesOf{src: src, tw: 16, th: 16}
	job := Job{
		Source: src.Rect, Area: Rect{0, 0, 10.5, 10.5}, TileSize: image.Pt(16, 16),
		Tile: func(ctx context.Context, c, r int) (image.Image, error) {
			m, err := tiles.tile(ctx, c, r)
			return opaqueImage{m}, err
		},
		Width: 7, Height: 7, Format: PNG,
	}
	out, err := testPipeline(t, nil).Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	got := decodePNG(t, out)
	for y := range 7 {
		for x := range 7 {
			if c := color.RGBAModel.Convert(got.At(x, y)); c != (color.RGBA{100, 150, 200, 255}) {
				t.Fatalf("pixel %d,%d: got %v, want the source's color", x, y, c)
			}
		}
	}
	if n := tiles.calls.Load(); n != 1 {
		t.Errorf("decodes: got %d, want 1", n)
	}
	job.Area = Rect{0, 0, 11.5, 10}
	if _, err := testPipeline(t, nil).Run(context.Background(), job); err == nil {
		t.Error("area a pixel and more past the source: got no error")
	}
}
