// Package demotiles draws the demo tileset of the local stack: real 256×256
// PNG tiles, one colour per zoom level, a grid and a border, and the tile's
// z/x/y written across it in a small built-in bitmap font, so a viewer can see
// at a glance which tile (and which version of it) the function served.
//
// Seed writes the whole pyramid through any put function; the local stack
// passes one that stores into the embedded S3 endpoint.
package demotiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"sync"
)

// Size is the edge of a tile in pixels.
const Size = 256

// Tileset is the name of the demo tileset; its tiles are
// Tileset/{z}/{x}/{y}.png under TILES_PREFIX.
const Tileset = "demo"

// DefaultMaxZoom is the deepest zoom level Seed writes by default: zoom 0–4
// is 1+4+16+64+256 = 341 tiles.
const DefaultMaxZoom = 4

// zoomColors are the background colours of zoom levels 0, 1, 2, …; deeper
// levels cycle through them. Light enough for dark text, distinct enough to
// tell the levels apart (and for a screenshot test to find).
var zoomColors = []color.RGBA{
	{0xF4, 0xB4, 0xB4, 0xFF}, // z0 rose
	{0xF6, 0xCF, 0x8E, 0xFF}, // z1 apricot
	{0xB9, 0xE4, 0xA6, 0xFF}, // z2 green
	{0xA6, 0xCF, 0xF0, 0xFF}, // z3 blue
	{0xD3, 0xB8, 0xF0, 0xFF}, // z4 violet
	{0xA8, 0xE6, 0xDC, 0xFF}, // z5 teal
	{0xEE, 0xE3, 0x9A, 0xFF}, // z6 sand
}

// ZoomColor is the background colour of tiles at zoom z.
func ZoomColor(z int) color.RGBA {
	if z < 0 {
		z = -z
	}
	return zoomColors[z%len(zoomColors)]
}

// Key is the tile key of z/x/y in the demo tileset (without TILES_PREFIX).
func Key(z, x, y int) string {
	return Tileset + "/" + strconv.Itoa(z) + "/" + strconv.Itoa(x) + "/" + strconv.Itoa(y) + ".png"
}

// Spec describes one tile image.
type Spec struct {
	Z, X, Y int
	// Caption is a short line under the coordinates ("" draws "ZOOM z").
	Caption string
	// Fill is the background; the zero value takes ZoomColor(Z).
	Fill color.RGBA
}

// Palette indexes of a tile image.
const (
	ixFill = iota
	ixGrid
	ixBorder
	ixInk
)

// Render draws the tile s describes as a PNG.
func Render(s Spec) ([]byte, error) {
	fill := s.Fill
	if fill == (color.RGBA{}) {
		fill = ZoomColor(s.Z)
	}
	pal := color.Palette{
		ixFill:   fill,
		ixGrid:   shade(fill, 0.88),
		ixBorder: shade(fill, 0.45),
		ixInk:    color.RGBA{0x1C, 0x1C, 0x28, 0xFF},
	}
	img := image.NewPaletted(image.Rect(0, 0, Size, Size), pal)
	// Fill is index 0, the zero value of Pix: the image starts filled.
	for i := 32; i < Size; i += 32 {
		for j := 0; j < Size; j++ {
			img.SetColorIndex(i, j, ixGrid)
			img.SetColorIndex(j, i, ixGrid)
		}
	}
	for i := 0; i < Size; i++ {
		for w := 0; w < 3; w++ {
			img.SetColorIndex(i, w, ixBorder)
			img.SetColorIndex(i, Size-1-w, ixBorder)
			img.SetColorIndex(w, i, ixBorder)
			img.SetColorIndex(Size-1-w, i, ixBorder)
		}
	}

	coords := fmt.Sprintf("%d/%d/%d", s.Z, s.X, s.Y)
	big := min(5, (Size-24)/max(1, textWidth(coords)))
	drawCentered(img, coords, Size/2-glyphH*big/2, big)
	caption := s.Caption
	if caption == "" {
		caption = "ZOOM " + strconv.Itoa(s.Z)
	}
	small := min(3, (Size-16)/max(1, textWidth(caption)))
	drawCentered(img, caption, Size/2+glyphH*big/2+14, small)
	drawCentered(img, fmt.Sprintf("X %d  Y %d", s.X, s.Y), Size/2-glyphH*big/2-14-glyphH*2, 2)

	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("demotiles: encode %s: %w", coords, err)
	}
	return buf.Bytes(), nil
}

// drawCentered writes s centred horizontally with its top at y, each font
// cell scale×scale pixels.
func drawCentered(img *image.Paletted, s string, y, scale int) {
	x := (Size - textWidth(s)*scale) / 2
	for _, r := range s {
		g := glyph(r)
		for row := range glyphH {
			for col := range glyphW {
				if g[row][col] != '#' {
					continue
				}
				for dy := range scale {
					for dx := range scale {
						img.SetColorIndex(x+col*scale+dx, y+row*scale+dy, ixInk)
					}
				}
			}
		}
		x += (glyphW + 1) * scale
	}
}

// shade darkens c by factor f (0–1).
func shade(c color.RGBA, f float64) color.RGBA {
	return color.RGBA{uint8(float64(c.R) * f), uint8(float64(c.G) * f), uint8(float64(c.B) * f), 0xFF}
}

// Count is the number of tiles of zoom levels 0 through maxZoom.
func Count(maxZoom int) int {
	n := 0
	for z := 0; z <= maxZoom; z++ {
		n += 1 << (2 * z)
	}
	return n
}

// PutFunc stores one tile under its tile key.
type PutFunc func(ctx context.Context, key string, png []byte) error

// Seed renders every tile of zoom levels 0 through maxZoom and stores it with
// put, concurrency at a time. It returns how many tiles it stored.
func Seed(ctx context.Context, maxZoom, concurrency int, put PutFunc) (int, error) {
	if maxZoom < 0 || maxZoom > 10 {
		return 0, fmt.Errorf("demotiles: max zoom %d: want 0-10", maxZoom)
	}
	concurrency = max(1, concurrency)
	type job struct{ z, x, y int }
	jobs := make(chan job)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex // guards errs and stored
		errs   []error
		stored int
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range concurrency {
		wg.Go(func() {
			for j := range jobs {
				err := func() error {
					body, err := Render(Spec{Z: j.z, X: j.x, Y: j.y})
					if err != nil {
						return err
					}
					return put(ctx, Key(j.z, j.x, j.y), body)
				}()
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					cancel()
				} else {
					stored++
				}
				mu.Unlock()
			}
		})
	}
feed:
	for z := 0; z <= maxZoom; z++ {
		for x := range 1 << z {
			for y := range 1 << z {
				select {
				case jobs <- job{z, x, y}:
				case <-ctx.Done():
					break feed
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		return stored, fmt.Errorf("demotiles: seed: %w", errors.Join(errs...))
	}
	return stored, ctx.Err()
}
