package tiff

import (
	"math"
	"path/filepath"
	"testing"
)

func TestGDALImages(t *testing.T) {
	needGDAL(t)
	needVips(t) // writes the gray+alpha and opaque sources
	t.Parallel()
	cog := func(opts ...string) []string {
		return append([]string{"-of", "COG", "-co", "BLOCKSIZE=256"}, opts...)
	}
	rgb, noisyRGB := source{700, 500, 3, false}, source{700, 500, 3, true}
	tests := []struct {
		decodeCase
		bands  int  // bands in the file, when not the source's
		mask   bool // the file has masks
		levels int
	}{
		{decodeCase: decodeCase{name: "cog jpeg", src: rgb, args: cog("-co", "COMPRESS=JPEG", "-co", "QUALITY=90"),
			compression: CompressionJPEG, photometric: PhotometricYCbCr, maxDiff: jpegMax, meanDiff: jpegMean, edgeDiff: jpegEdge}, levels: 3},
		// GDAL writes the alpha of an RGBA source as a mask beside JPEG.
		{decodeCase: decodeCase{name: "cog jpeg mask", src: source{700, 500, 4, false}, args: cog("-co", "COMPRESS=JPEG"),
			compression: CompressionJPEG, photometric: PhotometricYCbCr, maxDiff: jpegMax, meanDiff: jpegMean, edgeDiff: jpegEdge},
			bands: 3, mask: true, levels: 3},
		{decodeCase: decodeCase{name: "cog jpeg bigtiff", src: rgb, args: cog("-co", "COMPRESS=JPEG", "-co", "BIGTIFF=YES"),
			compression: CompressionJPEG, photometric: PhotometricYCbCr, bigTIFF: true, maxDiff: jpegMax, meanDiff: jpegMean, edgeDiff: jpegEdge}, levels: 3},
		{decodeCase: decodeCase{name: "cog deflate predictor", src: noisyRGB, args: cog("-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"),
			compression: CompressionDeflate, photometric: PhotometricRGB}, levels: 3},
		{decodeCase: decodeCase{name: "cog lzw gray predictor", src: source{700, 500, 1, true}, args: cog("-co", "COMPRESS=LZW", "-co", "PREDICTOR=2"),
			compression: CompressionLZW, photometric: PhotometricMinIsBlack}, levels: 3},
		{decodeCase: decodeCase{name: "cog deflate rgba", src: source{700, 500, 4, true}, args: cog("-co", "COMPRESS=DEFLATE"),
			compression: CompressionDeflate, photometric: PhotometricRGB}, levels: 3},
		{decodeCase: decodeCase{name: "cog webp", src: rgb, args: cog("-co", "COMPRESS=WEBP", "-co", "QUALITY=90"),
			compression: CompressionWebP, photometric: PhotometricRGB, maxDiff: jpegMax, meanDiff: jpegMean, edgeDiff: jpegEdge}, levels: 3},
		// GDAL 3.6's COG driver has no WEBP_LOSSLESS; its GTiff driver has.
		{decodeCase: decodeCase{name: "gtiff webp lossless", src: source{300, 200, 3, true},
			args:        []string{"-of", "GTiff", "-co", "TILED=YES", "-co", "COMPRESS=WEBP", "-co", "WEBP_LOSSLESS=TRUE"},
			compression: CompressionWebP, photometric: PhotometricRGB}, levels: 1},
		// A big-endian tiled GeoTIFF: GDAL's COG driver writes only
		// little-endian files.
		{decodeCase: decodeCase{name: "gtiff big-endian deflate predictor", src: noisyRGB,
			args:        []string{"-of", "GTiff", "-co", "TILED=YES", "-co", "ENDIANNESS=BIG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2"},
			compression: CompressionDeflate, photometric: PhotometricRGB}, levels: 1},
		{decodeCase: decodeCase{name: "gtiff jpeg rgb", src: rgb,
			args:        []string{"-of", "GTiff", "-co", "TILED=YES", "-co", "COMPRESS=JPEG", "-co", "PHOTOMETRIC=RGB"},
			compression: CompressionJPEG, photometric: PhotometricRGB, maxDiff: jpegMax, meanDiff: jpegMean}, levels: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src, path := filepath.Join(dir, "src.png"), filepath.Join(dir, "out.tif")
			tc.src.writePNG(t, src)
			run(t, "gdal_translate", append(append([]string{"-q"}, tc.args...), src, path)...)
			f, _ := openFile(t, path)
			dc := tc.decodeCase
			if tc.bands != 0 {
				dc.src.bands = tc.bands
			}
			if dc.bigTIFF != f.BigTIFF || len(f.Levels) != tc.levels {
				t.Fatalf("got BigTIFF %v and %d levels, want %v and %d", f.BigTIFF, len(f.Levels), dc.bigTIFF, tc.levels)
			}
			checkFile(t, f, dc, tc.levels)
			for i, l := range f.Levels {
				ref := gdalLevel(t, path, i, false, l.Width, l.Height, dc.src.bands, "uint8")
				checkLevel(t, path, l, i, ref, dc)
				if (l.Mask != nil) != tc.mask {
					t.Fatalf("level %d: got a mask %v, want %v", i, l.Mask != nil, tc.mask)
				}
				if tc.mask {
					checkMask(t, path, l, i)
				}
			}
		})
	}
}

// checkMask compares the masks of level i with GDAL's mask band.
func checkMask(t *testing.T, path string, l *Level, i int) {
	t.Helper()
	ref := gdalLevel(t, path, i, true, l.Width, l.Height, 1, "uint8")
	raws, tiles := decodeLevel(t, path, l, true)
	var d diff // exact: limit 0
	for j, tile := range tiles {
		if tile.Mask == nil {
			t.Fatalf("tile %v: no mask decoded", raws[j].Tile)
		}
		compareMask(&d, tile.Mask, l, raws[j].Tile.X, raws[j].Tile.Y, ref)
	}
	if d.max != 0 {
		t.Errorf("level %d mask: got max difference %v at %s, want 0", i, d.max, d.where)
	}
}

func TestGDALElevation(t *testing.T) {
	needGDAL(t)
	t.Parallel()
	utm := []string{"-a_srs", "EPSG:32633", "-a_ullr", "500000", "4100000", "506000", "4096000"}
	utmGT := [6]float64{500000, 10, 0, 4100000, 0, -10}
	wgs := []string{"-a_srs", "EPSG:4326", "-a_ullr", "10", "50", "16", "46"}
	wgsGT := [6]float64{10, 0.01, 0, 50, 0, -0.01}
	cog := []string{"-of", "COG", "-co", "BLOCKSIZE=256"}
	bigGTiff := []string{"-of", "GTiff", "-co", "TILED=YES", "-co", "ENDIANNESS=BIG"}
	tests := []struct {
		name      string
		dem       dem
		args      []string
		levels    int
		format    SampleFormat
		bits      int
		predictor int
		epsg      int
		projected bool
		point     bool
		gt        [6]float64
		noData    float64
	}{
		{"int16 deflate predictor utm", dem{w: 600, h: 400, kind: "int16", nodata: -32768},
			append(append(cog, "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2", "-a_nodata", "-32768"), utm...),
			3, SampleInt, 16, 2, 32633, true, false, utmGT, -32768},
		{"float32 lzw predictor 3 wgs84 nan", dem{w: 600, h: 400, kind: "float32", nodata: math.NaN()},
			append(append(cog, "-co", "COMPRESS=LZW", "-co", "PREDICTOR=3", "-a_nodata", "nan"), wgs...),
			3, SampleFloat, 32, 3, 4326, false, false, wgsGT, math.NaN()},
		{"uint16 uncompressed pixel is point", dem{w: 600, h: 400, kind: "uint16", nodata: 0},
			append(append(cog, "-co", "COMPRESS=NONE", "-a_nodata", "0", "-mo", "AREA_OR_POINT=Point"), utm...),
			3, SampleUint, 16, 1, 32633, true, true, utmGT, 0},
		{"float32 big-endian deflate predictor 3", dem{w: 600, h: 400, kind: "float32", nodata: -9999},
			append(append(bigGTiff, "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3", "-a_nodata", "-9999"), utm...),
			1, SampleFloat, 32, 3, 32633, true, false, utmGT, -9999},
		{"int16 big-endian lzw predictor 2", dem{w: 600, h: 400, kind: "int16", nodata: -32768},
			append(append(bigGTiff, "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2", "-a_nodata", "-32768"), wgs...),
			1, SampleInt, 16, 2, 4326, false, false, wgsGT, -32768},
		{"int16 bigtiff", dem{w: 600, h: 400, kind: "int16", nodata: -1},
			append(append(cog, "-co", "COMPRESS=DEFLATE", "-co", "BIGTIFF=YES", "-a_nodata", "-1"), utm...),
			3, SampleInt, 16, 1, 32633, true, false, utmGT, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src, path := filepath.Join(dir, "src.bin"), filepath.Join(dir, "out.tif")
			tc.dem.writeENVI(t, src)
			run(t, "gdal_translate", append(append([]string{"-q", "-ot", map[string]string{"int16": "Int16", "uint16": "UInt16", "float32": "Float32"}[tc.dem.kind]}, tc.args...), src, path)...)
			f, _ := openFile(t, path)
			if len(f.Levels) != tc.levels {
				t.Fatalf("got %d levels, want %d (skipped %+v)", len(f.Levels), tc.levels, f.Skipped)
			}
			if err := Validate(f); err != nil {
				t.Errorf("Validate: %v", err)
			}
			checkGeoref(t, f, tc.epsg, tc.projected, tc.point, tc.gt)
			if f.NoData == nil || !(*f.NoData == tc.noData || math.IsNaN(*f.NoData) && math.IsNaN(tc.noData)) {
				t.Errorf("got nodata %v, want %v", f.NoData, tc.noData)
			}
			for i, l := range f.Levels {
				if l.SampleFormat != tc.format || l.Bits != tc.bits || l.Predictor != tc.predictor {
					t.Errorf("level %d: got format %d, %d bits, predictor %d; want %d, %d, %d", i, l.SampleFormat, l.Bits, l.Predictor, tc.format, tc.bits, tc.predictor)
				}
				ref := gdalLevel(t, path, i, false, l.Width, l.Height, 1, tc.dem.kind)
				checkLevel(t, path, l, i, ref, decodeCase{})
			}
		})
	}
}

// checkGeoref checks the georeferencing of f, its geotransform to 1e-9.
func checkGeoref(t *testing.T, f *File, epsg int, projected, point bool, gt [6]float64) {
	t.Helper()
	g, err := f.Georeferencing()
	if err != nil {
		t.Fatal(err)
	}
	if g.EPSG != epsg || g.Projected() != projected || g.PixelIsPoint != point {
		t.Errorf("got EPSG %d projected %v point %v, want %d %v %v", g.EPSG, g.Projected(), g.PixelIsPoint, epsg, projected, point)
	}
	for i := range g.GeoTransform {
		if math.Abs(g.GeoTransform[i]-gt[i]) > 1e-9*max(1, math.Abs(gt[i])) {
			t.Errorf("got geotransform %v, want %v", g.GeoTransform, gt)
			break
		}
	}
}

func TestGDALTilingSchemeAndMetadata(t *testing.T) {
	needGDAL(t)
	needVips(t)
	t.Parallel()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "src.png"), filepath.Join(dir, "out.tif")
	source{700, 500, 3, false}.writePNG(t, src)
	run(t, "gdal_translate", "-q", "-of", "COG", "-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "COMPRESS=JPEG",
		"-a_srs", "EPSG:4326", "-a_ullr", "10", "50", "17", "45",
		"-mo", "TIFFTAG_ARTIST=A. Surveyor", "-mo", "TIFFTAG_COPYRIGHT=CC-BY 4.0", "-mo", "TIFFTAG_IMAGEDESCRIPTION=test scene",
		"-mo", "SCENE_ID=42", src, path)
	f, _ := openFile(t, path)
	g, err := f.Georeferencing()
	if err != nil {
		t.Fatal(err)
	}
	if g.EPSG != 3857 || !g.Projected() {
		t.Errorf("got EPSG %d projected %v, want 3857 true", g.EPSG, g.Projected())
	}
	for _, want := range []struct{ domain, name, value string }{
		{"TILING_SCHEME", "NAME", "GoogleMapsCompatible"},
		{"", "TIFFTAG_ARTIST", "A. Surveyor"},
		{"", "TIFFTAG_COPYRIGHT", "CC-BY 4.0"},
		{"", "TIFFTAG_IMAGEDESCRIPTION", "test scene"},
		{"", "SCENE_ID", "42"},
	} {
		if got, ok := f.Metadata.Get(want.domain, want.name); !ok || got != want.value {
			t.Errorf("metadata %s/%s: got %q %v, want %q", want.domain, want.name, got, ok, want.value)
		}
	}
	if _, ok := f.Metadata.Get("TILING_SCHEME", "ZOOM_LEVEL"); !ok {
		t.Errorf("no TILING_SCHEME ZOOM_LEVEL in %+v", f.Metadata)
	}
	if l := f.Levels[0]; l.TileWidth != 256 || l.TileHeight != 256 {
		t.Errorf("got %dx%d tiles, want 256x256", l.TileWidth, l.TileHeight)
	}
	// Web-mercator levels halve exactly: the pixel size doubles per level.
	gt0, _ := f.LevelTransform(0)
	gt1, err := f.LevelTransform(1)
	if err != nil || math.Abs(gt1[1]-2*gt0[1]) > 1e-6 || gt1[0] != gt0[0] {
		t.Errorf("got level 1 transform %v (%v), want level 0's %v with twice the pixel size", gt1, err, gt0)
	}
}

func TestGDALSparse(t *testing.T) {
	needGDAL(t)
	t.Parallel()
	dir := t.TempDir()
	src, path := filepath.Join(dir, "src.bin"), filepath.Join(dir, "out.tif")
	d := dem{w: 600, h: 400, kind: "int16", nodata: -9999, hole: true}
	d.writeENVI(t, src)
	run(t, "gdal_translate", "-q", "-ot", "Int16", "-of", "COG", "-co", "BLOCKSIZE=256", "-co", "SPARSE_OK=TRUE",
		"-co", "COMPRESS=DEFLATE", "-a_nodata", "-9999", src, path)
	f, _ := openFile(t, path)
	l := f.Levels[0]
	if _, _, ok := l.TileRange(0, 0); ok {
		t.Fatal("tile (0,0) is stored, want it sparse")
	}
	if _, _, ok := l.TileRange(1, 0); !ok {
		t.Fatal("tile (1,0) is sparse, want it stored")
	}
	raws, tiles := decodeLevel(t, path, l, false)
	if !raws[0].Sparse || raws[0].Data != nil {
		t.Errorf("got Raw %+v for tile (0,0), want a sparse one", raws[0].Tile)
	}
	if got := tiles[0].Raster.At(10, 10); got != -9999 {
		t.Errorf("got %v in the sparse tile, want nodata -9999", got)
	}
	for i, l := range f.Levels {
		checkLevel(t, path, l, i, gdalLevel(t, path, i, false, l.Width, l.Height, 1, "int16"), decodeCase{})
	}
}
