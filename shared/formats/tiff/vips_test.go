package tiff

import (
	"cmp"
	"fmt"
	"path/filepath"
	"testing"
)

// decodeCase is a file written by a tool, what Open must find in it, and
// how close its pixels must come to what the tool decodes.
type decodeCase struct {
	name        string
	src         source
	args        []string
	compression Compression
	photometric Photometric
	bigTIFF     bool
	subIFD      bool
	tile        int // tile width and height, 256 when 0
	// maxDiff is the difference allowed for a sample, meanDiff for the
	// mean; one sample in a thousand, and the edges of a level, may be
	// off by up to edgeDiff (see diff).
	maxDiff, meanDiff, edgeDiff float64
}

// JPEG (and lossy WebP) tiles decoded here differ from libjpeg's
// (libwebp's): the IDCTs differ, and Go upsamples chroma by repetition
// where libjpeg interpolates.
const jpegMax, jpegMean, jpegEdge = 24, 1.5, 96

func TestVipsPyramids(t *testing.T) {
	needVips(t)
	t.Parallel()
	rgb, noisyRGB := source{700, 500, 3, false}, source{700, 500, 3, true}
	tests := []decodeCase{
		// libvips writes YCbCr JPEG under Q 90, RGB from Q 90 up.
		{name: "jpeg ycbcr", src: rgb, args: []string{"--compression", "jpeg", "--Q", "75"},
			compression: CompressionJPEG, photometric: PhotometricYCbCr, maxDiff: jpegMax, meanDiff: jpegMean, edgeDiff: jpegEdge},
		{name: "jpeg rgb", src: rgb, args: []string{"--compression", "jpeg", "--Q", "90"},
			compression: CompressionJPEG, photometric: PhotometricRGB, maxDiff: jpegMax, meanDiff: jpegMean},
		{name: "jpeg gray", src: source{700, 500, 1, false}, args: []string{"--compression", "jpeg", "--Q", "90"},
			compression: CompressionJPEG, photometric: PhotometricMinIsBlack, maxDiff: jpegMax, meanDiff: jpegMean},
		{name: "jpeg bigtiff", src: rgb, args: []string{"--compression", "jpeg", "--bigtiff"},
			compression: CompressionJPEG, photometric: PhotometricYCbCr, bigTIFF: true, maxDiff: jpegMax, meanDiff: jpegMean, edgeDiff: jpegEdge},
		{name: "deflate rgb predictor", src: noisyRGB, args: []string{"--compression", "deflate", "--predictor", "horizontal"},
			compression: CompressionDeflate, photometric: PhotometricRGB},
		{name: "deflate rgb subifd", src: noisyRGB, args: []string{"--compression", "deflate", "--subifd"},
			compression: CompressionDeflate, photometric: PhotometricRGB, subIFD: true},
		{name: "lzw rgba predictor", src: source{700, 500, 4, true}, args: []string{"--compression", "lzw", "--predictor", "horizontal"},
			compression: CompressionLZW, photometric: PhotometricRGB},
		{name: "lzw gray alpha", src: source{700, 500, 2, true}, args: []string{"--compression", "lzw", "--predictor", "none"},
			compression: CompressionLZW, photometric: PhotometricMinIsBlack},
		{name: "none gray", src: source{700, 500, 1, true}, args: []string{"--compression", "none"},
			compression: CompressionNone, photometric: PhotometricMinIsBlack},
		{name: "packbits rgb", src: noisyRGB, args: []string{"--compression", "packbits"},
			compression: CompressionPackBits, photometric: PhotometricRGB},
		// Lossless WebP encodes slowly: a smaller image.
		{name: "webp lossless rgb", src: source{300, 200, 3, true}, args: []string{"--compression", "webp", "--lossless"},
			compression: CompressionWebP, photometric: PhotometricRGB, tile: 128},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src, path := filepath.Join(dir, "src.png"), filepath.Join(dir, "out.tif")
			tc.src.writePNG(t, src)
			tile := fmt.Sprint(cmp.Or(tc.tile, 256))
			args := append([]string{"tiffsave", src, path, "--tile", "--pyramid", "--tile-width", tile, "--tile-height", tile}, tc.args...)
			run(t, "vips", args...)
			f, _ := openFile(t, path)
			checkFile(t, f, tc, 3)
			for i, l := range f.Levels {
				ref := vipsLevel(t, path, i, tc.subIFD && i > 0, l.Width, l.Height, tc.src.bands)
				checkLevel(t, path, l, i, ref, tc)
			}
		})
	}
}

// checkFile checks what Open found against the case.
func checkFile(t *testing.T, f *File, tc decodeCase, levels int) {
	t.Helper()
	if len(f.Levels) != levels {
		t.Fatalf("got %d levels, want %d (skipped %+v)", len(f.Levels), levels, f.Skipped)
	}
	if f.BigTIFF != tc.bigTIFF {
		t.Errorf("got BigTIFF %v, want %v", f.BigTIFF, tc.bigTIFF)
	}
	if err := Validate(f); err != nil {
		t.Errorf("Validate: %v", err)
	}
	w, h := tc.src.w, tc.src.h
	for i, l := range f.Levels {
		// libvips rounds halved sizes down, GDAL up.
		if l.Width < w || l.Width > w+1 || l.Height < h || l.Height > h+1 || i == 0 && (l.Width != w || l.Height != h) {
			t.Errorf("level %d: got %dx%d, want %dx%d or one more", i, l.Width, l.Height, w, h)
		}
		w, h = l.Width/2, l.Height/2
		if l.Compression != tc.compression || l.Photometric != tc.photometric {
			t.Errorf("level %d: got %v photometric %d, want %v photometric %d", i, l.Compression, l.Photometric, tc.compression, tc.photometric)
		}
		if l.Bands != tc.src.bands || l.Bits != 8 {
			t.Errorf("level %d: got %d bands of %d bits, want %d of 8", i, l.Bands, l.Bits, tc.src.bands)
		}
		if want := tc.subIFD && i > 0; l.SubIFD != want {
			t.Errorf("level %d: got SubIFD %v, want %v", i, l.SubIFD, want)
		}
		if wantAlpha := map[int]int{2: 1, 4: 3}[tc.src.bands]; tc.src.bands%2 == 0 && l.Alpha != wantAlpha {
			t.Errorf("level %d: got alpha band %d, want %d", i, l.Alpha, wantAlpha)
		}
	}
}

// checkLevel decodes every tile of level i and compares it with ref.
func checkLevel(t *testing.T, path string, l *Level, i int, ref levelRaw, tc decodeCase) {
	t.Helper()
	raws, tiles := decodeLevel(t, path, l, false)
	d := diff{limit: tc.maxDiff}
	for j, tile := range tiles {
		compareTile(&d, tile, l, raws[j].Tile.X, raws[j].Tile.Y, ref)
	}
	if d.mean() > tc.meanDiff || d.over > d.n/1000 || d.max > max(tc.edgeDiff, tc.maxDiff) {
		t.Errorf("level %d (%dx%d): got mean difference %.3f, %d of %d samples off by more than %v, at most %v (%s); want at most %v, %d, %v",
			i, l.Width, l.Height, d.mean(), d.over, d.n, tc.maxDiff, d.max, d.where, tc.meanDiff, d.n/1000, max(tc.edgeDiff, tc.maxDiff))
	}
	t.Logf("level %d (%dx%d): mean difference %.3f, %d samples off by more than %v, at most %v", i, l.Width, l.Height, d.mean(), d.over, tc.maxDiff, d.max)
}
