package xyz_test

import (
	"context"
	"encoding/binary"
	"errors"
	"image"
	"math"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/xyz"
)

// rasterFrom decodes fuzz input into a Raster: an EPSG code, the six
// geotransform terms, flags, and up to 32 levels of four sizes each.
func rasterFrom(data []byte) xyz.Raster {
	var r xyz.Raster
	next := func(n int) []byte {
		if len(data) < n {
			data = append(data, make([]byte, n-len(data))...)
		}
		b := data[:n]
		data = data[n:]
		return b
	}
	r.EPSG = int(int32(binary.LittleEndian.Uint32(next(4))))
	for i := range r.Transform {
		r.Transform[i] = math.Float64frombits(binary.LittleEndian.Uint64(next(8)))
	}
	flags := next(2)
	r.Bands, r.Float, r.HasMask, r.HasAlpha = int(flags[0]%6), flags[1]&1 != 0, flags[1]&2 != 0, flags[1]&4 != 0
	if flags[1]&8 != 0 {
		nd := float64(flags[0])
		r.NoData = &nd
	}
	r.AlignedLevels = int(flags[1] >> 4)
	if flags[1]&16 != 0 {
		r.TilingScheme = "GoogleMapsCompatible"
	}
	for n := int(next(1)[0]) % 34; n > 0 && len(data) > 0; n-- {
		v := next(16)
		r.Levels = append(r.Levels, xyz.Level{
			Width: int(int32(binary.LittleEndian.Uint32(v))), Height: int(int32(binary.LittleEndian.Uint32(v[4:]))),
			TileWidth: int(int32(binary.LittleEndian.Uint32(v[8:]))), TileHeight: int(int32(binary.LittleEndian.Uint32(v[12:])))})
	}
	return r
}

// encodeRaster is rasterFrom's inverse, for the seed corpus.
func encodeRaster(r xyz.Raster, flags byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(int32(r.EPSG)))
	for _, v := range r.Transform {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	b = append(b, byte(r.Bands), flags, byte(len(r.Levels)))
	for _, l := range r.Levels {
		for _, v := range []int{l.Width, l.Height, l.TileWidth, l.TileHeight} {
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(v)))
		}
	}
	return b
}

// smallBlocks serves every stored tile as a 24 × 24 block (a tile cut short)
// whatever the claimed tile size, so no fuzz input makes it allocate much.
var smallBlocks = xyz.TileSourceFunc(func(_ context.Context, level, x, y int) (xyz.Block, error) {
	r := image.Rect(0, 0, 24, 24)
	img := image.NewNRGBA(r)
	for i := range img.Pix {
		img.Pix[i] = uint8(i + x + y + level)
	}
	f := xyz.NewFloatImage(r)
	for i := range f.Pix {
		f.Pix[i] = float32(i)
	}
	mask := image.NewAlpha(r)
	mask.Pix[0] = 255
	return xyz.Block{Image: img, Float: f, Mask: mask}, nil
})

// FuzzNew feeds arbitrary descriptions to New and, for those it accepts,
// plans and renders tiles across zooms: nothing may panic, and every error
// is one of the package's.
func FuzzNew(f *testing.F) {
	for _, r := range []xyz.Raster{
		onGrid(10, 256, 540, 360, 4, 3, 2),
		onGrid(9, 512, 270, 180, 2, 2, 1),
		benchRaster(32633, 450000, 5350000, 10, false),
		benchRaster(4326, 179.9, -60, 0.001, true),
	} {
		f.Add(encodeRaster(r, 0))
		f.Add(encodeRaster(r, 0x1b))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := xyz.New(rasterFrom(data), xyz.Config{MaxReadTiles: 16, MaxReadPixels: 1 << 20})
		if err != nil {
			return
		}
		md := ts.Metadata()
		ts.Check()
		for _, z := range []int{0, md.MinZoom, md.MaxZoom, md.MaxZoom + 3, xyz.MaxZoom} {
			x, y := tileAt(md.Center[0], md.Center[1], z)
			renderAny(t, ts, z, x, y)
		}
	})
}

// FuzzPlan plans and renders arbitrary tile coordinates on four tilesets.
func FuzzPlan(f *testing.F) {
	var sets []*xyz.Tileset
	for _, r := range []xyz.Raster{
		onGrid(10, 256, 540, 360, 4, 3, 2),
		benchRaster(3857, 1234567.8, 6543210.9, 13.7, false),
		benchRaster(4326, 179.9, -60, 0.001, true),
		benchRaster(32601, 700000, 9000000, 30, false),
	} {
		ts, err := xyz.New(r, xyz.Config{MaxReadTiles: 16})
		if err != nil {
			f.Fatal(err)
		}
		sets = append(sets, ts)
	}
	f.Add(uint8(0), 10, 541, 362)
	f.Add(uint8(1), 14, 8956, 5770)
	f.Add(uint8(2), 30, 0, 1<<30-1)
	f.Add(uint8(3), 0, 0, 0)
	f.Add(uint8(3), -1, 5, 1<<40)
	f.Fuzz(func(t *testing.T, which uint8, z, x, y int) {
		renderAny(t, sets[int(which)%len(sets)], z, x, y)
	})
}

func renderAny(t *testing.T, ts *xyz.Tileset, z, x, y int) {
	p, err := ts.Plan(z, x, y)
	if err != nil {
		if !errors.Is(err, xyz.ErrInvalidTile) && !errors.Is(err, xyz.ErrTooCostly) {
			t.Fatalf("Plan(%d, %d, %d): unexpected error %v", z, x, y, err)
		}
		return
	}
	ctx := context.Background()
	if _, err := ts.RenderImage(ctx, smallBlocks, p); err != nil && !errors.Is(err, xyz.ErrNoData) {
		if _, ferr := ts.RenderFloat(ctx, smallBlocks, p); ferr != nil && !errors.Is(ferr, xyz.ErrNoData) {
			t.Fatalf("Render %d/%d/%d (%v): %v; %v", z, x, y, p.Kind, err, ferr)
		}
	}
}
