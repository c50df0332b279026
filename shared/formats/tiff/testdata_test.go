package tiff

import (
	"encoding/binary"
	"image"
	"math"
	"testing"
)

// TestTestdataFiles checks the committed files written by libvips and
// GDAL (testdata/README.md), so that this much runs without the tools.
func TestTestdataFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file        string
		sizes       [][2]int
		compression Compression
		check       func(t *testing.T, f *File)
	}{
		{"vips-jpeg-pyramid.tif", [][2]int{{96, 64}, {48, 32}, {24, 16}, {12, 8}}, CompressionJPEG, checkVipsJPEG},
		{"vips-deflate-subifd.tif", [][2]int{{64, 48}, {32, 24}, {16, 12}}, CompressionDeflate, checkVipsSubIFD},
		{"gdal-jpeg-mask.tif", [][2]int{{160, 120}, {80, 60}}, CompressionJPEG, checkGDALMask},
		{"gdal-float-predictor3.tif", [][2]int{{100, 80}}, CompressionLZW, checkGDALFloat},
		{"gdal-int16-bigendian.tif", [][2]int{{32, 32}}, CompressionDeflate, checkGDALInt16},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			f, _ := openFile(t, "testdata/"+tc.file)
			if f.OpenStats.Reads != 1 {
				t.Errorf("got %d reads to open, want 1", f.OpenStats.Reads)
			}
			if len(f.Levels) != len(tc.sizes) {
				t.Fatalf("got %d levels, want %d (skipped %+v)", len(f.Levels), len(tc.sizes), f.Skipped)
			}
			for i, l := range f.Levels {
				if l.Width != tc.sizes[i][0] || l.Height != tc.sizes[i][1] || l.Compression != tc.compression {
					t.Errorf("level %d: got %dx%d %v, want %dx%d %v", i, l.Width, l.Height, l.Compression, tc.sizes[i][0], tc.sizes[i][1], tc.compression)
				}
				decodeLevel(t, "testdata/"+tc.file, l, l.Mask != nil)
			}
			if err := Validate(f); err != nil {
				t.Errorf("Validate: %v", err)
			}
			tc.check(t, f)
		})
	}
}

func checkGeo(t *testing.T, f *File, epsg int, gt [6]float64) {
	t.Helper()
	g, err := f.Georeferencing()
	if err != nil {
		t.Fatal(err)
	}
	if g.EPSG != epsg || g.GeoTransform != gt {
		t.Errorf("got EPSG %d, geotransform %v; want %d, %v", g.EPSG, g.GeoTransform, epsg, gt)
	}
}

func checkVipsJPEG(t *testing.T, f *File) {
	if l := f.Levels[0]; l.Photometric != PhotometricYCbCr || len(l.JPEGTables) == 0 {
		t.Errorf("got photometric %d, %d bytes of tables; want YCbCr with tables", l.Photometric, len(l.JPEGTables))
	}
}

func checkVipsSubIFD(t *testing.T, f *File) {
	if f.Levels[0].SubIFD || !f.Levels[1].SubIFD || !f.Levels[2].SubIFD {
		t.Error("got the reduced levels outside the SubIFDs")
	}
	_, tiles := decodeLevel(t, "testdata/vips-deflate-subifd.tif", f.Levels[0], false)
	// The source is (7x + 3y) mod 256; tile 0 holds x, y < 16.
	g, ok := tiles[0].Image.(*image.Gray)
	if !ok {
		t.Fatalf("got %T, want *image.Gray", tiles[0].Image)
	}
	for _, p := range [][2]int{{0, 0}, {15, 3}, {9, 15}} {
		if got, want := g.GrayAt(p[0], p[1]).Y, uint8((7*p[0]+3*p[1])%256); got != want {
			t.Errorf("pixel %v: got %d, want %d", p, got, want)
		}
	}
}

func checkGDALMask(t *testing.T, f *File) {
	if f.Structure == nil || !f.Structure.MaskInterleaved {
		t.Errorf("got structural metadata %+v, want masks interleaved", f.Structure)
	}
	for i, l := range f.Levels {
		if l.Mask == nil || l.Mask.Bits != 1 || l.Mask.Compression != CompressionDeflate {
			t.Fatalf("level %d: got mask %+v, want a 1-bit Deflate one", i, l.Mask)
		}
	}
	_, tiles := decodeLevel(t, "testdata/gdal-jpeg-mask.tif", f.Levels[0], true)
	if a, b := tiles[0].Mask.AlphaAt(5, 5).A, tiles[0].Mask.AlphaAt(100, 100).A; a != 0 || b != 255 {
		t.Errorf("got mask %d in the transparent corner and %d outside it, want 0 and 255", a, b)
	}
}

func checkGDALFloat(t *testing.T, f *File) {
	checkGeo(t, f, 32633, [6]float64{500000, 10, 0, 4100000, 0, -10})
	if f.NoData == nil || !math.IsNaN(*f.NoData) {
		t.Errorf("got nodata %v, want NaN", f.NoData)
	}
	if v, ok := f.Metadata.Get("", "TILING_SCHEME_NAME"); !ok || v != "test" {
		t.Errorf("got TILING_SCHEME_NAME %q %v, want test", v, ok)
	}
	_, tiles := decodeLevel(t, "testdata/gdal-float-predictor3.tif", f.Levels[0], false)
	for _, p := range [][2]int{{0, 0}, {15, 3}, {99, 79}} {
		want := math.Round(2*100*math.Sin(float64(p[0])/10)*math.Cos(float64(p[1])/7)) / 2
		if got := tiles[0].Raster.At(p[0], p[1]); float64(got) != want {
			t.Errorf("pixel %v: got %v, want %v", p, got, want)
		}
	}
}

func checkGDALInt16(t *testing.T, f *File) {
	if f.ByteOrder != binary.BigEndian || f.Levels[0].Predictor != PredictorHorizontal {
		t.Errorf("got %v, predictor %d; want big-endian, predictor 2", f.ByteOrder, f.Levels[0].Predictor)
	}
	checkGeo(t, f, 4326, [6]float64{10, 1.0 / 32, 0, 50, 0, -1.0 / 32})
	raws, tiles := decodeLevel(t, "testdata/gdal-int16-bigendian.tif", f.Levels[0], false)
	for i, tile := range tiles {
		x0, y0 := raws[i].Tile.X*16, raws[i].Tile.Y*16
		for _, p := range [][2]int{{0, 0}, {7, 9}, {15, 15}} {
			want := float32((x0+p[0])*100 - (y0+p[1])*50)
			if got := tile.Raster.At(p[0], p[1]); got != want {
				t.Errorf("tile %v pixel %v: got %v, want %v", raws[i].Tile, p, got, want)
			}
		}
	}
}
