package xyz_test

import (
	"context"
	"errors"
	"image"
	"image/color"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/geo"
	"github.com/tilesieve/tilesieve/shared/images/xyz"
)

// onGrid is an EPSG:3857 raster on the XYZ grid of zoom z with tiles of side
// ts, its origin at XYZ tile (tx, ty), w × h stored tiles and halving
// overviews.
func onGrid(z, ts, tx, ty, w, h, overviews int) xyz.Raster {
	res := xyz.Resolution(z, ts)
	side := res * float64(ts)
	r := xyz.Raster{EPSG: 3857, Bands: 3,
		Transform: [6]float64{-geo.MercatorHalfWorld + float64(tx)*side, res, 0, geo.MercatorHalfWorld - float64(ty)*side, 0, -res}}
	for l := 0; l <= overviews; l++ {
		r.Levels = append(r.Levels, xyz.Level{Width: (w*ts + 1<<l - 1) >> l, Height: (h*ts + 1<<l - 1) >> l, TileWidth: ts, TileHeight: ts})
	}
	return r
}

// synthetic serves stored tiles whose pixels are a function of their level
// and position, counting the reads.
type synthetic struct {
	raster xyz.Raster
	mu     sync.Mutex
	reads  map[[3]int]int
	kind   string // "", "gray", "ycbcr", "rgba", "paletted"
}

func pixelAt(level, x, y int) color.NRGBA {
	return color.NRGBA{uint8(x*7 + level*50), uint8(y * 3), uint8(x + y), 255}
}

func (s *synthetic) Tile(_ context.Context, level, x, y int) (xyz.Block, error) {
	s.mu.Lock()
	if s.reads == nil {
		s.reads = map[[3]int]int{}
	}
	s.reads[[3]int{level, x, y}]++
	s.mu.Unlock()
	l := s.raster.Levels[level]
	r := image.Rect(0, 0, l.TileWidth, l.TileHeight).Add(image.Pt(1000, -40)) // any origin
	img := image.NewNRGBA(r)
	for j := range l.TileHeight {
		for i := range l.TileWidth {
			img.SetNRGBA(r.Min.X+i, r.Min.Y+j, pixelAt(level, x*l.TileWidth+i, y*l.TileHeight+j))
		}
	}
	return xyz.Block{Image: convert(img, s.kind)}, nil
}

// convert re-encodes an opaque NRGBA image as another image type.
func convert(img *image.NRGBA, kind string) image.Image {
	r := img.Rect
	switch kind {
	case "gray":
		g := image.NewGray(r)
		for i := range g.Pix {
			g.Pix[i] = img.Pix[4*i]
		}
		return g
	case "rgba":
		c := image.NewRGBA(r)
		copy(c.Pix, img.Pix)
		return c
	case "ycbcr":
		c := image.NewYCbCr(r, image.YCbCrSubsampleRatio444)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				p := img.NRGBAAt(x, y)
				c.Y[c.YOffset(x, y)], c.Cb[c.COffset(x, y)], c.Cr[c.COffset(x, y)] = color.RGBToYCbCr(p.R, p.G, p.B)
			}
		}
		return c
	case "paletted":
		pal := color.Palette{}
		for i := range 256 {
			pal = append(pal, color.NRGBA{uint8(i), uint8(i), uint8(i), 255})
		}
		c := image.NewPaletted(r, pal)
		for i := range c.Pix {
			c.Pix[i] = img.Pix[4*i]
		}
		return c
	}
	return img
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	aligned2 := onGrid(10, 256, 540, 362, 4, 3, 2) // the second overview is off zoom 8's grid
	aligned2.AlignedLevels, aligned2.TilingScheme = 2, "GoogleMapsCompatible"
	offGrid := onGrid(10, 256, 541, 361, 4, 3, 2) // overviews off their zooms' grids
	offGrid.TilingScheme = "GoogleMapsCompatible"
	shifted := onGrid(10, 256, 541, 361, 4, 3, 0)
	shifted.Transform[0] += 0.3 * shifted.Transform[1] // a third of a pixel off
	shifted.TilingScheme = "WebMercatorQuad"
	big := onGrid(9, 512, 270, 180, 2, 2, 1)
	utm := xyz.Raster{EPSG: 32633, Bands: 3, Transform: [6]float64{400000, 10, 0, 5400000, 0, -10},
		Levels: []xyz.Level{{Width: 10000, Height: 8000, TileWidth: 512, TileHeight: 512}, {Width: 625, Height: 500, TileWidth: 512, TileHeight: 512}}}
	tests := []struct {
		name        string
		r           xyz.Raster
		tileSize    int
		minZ, maxZ  int
		storedZooms []int
		check       string // what Check says, if anything
	}{
		{"aligned at two levels", aligned2, 256, 8, 10, []int{9, 10}, ""},
		{"overviews off the grid", offGrid, 256, 8, 10, []int{10}, ""},
		{"origin a third of a pixel off", shifted, 256, 10, 10, nil, "not on the XYZ grid"},
		{"512-pixel tiles", big, 512, 8, 9, []int{8, 9}, ""},
		// 10 m at 48.7°N is 15.1 m of web mercator: zoom 14 (9.55 m) is the
		// first as fine; 160 m is 241 m: zoom 10 (152.9 m).
		{"utm", utm, 256, 10, 14, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts, err := xyz.New(tt.r, xyz.Config{})
			if err != nil {
				t.Fatal(err)
			}
			m := ts.Metadata()
			slicesSort(m.StoredZooms)
			slicesSort(tt.storedZooms)
			if m.TileSize != tt.tileSize || m.MinZoom != tt.minZ || m.MaxZoom != tt.maxZ || !reflect.DeepEqual(m.StoredZooms, tt.storedZooms) {
				t.Errorf("got tile size %d, zooms %d–%d, stored %v; want %d, %d–%d, %v",
					m.TileSize, m.MinZoom, m.MaxZoom, m.StoredZooms, tt.tileSize, tt.minZ, tt.maxZ, tt.storedZooms)
			}
			if err := ts.Check(); (err == nil) != (tt.check == "") || (err != nil && !strings.Contains(err.Error(), tt.check)) {
				t.Errorf("Check: got %v, want %q", err, tt.check)
			}
			if m.Center[2] != float64(m.MinZoom) || !(m.Bounds[0] < m.Bounds[2] && m.Bounds[1] < m.Bounds[3]) {
				t.Errorf("got bounds %v, centre %v", m.Bounds, m.Center)
			}
		})
	}
}

func slicesSort(s []int) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

// TestBoundsUTM checks that the bounds follow the curved edges of a UTM
// raster: its western edge bulges west between its corners at 70°N.
func TestBoundsUTM(t *testing.T) {
	t.Parallel()
	r := xyz.Raster{EPSG: 32633, Bands: 1, Transform: [6]float64{166000, 100, 0, 8000000, 0, -100},
		Levels: []xyz.Level{{Width: 3000, Height: 2000, TileWidth: 256, TileHeight: 256}}}
	ts, err := xyz.New(r, xyz.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := geo.Lookup(32633)
	west := 180.0
	for _, y := range []float64{8000000, 7800000} {
		lon, _ := c.ToLonLat(166000, y)
		west = math.Min(west, lon)
	}
	if got := ts.Metadata().Bounds[0]; !(got <= west) {
		t.Errorf("got west %.6f, want ≤ %.6f (the corners' westmost)", got, west)
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	good := onGrid(10, 256, 540, 360, 4, 3, 1)
	nd := -1.0
	tests := []struct {
		name   string
		edit   func(r *xyz.Raster)
		target error
		says   string
	}{
		{"unsupported CRS", func(r *xyz.Raster) { r.EPSG = 2056 }, nil, "gdalwarp -t_srs EPSG:3857"},
		{"rotated", func(r *xyz.Raster) { r.Transform[2] = 0.5 }, xyz.ErrInvalidRaster, "rotated or sheared"},
		{"sheared", func(r *xyz.Raster) { r.Transform[4] = -1e-9 }, xyz.ErrInvalidRaster, "rotated or sheared"},
		{"zero pixel", func(r *xyz.Raster) { r.Transform[1] = 0 }, xyz.ErrInvalidRaster, "pixel size"},
		{"NaN origin", func(r *xyz.Raster) { r.Transform[0] = math.NaN() }, xyz.ErrInvalidRaster, "term 0"},
		{"infinite pixel", func(r *xyz.Raster) { r.Transform[5] = math.Inf(-1) }, xyz.ErrInvalidRaster, "term 5"},
		{"no levels", func(r *xyz.Raster) { r.Levels = nil }, xyz.ErrInvalidRaster, "0 levels"},
		{"2^31 wide", func(r *xyz.Raster) { r.Levels[0].Width = 1 << 31 }, xyz.ErrInvalidRaster, "level 0"},
		{"negative height", func(r *xyz.Raster) { r.Levels[1].Height = -5 }, xyz.ErrInvalidRaster, "level 1"},
		{"overview larger", func(r *xyz.Raster) { r.Levels[1].Width = r.Levels[0].Width + 1 }, xyz.ErrInvalidRaster, "level 1"},
		{"huge tiles", func(r *xyz.Raster) { r.Levels[0].TileWidth = 1 << 20 }, xyz.ErrInvalidRaster, "tiles"},
		{"tiny tiles", func(r *xyz.Raster) { r.Levels[0].TileHeight = 1 }, xyz.ErrInvalidRaster, "tiles"},
		{"too many levels", func(r *xyz.Raster) {
			for range 40 {
				r.Levels = append(r.Levels, r.Levels[1])
			}
		}, xyz.ErrInvalidRaster, "levels"},
		{"five bands", func(r *xyz.Raster) { r.Bands = 5 }, xyz.ErrInvalidRaster, "bands"},
		{"float RGB", func(r *xyz.Raster) { r.Float = true }, xyz.ErrInvalidRaster, "one band"},
		{"alpha on 3 bands", func(r *xyz.Raster) { r.HasAlpha = true }, xyz.ErrInvalidRaster, "alpha"},
		{"outside the world", func(r *xyz.Raster) { r.EPSG, r.Transform = 4326, [6]float64{0, 1, 0, -86, 0, -0.001} }, xyz.ErrInvalidRaster, "outside"},
		{"beyond a UTM zone's domain", func(r *xyz.Raster) { r.EPSG, r.Transform = 32633, [6]float64{-1e12, 1e9, 0, 0, 0, -1} }, xyz.ErrInvalidRaster, "domain"},
		{"joins problems", func(r *xyz.Raster) { r.Transform[2], r.Bands, r.NoData = 1, 9, &nd }, xyz.ErrInvalidRaster, "bands"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := good
			r.Levels = append([]xyz.Level(nil), good.Levels...)
			tt.edit(&r)
			_, err := xyz.New(r, xyz.Config{})
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("got %v, want an error saying %q", err, tt.says)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("got %v, want it to match %v", err, tt.target)
			}
			var ue *geo.UnsupportedError
			if tt.target == nil && !errors.As(err, &ue) {
				t.Errorf("got %v, want a *geo.UnsupportedError", err)
			}
		})
	}
	_, err := xyz.New(good, xyz.Config{MaxReadTiles: -1, MaxReadPixels: 1 << 40, Fetchers: 1000})
	for _, field := range []string{"MaxReadTiles", "MaxReadPixels", "Fetchers"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("got %v, want it to name %s", err, field)
		}
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	aligned, err := xyz.New(onGrid(10, 256, 540, 360, 4, 3, 2), xyz.Config{})
	if err != nil {
		t.Fatal(err)
	}
	flat := onGrid(14, 256, 8000, 5000, 40, 40, 0) // no overviews
	noOverviews, err := xyz.New(flat, xyz.Config{MaxReadTiles: 16})
	if err != nil {
		t.Fatal(err)
	}
	fewPixels, err := xyz.New(flat, xyz.Config{MaxReadPixels: 200000})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ts      *xyz.Tileset
		z, x, y int
		kind    xyz.PlanKind
		level   int
		stored  xyz.TileIndex
		tiles   int
		err     error
	}{
		{"stored", aligned, 10, 541, 362, xyz.Stored, 0, xyz.TileIndex{X: 1, Y: 2}, 0, nil},
		{"stored at an aligned overview", aligned, 9, 271, 181, xyz.Stored, 1, xyz.TileIndex{X: 1, Y: 1}, 0, nil},
		{"beside the stored grid", aligned, 10, 544, 362, xyz.Empty, 0, xyz.TileIndex{}, 0, nil},
		{"far away", aligned, 12, 0, 0, xyz.Empty, 0, xyz.TileIndex{}, 0, nil},
		// The last column's centre, 511.75, blends in column 512 of the next tile.
		{"finer than the data", aligned, 11, 1083, 723, xyz.Resample, 0, xyz.TileIndex{}, 4, nil},
		{"coarser than the last overview", aligned, 6, 33, 22, xyz.Resample, 2, xyz.TileIndex{}, 1, nil},
		{"z beyond 30", aligned, 31, 0, 0, 0, 0, xyz.TileIndex{}, 0, xyz.ErrInvalidTile},
		{"negative z", aligned, -1, 0, 0, 0, 0, xyz.TileIndex{}, 0, xyz.ErrInvalidTile},
		{"x beyond 2^z", aligned, 3, 8, 0, 0, 0, xyz.TileIndex{}, 0, xyz.ErrInvalidTile},
		{"negative y", aligned, 3, 0, -1, 0, 0, xyz.TileIndex{}, 0, xyz.ErrInvalidTile},
		{"z 30 far away", aligned, 30, 1<<30 - 1, 1<<30 - 1, xyz.Empty, 0, xyz.TileIndex{}, 0, nil},
		{"too costly", noOverviews, 10, 500, 312, 0, 0, xyz.TileIndex{}, 0, xyz.ErrTooCostly},
		{"within the bound", noOverviews, 13, 4000, 2500, xyz.Resample, 0, xyz.TileIndex{}, 4, nil},
		{"too many pixels", fewPixels, 13, 4000, 2500, 0, 0, xyz.TileIndex{}, 0, xyz.ErrTooCostly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := tt.ts.Plan(tt.z, tt.x, tt.y)
			if !errors.Is(err, tt.err) {
				t.Fatalf("got %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if p.Kind != tt.kind || p.Level != tt.level || p.Stored != tt.stored || len(p.Tiles) != tt.tiles {
				t.Errorf("got %v level %d stored %v %d tiles, want %v level %d stored %v %d tiles",
					p.Kind, p.Level, p.Stored, len(p.Tiles), tt.kind, tt.level, tt.stored, tt.tiles)
			}
		})
	}
}

// TestRenderStored decodes a passthrough tile: the stored pixels as they are.
func TestRenderStored(t *testing.T) {
	t.Parallel()
	r := onGrid(10, 256, 540, 360, 4, 3, 1)
	ts, _ := xyz.New(r, xyz.Config{})
	p, err := ts.Plan(10, 542, 361)
	if err != nil || p.Kind != xyz.Stored {
		t.Fatalf("got %v, %v, want a stored plan", p.Kind, err)
	}
	src := &synthetic{raster: r}
	img, err := ts.RenderImage(context.Background(), src, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(src.reads) != 1 || src.reads[[3]int{0, 2, 1}] != 1 {
		t.Errorf("got reads %v, want tile 2/1 of level 0 once", src.reads)
	}
	for y := range 256 {
		for x := range 256 {
			if got, want := img.NRGBAAt(x, y), pixelAt(0, 2*256+x, 256+y); got != want {
				t.Fatalf("pixel %d,%d: got %v, want %v", x, y, got, want)
			}
		}
	}
}

// TestRenderShifted resamples zoom 9 from the first overview, whose origin
// is half an XYZ tile off zoom 9's grid: every pixel is a stored pixel 128
// columns and rows away, read from four stored tiles, whatever their type.
func TestRenderShifted(t *testing.T) {
	t.Parallel()
	r := onGrid(10, 256, 541, 361, 4, 4, 1)
	ts, _ := xyz.New(r, xyz.Config{})
	for _, kind := range []string{"", "gray", "rgba", "ycbcr", "paletted"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			p, err := ts.Plan(9, 271, 181)
			if err != nil || p.Kind != xyz.Resample || p.Level != 1 || len(p.Tiles) != 4 {
				t.Fatalf("got %+v, %v, want a resample of 4 tiles of level 1", p, err)
			}
			src := &synthetic{raster: r, kind: kind}
			img, err := ts.RenderImage(context.Background(), src, p)
			if err != nil {
				t.Fatal(err)
			}
			var want [2][2]image.Image // the stored tiles as the source holds them
			for i := range 4 {
				b, _ := (&synthetic{raster: r, kind: kind}).Tile(context.Background(), 1, i%2, i/2)
				want[i/2][i%2] = b.Image
			}
			for y := range 256 {
				for x := range 256 {
					sx, sy := 128+x, 128+y
					w := color.NRGBAModel.Convert(want[sy/256][sx/256].At(1000+sx%256, -40+sy%256)).(color.NRGBA)
					if got := img.NRGBAAt(x, y); got != w {
						t.Fatalf("pixel %d,%d: got %v, want %v", x, y, got, w)
					}
				}
			}
		})
	}
}

// TestNoDataDoesNotBleed renders a raster whose left half is at the nodata
// value and whose right half is one colour, half a pixel off the output
// grid: a pixel holds data exactly where the pixel under its centre does,
// and then has exactly the data's colour.
func TestNoDataDoesNotBleed(t *testing.T) {
	t.Parallel()
	const side = 256
	for _, how := range []string{"nodata", "mask", "alpha"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			r := onGrid(12, side, 2000, 1500, 1, 1, 0)
			r.Transform[0] += r.Transform[1] * 0.37
			r.Transform[3] -= r.Transform[1] * 0.61
			nd := 3.0
			switch how {
			case "nodata":
				r.NoData = &nd
			case "mask":
				r.HasMask = true
			case "alpha":
				r.Bands, r.HasAlpha = 4, true
			}
			ts, err := xyz.New(r, xyz.Config{})
			if err != nil {
				t.Fatal(err)
			}
			src := xyz.TileSourceFunc(func(context.Context, int, int, int) (xyz.Block, error) {
				img := image.NewNRGBA(image.Rect(0, 0, side, side))
				mask := image.NewAlpha(img.Rect)
				for y := range side {
					for x := range side {
						c := color.NRGBA{200, 100, 50, 255}
						if x < side/2 {
							c = color.NRGBA{3, 3, 3, 255}
							if how == "alpha" {
								c.A = 0
							}
						} else {
							mask.SetAlpha(x, y, color.Alpha{255})
						}
						img.SetNRGBA(x, y, c)
					}
				}
				b := xyz.Block{Image: img}
				if how == "mask" {
					b.Mask = mask
				}
				return b, nil
			})
			p, _ := ts.Plan(12, 2000, 1500)
			img, err := ts.RenderImage(context.Background(), src, p)
			if err != nil {
				t.Fatal(err)
			}
			for y := range side {
				for x := range side {
					u, v := float64(x)+0.5-0.37, float64(y)+0.5-0.61
					wantData := u >= side/2 && v >= 0
					got := img.NRGBAAt(x, y)
					if (got.A != 0) != wantData || (wantData && got != (color.NRGBA{200, 100, 50, 255})) {
						t.Fatalf("pixel %d,%d: got %v, want data %v of colour 200,100,50", x, y, got, wantData)
					}
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	r := onGrid(10, 256, 541, 361, 4, 4, 1)
	ts, _ := xyz.New(r, xyz.Config{Fetchers: 2})
	p, _ := ts.Plan(9, 271, 181)
	boom := errors.New("boom")
	other, _ := xyz.New(r, xyz.Config{})
	empty, _ := ts.Plan(12, 0, 0)
	tests := []struct {
		name string
		ts   *xyz.Tileset
		p    xyz.Plan
		src  xyz.TileSource
		want error
		says string
	}{
		{"source fails", ts, p, xyz.TileSourceFunc(func(ctx context.Context, level, x, y int) (xyz.Block, error) {
			if x == 1 && y == 1 {
				return xyz.Block{}, boom
			}
			return xyz.Block{Image: image.NewNRGBA(image.Rect(0, 0, 256, 256))}, nil
		}), boom, "tile 1/1 of level 1"},
		{"every tile sparse", ts, p, xyz.TileSourceFunc(func(context.Context, int, int, int) (xyz.Block, error) {
			return xyz.Block{}, nil
		}), xyz.ErrNoData, ""},
		{"empty plan", ts, empty, &synthetic{raster: r}, xyz.ErrNoData, ""},
		{"another tileset's plan", other, p, &synthetic{raster: r}, nil, "not made by this tileset"},
		{"malformed block", ts, p, xyz.TileSourceFunc(func(context.Context, int, int, int) (xyz.Block, error) {
			img := image.NewNRGBA(image.Rect(0, 0, 256, 256))
			img.Pix = img.Pix[:100]
			return xyz.Block{Image: img}, nil
		}), nil, "do not fill"},
		{"float block", ts, p, xyz.TileSourceFunc(func(context.Context, int, int, int) (xyz.Block, error) {
			return xyz.Block{Float: xyz.NewFloatImage(image.Rect(0, 0, 256, 256))}, nil
		}), nil, "float block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.ts.RenderImage(context.Background(), tt.src, tt.p)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("got %v, want %v saying %q", err, tt.want, tt.says)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ts.RenderImage(ctx, &synthetic{raster: r}, p); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
	if _, err := ts.RenderFloat(context.Background(), &synthetic{raster: r}, p); err == nil {
		t.Error("RenderFloat of an 8-bit raster: got no error")
	}
}

// TestAntimeridian serves EPSG:4326 and UTM zone 60 rasters that cross the
// antimeridian: tiles on both sides hold the columns their longitudes name.
func TestAntimeridian(t *testing.T) {
	t.Parallel()
	// Column c of the source is coloured by c, so a pixel says where it came from.
	colour := func(r xyz.Raster) xyz.TileSource {
		return xyz.TileSourceFunc(func(_ context.Context, level, x, y int) (xyz.Block, error) {
			l := r.Levels[level]
			img := image.NewNRGBA(image.Rect(0, 0, l.TileWidth, l.TileHeight))
			for j := range l.TileHeight {
				for i := range l.TileWidth {
					c := x*l.TileWidth + i
					img.SetNRGBA(i, j, color.NRGBA{uint8(c), uint8(c >> 8), 0, 255})
				}
			}
			return xyz.Block{Image: img}, nil
		})
	}
	wgs := xyz.Raster{EPSG: 4326, Bands: 3, Transform: [6]float64{170, 0.01, 0, 10, 0, -0.01},
		Levels: []xyz.Level{{Width: 2000, Height: 2000, TileWidth: 256, TileHeight: 256}}}
	utm := xyz.Raster{EPSG: 32660, Bands: 3, Transform: [6]float64{300000, 100, 0, 1000000, 0, -100},
		Levels: []xyz.Level{{Width: 8000, Height: 2000, TileWidth: 256, TileHeight: 256}}} // to 182.5°E
	c60, _ := geo.Lookup(32660)
	tests := []struct {
		name   string
		r      xyz.Raster
		column func(lon, lat float64) float64 // the source column at a point
	}{
		{"4326", wgs, func(lon, _ float64) float64 { return (math.Mod(lon+360, 360) - 170) / 0.01 }},
		{"utm 60", utm, func(lon, lat float64) float64 { x, _ := c60.FromLonLat(lon, lat); return (x - 300000) / 100 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts, err := xyz.New(tt.r, xyz.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if b := ts.Metadata().Bounds; b[0] != -180 || b[2] != 180 {
				t.Errorf("got bounds %v, want the whole width of the world", b)
			}
			for _, lon := range []float64{179.7, -179.7} {
				const z = 9
				x, y := tileAt(lon, 8, z)
				p, err := ts.Plan(z, x, y)
				if err != nil || p.Kind != xyz.Resample {
					t.Fatalf("lon %g: got %v, %v, want a resample", lon, p.Kind, err)
				}
				img, err := ts.RenderImage(context.Background(), colour(tt.r), p)
				if err != nil {
					t.Fatal(err)
				}
				b := xyz.TileBounds(z, x, y)
				clon, clat := geo.MercatorToLonLat((b[0]+b[2])/2+xyz.Resolution(z, 256)/2, (b[1]+b[3])/2-xyz.Resolution(z, 256)/2)
				got := img.NRGBAAt(128, 128)
				want := tt.column(clon, clat)
				if c := float64(got.R) + 256*float64(got.G); got.A != 255 || math.Abs(c-want) > 1 {
					t.Errorf("lon %g: centre pixel is column %g (alpha %d), want %.1f", lon, c, got.A, want)
				}
			}
		})
	}
}

// TestHugeRaster plans and renders a raster claiming 2^51 pixels, with
// overviews down to one tile, and a level without overviews: the work and
// the memory stay those of a few stored tiles.
func TestHugeRaster(t *testing.T) {
	r := xyz.Raster{EPSG: 3857, Bands: 3, Transform: [6]float64{-2e7, 0.5, 0, 2e7, 0, -0.5},
		Levels: []xyz.Level{{Width: xyz.MaxDimension, Height: xyz.MaxDimension / 2, TileWidth: 512, TileHeight: 512}}}
	flat := r
	flat.Levels = append([]xyz.Level(nil), r.Levels...)
	for l := 1; xyz.MaxDimension>>l >= 512; l++ {
		r.Levels = append(r.Levels, xyz.Level{Width: xyz.MaxDimension >> l, Height: xyz.MaxDimension >> (l + 1), TileWidth: 512, TileHeight: 512})
	}
	for _, tt := range []struct {
		name string
		r    xyz.Raster
		err  func(z int) error
	}{
		{"with overviews", r, func(int) error { return nil }},
		{"without", flat, func(z int) error {
			if z < 17 {
				return xyz.ErrTooCostly
			}
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := xyz.New(tt.r, xyz.Config{})
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for _, z := range []int{0, 3, 10, 25} {
				p, err := ts.Plan(z, 1<<z/2, 1<<z/3)
				if want := tt.err(z); !errors.Is(err, want) {
					t.Fatalf("zoom %d: got %v, want %v", z, err, want)
				}
				if err == nil {
					if _, err := ts.RenderImage(context.Background(), smallBlocks, p); err != nil && !errors.Is(err, xyz.ErrNoData) {
						t.Fatal(err)
					}
				}
			}
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
				t.Errorf("got %d MiB allocated, want at most 64", n>>20)
			}
		})
	}
}

// TestRender512 resamples a 512-pixel XYZ tile from an overview half a tile
// off its zoom's grid, in a tileset whose stored tiles set the tile size.
func TestRender512(t *testing.T) {
	t.Parallel()
	r := onGrid(9, 512, 271, 181, 4, 4, 1)
	ts, err := xyz.New(r, xyz.Config{})
	if err != nil || ts.Metadata().TileSize != 512 {
		t.Fatalf("got %v, tile size %d, want 512", err, ts.Metadata().TileSize)
	}
	p, err := ts.Plan(8, 136, 91)
	if err != nil || p.Kind != xyz.Resample || p.Level != 1 {
		t.Fatalf("got %+v, %v, want a resample of level 1", p, err)
	}
	img, err := ts.RenderImage(context.Background(), &synthetic{raster: r}, p)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 512 || b.Dy() != 512 {
		t.Fatalf("got %v, want 512 × 512", b)
	}
	for y := range 512 {
		for x := range 512 {
			if got, want := img.NRGBAAt(x, y), pixelAt(1, 256+x, 256+y); got != want {
				t.Fatalf("pixel %d,%d: got %v, want %v", x, y, got, want)
			}
		}
	}
}
