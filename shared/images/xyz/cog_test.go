package xyz_test

import (
	"context"
	"fmt"
	"image"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/geo"
	"github.com/tilesieve/tilesieve/shared/images/xyz"
)

// TestGoogleMapsCompatibleCOG reads the geotransform and level sizes of COGs
// GDAL writes, with and without -co TILING_SCHEME=GoogleMapsCompatible, and
// checks which levels are found aligned, then that each aligned level's
// stored tile is the XYZ tile the plan names: the same bounds, and the same
// pixels as gdalwarp -r near gives for those bounds.
func TestGoogleMapsCompatibleCOG(t *testing.T) {
	t.Parallel()
	requireGDAL(t)
	dir := t.TempDir()
	// 700 × 600 pixels of 30 m whose corner lies in an odd column of zoom
	// 12's grid, so that no overview is aligned unless GDAL pads for it.
	raw := filepath.Join(dir, "src.bin")
	writeENVI(t, raw, pattern(700, 600, 3))
	src := filepath.Join(dir, "src.tif")
	run(t, "gdal_translate", "-q", "-a_srs", "EPSG:3857", "-a_ullr", "1010000", "6000000", "1031000", "5982000", raw, src)
	tests := []struct {
		name     string
		co       []string
		aligned  []int // levels
		tileSize int
	}{
		{"full resolution only", []string{"TILING_SCHEME=GoogleMapsCompatible"}, []int{0}, 256},
		{"three aligned levels", []string{"TILING_SCHEME=GoogleMapsCompatible", "ALIGNED_LEVELS=3"}, []int{0, 1, 2}, 256},
		{"512-pixel tiles", []string{"TILING_SCHEME=GoogleMapsCompatible", "BLOCKSIZE=512"}, []int{0}, 512},
		{"plain EPSG:3857", nil, nil, 256},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cog := filepath.Join(dir, fmt.Sprintf("cog%d.tif", i))
			args := []string{"-q", "-of", "COG"}
			for _, co := range tt.co {
				args = append(args, "-co", co)
			}
			run(t, "gdal_translate", append(args, src, cog)...)
			info := readInfo(t, cog)
			r := rasterOf(info)
			ts, err := xyz.New(r, xyz.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := ts.Check(); err != nil {
				t.Error(err)
			}
			var aligned []int
			for l := range r.Levels {
				if _, ok := ts.Aligned(l); ok {
					aligned = append(aligned, l)
				}
			}
			md := ts.Metadata()
			if !slices.Equal(aligned, tt.aligned) || md.TileSize != tt.tileSize {
				t.Fatalf("got aligned levels %v, tile size %d; want %v, %d", aligned, md.TileSize, tt.aligned, tt.tileSize)
			}
			if zl := info.Metadata["TILING_SCHEME"]["ZOOM_LEVEL"]; zl != "" && strconv.Itoa(md.MaxZoom) != zl {
				t.Errorf("got max zoom %d, want the file's ZOOM_LEVEL %s", md.MaxZoom, zl)
			}
			for _, l := range aligned {
				checkStored(t, dir, cog, ts, l)
			}
		})
	}
}

// checkStored plans the XYZ tile at the centre of the data (made in
// TestGoogleMapsCompatibleCOG) at an aligned
// level's zoom and compares it with the stored tile there, in bounds and in
// pixels.
func checkStored(t *testing.T, dir, cog string, ts *xyz.Tileset, level int) {
	t.Helper()
	lv, gt, _ := ts.Level(level)
	l0, _, _ := ts.Level(0)
	z, _ := ts.Aligned(level)
	side := float64(lv.TileWidth)
	// The stored tile under the centre of the data (GDAL pads the level
	// with empty tiles to align it, so the level's centre may be empty).
	const cx, cy = 1020500, 5991000
	st := xyz.TileIndex{X: int((cx - gt[0]) / gt[1] / side), Y: int((cy - gt[3]) / gt[5] / side)}
	lon, lat := geo.MercatorToLonLat(cx, cy)
	x, y := tileAt(lon, lat, z)
	p, err := ts.Plan(z, x, y)
	if err != nil || p.Kind != xyz.Stored || p.Level != level || p.Stored != st {
		t.Fatalf("level %d: got %+v, %v; want stored tile %v of level %d", level, p, err, st, level)
	}
	b := xyz.TileBounds(z, x, y)
	x0, y0 := float64(st.X)*side, float64(st.Y)*side
	want := [4]float64{gt[0] + x0*gt[1], gt[3] + (y0+side)*gt[5], gt[0] + (x0+side)*gt[1], gt[3] + y0*gt[5]}
	for i := range b {
		if math.Abs(b[i]-want[i]) > 1e-6*gt[1] {
			t.Fatalf("level %d: tile %d/%d/%d has bounds %v, stored tile 1/1 %v", level, z, x, y, b, want)
		}
	}
	// The stored tile through the tile source, rendered as it is.
	ovr := "NONE"
	if level > 0 {
		ovr = strconv.Itoa(level - 1)
	}
	src := xyz.TileSourceFunc(func(_ context.Context, l, sx, sy int) (xyz.Block, error) {
		out := filepath.Join(dir, fmt.Sprintf("%s-%d-%d-%d.bin", filepath.Base(cog), l, sx, sy))
		// -srcwin counts full-resolution pixels, -ovr picks the level.
		f := l0.Width / lv.Width
		run(t, "gdal_translate", "-q", "-ovr", ovr, "-srcwin", strconv.Itoa(sx*lv.TileWidth*f), strconv.Itoa(sy*lv.TileHeight*f),
			strconv.Itoa(lv.TileWidth*f), strconv.Itoa(lv.TileHeight*f), "-of", "ENVI", "-co", "INTERLEAVE=BIP", cog, out)
		return xyz.Block{Image: toNRGBA(readENVI(t, out))}, nil
	})
	got, err := ts.RenderImage(context.Background(), src, p)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, fmt.Sprintf("%s-warp-%d.bin", filepath.Base(cog), level))
	run(t, "gdalwarp", "-q", "-te", g17(b[0]), g17(b[1]), g17(b[2]), g17(b[3]), "-ts", strconv.Itoa(lv.TileWidth),
		strconv.Itoa(lv.TileHeight), "-r", "near", "-of", "ENVI", "-co", "INTERLEAVE=BIP", cog, out)
	ref := toNRGBA(readENVI(t, out))
	for i := 0; i < len(ref.Pix); i += 4 {
		g, r := got.Pix[i:i+4], ref.Pix[i:i+4]
		if g[3] != r[3] || (r[3] != 0 && !slices.Equal(g, r)) {
			t.Fatalf("level %d pixel %d: got %v, gdalwarp %v", level, i/4, g, r)
		}
	}
}

// toNRGBA makes an image of 3 (RGB) or 4 (RGBA) interleaved bands.
func toNRGBA(p pixels) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, p.w, p.h))
	for i := range p.w * p.h {
		s := p.b[i*p.bands:][:p.bands]
		img.Pix[4*i], img.Pix[4*i+1], img.Pix[4*i+2], img.Pix[4*i+3] = s[0], s[1], s[2], 255
		if p.bands == 4 {
			img.Pix[4*i+3] = s[3]
		}
	}
	return img
}
