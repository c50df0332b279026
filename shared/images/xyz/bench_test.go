package xyz_test

import (
	"context"
	"fmt"
	"image"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/xyz"
)

// memorySource serves stored tiles from memory, built on first use, so a
// benchmark measures resampling, not decoding.
type memorySource struct {
	mu     sync.Mutex // guards tiles
	tiles  map[[3]int]xyz.Block
	raster xyz.Raster
}

func (m *memorySource) Tile(_ context.Context, level, x, y int) (xyz.Block, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [3]int{level, x, y}
	if b, ok := m.tiles[k]; ok {
		return b, nil
	}
	l := m.raster.Levels[level]
	var b xyz.Block
	if m.raster.Float {
		f := xyz.NewFloatImage(image.Rect(0, 0, l.TileWidth, l.TileHeight))
		for i := range f.Pix {
			f.Pix[i] = float32(100 + (i%l.TileWidth+x*l.TileWidth)%97 + (i/l.TileWidth+y)%89)
		}
		b.Float = f
	} else {
		img := image.NewNRGBA(image.Rect(0, 0, l.TileWidth, l.TileHeight))
		for i := range img.Pix {
			img.Pix[i] = uint8(i*7 + x*13 + y*5)
		}
		for i := 3; i < len(img.Pix); i += 4 {
			img.Pix[i] = 255
		}
		b.Image = img
	}
	if m.tiles == nil {
		m.tiles = map[[3]int]xyz.Block{}
	}
	m.tiles[k] = b
	return b, nil
}

// benchRaster is a 20,000 × 20,000 pixel raster with overviews down to one
// tile, centred on (cx, cy) in its CRS.
func benchRaster(epsg int, cx, cy, px float64, float bool) xyz.Raster {
	const n = 20000
	r := xyz.Raster{EPSG: epsg, Bands: 3, Float: float,
		Transform: [6]float64{cx - n/2*px, px, 0, cy + n/2*px, 0, -px}}
	if float {
		r.Bands = 1
	}
	for l := 0; n>>l >= 256; l++ {
		r.Levels = append(r.Levels, xyz.Level{Width: (n + 1<<l - 1) >> l, Height: (n + 1<<l - 1) >> l, TileWidth: 256, TileHeight: 256})
	}
	return r
}

var benchSources = []struct {
	name   string
	raster xyz.Raster
}{
	{"3857OffGrid", benchRaster(3857, 1234567.8, 6543210.9, 13.7, false)},
	{"4326", benchRaster(4326, 10.5, 45.3, 0.0001, false)},
	{"UTM", benchRaster(32633, 450000, 5350000, 10, false)},
	{"UTMFloat", benchRaster(32633, 450000, 5350000, 10, true)},
}

// BenchmarkPlanStored plans a passthrough tile: no resampling, no read.
func BenchmarkPlanStored(b *testing.B) {
	ts, err := xyz.New(onGrid(14, 256, 8000, 5000, 40, 40, 4), xyz.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p, err := ts.Plan(14, 8010, 5020); err != nil || p.Kind != xyz.Stored {
			b.Fatal(p.Kind, err)
		}
	}
}

// BenchmarkPlanResample plans a resampled tile at the native zoom: the
// positions of its pixels and the stored tiles to read.
func BenchmarkPlanResample(b *testing.B) {
	for _, s := range benchSources {
		b.Run(s.name, func(b *testing.B) {
			ts, x, y, z := benchTile(b, s.raster)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ts.Plan(z, x, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRender plans and resamples a 256 × 256 tile at the native zoom
// from stored tiles held in memory.
func BenchmarkRender(b *testing.B) {
	for _, s := range benchSources {
		b.Run(s.name, func(b *testing.B) {
			ts, x, y, z := benchTile(b, s.raster)
			src := &memorySource{raster: s.raster}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				p, err := ts.Plan(z, x, y)
				if err != nil {
					b.Fatal(err)
				}
				if s.raster.Float {
					_, err = ts.RenderFloat(ctx, src, p)
				} else {
					_, err = ts.RenderImage(ctx, src, p)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchTile is the tileset and its tile at the centre at the native zoom.
func benchTile(b *testing.B, r xyz.Raster) (ts *xyz.Tileset, x, y, z int) {
	ts, err := xyz.New(r, xyz.Config{})
	if err != nil {
		b.Fatal(err)
	}
	md := ts.Metadata()
	z = md.MaxZoom
	x, y = tileAt(md.Center[0], md.Center[1], z)
	p, err := ts.Plan(z, x, y)
	if err != nil || p.Kind != xyz.Resample {
		b.Fatal(fmt.Sprint(p.Kind), err)
	}
	return ts, x, y, z
}
