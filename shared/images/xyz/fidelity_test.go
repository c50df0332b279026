package xyz_test

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/xyz"
	"github.com/tilesieve/tilesieve/shared/images/xyz/terrain"
)

// pattern is an RGB test image with smooth waves and the sharp edges of a
// checkerboard; no sample is 0, so only a chosen region matches nodata 0.
func pattern(w, h, bands int) pixels {
	p := pixels{w: w, h: h, bands: bands, b: make([]uint8, w*h*bands)}
	for y := range h {
		for x := range w {
			fx, fy := float64(x), float64(y)
			v := [3]float64{
				128 + 90*math.Sin(fx/9+fy/23),
				128 + 100*math.Cos(math.Hypot(fx-float64(w)/3, fy-float64(h)/2)/11),
				float64(60 + 140*((x/40+y/40)%2)),
			}
			for c := range min(bands, 3) {
				p.b[(y*w+x)*bands+c] = uint8(max(1, min(255, v[c])))
			}
		}
	}
	return p
}

// carve sets the samples of a disc and of a corner triangle to value, the
// no-data regions of the tests.
func carve(p pixels, band int, value uint8, cx, cy, radius float64) {
	for y := range p.h {
		for x := range p.w {
			if math.Hypot(float64(x)-cx, float64(y)-cy) < radius || x+y < p.w/5 {
				for c := range p.bands {
					if band < 0 || c == band {
						p.b[(y*p.w+x)*p.bands+c] = value
					}
				}
			}
		}
	}
}

// comparison of an XYZ tile with GDAL's warp of it.
type comparison struct {
	psnr       float64 // over the pixels both hold data in, RGB
	data       int     // pixels both hold data in
	seamless   int     // alpha disagreements away from any edge of GDAL's alpha
	alphaDiffs int     // alpha disagreements in all
}

func compare(got *image.NRGBA, ref pixels) comparison {
	var c comparison
	var se float64
	refData := func(x, y int) bool {
		x, y = max(0, min(ref.w-1, x)), max(0, min(ref.h-1, y))
		return ref.b[(y*ref.w+x)*ref.bands+ref.bands-1] != 0
	}
	for y := range ref.h {
		for x := range ref.w {
			g := got.Pix[got.PixOffset(x, y):][:4]
			r := ref.b[(y*ref.w+x)*ref.bands:][:ref.bands]
			gd, rd := g[3] != 0, refData(x, y)
			if gd != rd {
				c.alphaDiffs++
				edge := false
				for d := range 9 {
					edge = edge || refData(x+d%3-1, y+d/3-1) != rd
				}
				if !edge {
					c.seamless++
				}
				continue
			}
			if !gd {
				continue
			}
			c.data++
			for ch := range 3 {
				rc := r[min(ch, ref.bands-2)]
				se += (float64(g[ch]) - float64(rc)) * (float64(g[ch]) - float64(rc))
			}
		}
	}
	mse := se / float64(3*max(c.data, 1))
	c.psnr = 10 * math.Log10(255*255/math.Max(mse, 1e-10))
	return c
}

// TestFidelity resamples every XYZ tile over four sources (EPSG:3857 off the
// XYZ grid, EPSG:4326 RGB, UTM 33N with nodata, UTM 33S with a mask) at the
// native zoom, one finer and two coarser (the second from an overview), and
// holds them to gdalwarp's bilinear rendering of the same tiles: at least
// 30 dB PSNR where both hold data, and transparent exactly where GDAL's
// alpha is 0 but on a one-pixel seam.
func TestFidelity(t *testing.T) {
	t.Parallel()
	requireGDAL(t)
	dir := t.TempDir()
	zero := 0.0
	withMask := pattern(600, 500, 4)
	for i := 3; i < len(withMask.b); i += 4 {
		withMask.b[i] = 255
	}
	carve(withMask, 3, 0, 330, 260, 70)
	nodata := pattern(600, 500, 3)
	carve(nodata, -1, 0, 330, 260, 70)
	specs := []struct {
		name string
		spec sourceSpec
	}{
		{"3857-off-grid", sourceSpec{epsg: 3857, ulx: 1234567.8, uly: 6543210.9, px: 13.7, py: -13.7,
			full: pattern(600, 500, 3), overviews: 2, tile: 128}},
		{"4326-rgb", sourceSpec{epsg: 4326, ulx: 10.0003, uly: 45.5, px: 0.001, py: -0.001,
			full: pattern(600, 500, 3), overviews: 2, tile: 128}},
		{"utm-nodata", sourceSpec{epsg: 32633, ulx: 401234, uly: 5312345, px: 10, py: -10,
			full: nodata, nodata: &zero, overviews: 2, tile: 128}},
		{"utm-mask", sourceSpec{epsg: 32733, ulx: 598765, uly: 6512345, px: 10, py: -10,
			full: withMask, mask: true, overviews: 2, tile: 128}},
	}
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			t.Parallel()
			src := buildSource(t, dir, sp.name, sp.spec)
			ts, err := xyz.New(src.raster, xyz.Config{})
			if err != nil {
				t.Fatal(err)
			}
			md := ts.Metadata()
			for _, z := range zooms(md.MaxZoom) {
				t.Run(fmt.Sprint(z), func(t *testing.T) {
					t.Parallel()
					checkZoom(t, dir, src, ts, z)
				})
			}
		})
	}
}

// checkZoom compares every tile over the data at zoom z with one gdalwarp
// of all of them.
func checkZoom(t *testing.T, dir string, src *source, ts *xyz.Tileset, z int) {
	md := ts.Metadata()
	x0, y0, nx, ny := tileRange(md.Bounds, z)
	ref := warpTiles(t, dir, src.tif, z, x0, y0, nx, ny, md.TileSize, false)
	worst, levels, data := math.Inf(1), map[int]int{}, 0
	for j := range ny {
		for i := range nx {
			p, err := ts.Plan(z, x0+i, y0+j)
			if err != nil {
				t.Fatal(err)
			}
			got := image.NewNRGBA(image.Rect(0, 0, md.TileSize, md.TileSize))
			if p.Kind != xyz.Empty {
				levels[p.Level]++
				img, err := ts.RenderImage(context.Background(), src.tiles(), p)
				if err != nil && !errors.Is(err, xyz.ErrNoData) {
					t.Fatal(err)
				}
				if err == nil {
					got = img
				}
			}
			c := compare(got, ref.sub(i, j, md.TileSize))
			if c.data > 0 {
				worst = math.Min(worst, c.psnr)
				data += c.data
			}
			if c.data > 0 && c.psnr < 30 {
				t.Errorf("tile %d/%d/%d: got %.1f dB, want ≥ 30", z, x0+i, y0+j, c.psnr)
			}
			if c.seamless != 0 {
				t.Errorf("tile %d/%d/%d: got %d alpha disagreements off the seam, want 0", z, x0+i, y0+j, c.seamless)
			}
		}
	}
	t.Logf("%d × %d tiles from levels %v: worst %.1f dB, %d pixels with data", nx, ny, levels, worst, data)
	if data == 0 {
		t.Error("no pixel holds data")
	}
}

// zooms are the zooms the fidelity tests render: one finer than the native
// zoom, the native, one coarser (still from the full resolution) and two
// coarser (from the first overview); with -short only the native zoom and two
// coarser.
func zooms(native int) []int {
	if testing.Short() {
		return []int{native - 2, native}
	}
	return []int{native - 2, native - 1, native, native + 1}
}

// tileRange is the block of tiles over bounds (degrees) at zoom z.
func tileRange(b [4]float64, z int) (x0, y0, nx, ny int) {
	const in = 1e-9
	x0, y0 = tileAt(b[0]+in, b[3]-in, z)
	x1, y1 := tileAt(b[2]-in, b[1]+in, z)
	return x0, y0, x1 - x0 + 1, y1 - y0 + 1
}

// TestElevationFidelity renders a float32 DEM in UTM with a nodata hole,
// encodes it as terrain-RGB, decodes it and holds it to gdalwarp's bilinear
// heights: from the full-resolution level within 0.1 m at the median pixel
// and 0.5 m at the 95th percentile, from an overview within 0.25 m and 1 m.
func TestElevationFidelity(t *testing.T) {
	t.Parallel()
	requireGDAL(t)
	dir := t.TempDir()
	const w, h = 500, 400
	dem := pixels{w: w, h: h, bands: 1, f: make([]float32, w*h)}
	for y := range h {
		for x := range w {
			fx, fy := float64(x), float64(y)
			v := 800 + 300*math.Sin(fx/47)*math.Cos(fy/31) + 0.8*fx - 0.3*fy
			if math.Hypot(fx-250, fy-200) < 40 {
				v = -9999
			}
			dem.f[y*w+x] = float32(v)
		}
	}
	nd := -9999.0
	src := buildSource(t, dir, "dem", sourceSpec{epsg: 32632, ulx: 301234, uly: 5102345, px: 20, py: -20,
		full: dem, nodata: &nd, overviews: 2, tile: 128})
	src.raster.Float = true
	ts, err := xyz.New(src.raster, xyz.Config{})
	if err != nil {
		t.Fatal(err)
	}
	md := ts.Metadata()
	for _, z := range zooms(md.MaxZoom) {
		t.Run(fmt.Sprint(z), func(t *testing.T) {
			t.Parallel()
			x0, y0, nx, ny := tileRange(md.Bounds, z)
			ref := warpTiles(t, dir, src.tif, z, x0, y0, nx, ny, md.TileSize, true)
			diffs := map[int][]float64{} // by level
			holes := 0
			for j := range ny {
				for i := range nx {
					p, err := ts.Plan(z, x0+i, y0+j)
					if err != nil || p.Kind != xyz.Resample {
						t.Fatalf("got %v, %v, want a resample", p.Kind, err)
					}
					f, err := ts.RenderFloat(context.Background(), src.tiles(), p)
					if err != nil {
						t.Fatal(err)
					}
					rgb := terrain.RGB(f)
					r := ref.sub(i, j, md.TileSize)
					for k, h := range r.f {
						px := rgb.Pix[4*k:][:4]
						if math.IsNaN(float64(h)) || px[3] == 0 {
							if math.IsNaN(float64(h)) != (px[3] == 0) && !r.nearNaN(k%r.w, k/r.w) {
								holes++
							}
							continue
						}
						diffs[p.Level] = append(diffs[p.Level], math.Abs(terrain.DecodeRGB(px[0], px[1], px[2])-float64(h)))
					}
				}
			}
			if holes != 0 {
				t.Errorf("got %d nodata disagreements off the seam, want 0", holes)
			}
			for level, d := range diffs {
				slices.Sort(d)
				med, p95 := d[len(d)/2], d[len(d)*95/100]
				t.Logf("level %d: %d pixels, median %.3f m, p95 %.3f m, max %.3f m", level, len(d), med, p95, d[len(d)-1])
				// From an overview the four-neighbour bilinear of an averaged
				// level departs further from GDAL's kernel, which widens with
				// the downsampling and reads the full resolution.
				wantMed, wantP95 := 0.1, 0.5
				if level > 0 {
					wantMed, wantP95 = 0.25, 1
				}
				if med > wantMed || p95 > wantP95 {
					t.Errorf("level %d: got median %.3f m, p95 %.3f m, want ≤ %g and ≤ %g", level, med, p95, wantMed, wantP95)
				}
			}
		})
	}
}
