package tiff

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// TestWholeJPEG checks the no-decode path: a stored JPEG tile made whole
// decodes, with image/jpeg and with libvips (libjpeg), to what libtiff
// gives for the same tile.
func TestWholeJPEG(t *testing.T) {
	needVips(t)
	needGDAL(t)
	t.Parallel()
	rgb := source{600, 400, 3, false}
	tests := []struct {
		name        string
		tool        string
		args        []string
		src         source
		photometric Photometric
		marker      []byte // the application marker after SOI
	}{
		{"libvips ycbcr", "vips", []string{"--compression", "jpeg", "--Q", "80"}, rgb, PhotometricYCbCr, []byte("\xff\xe0\x00\x10JFIF\x00")},
		{"libvips rgb", "vips", []string{"--compression", "jpeg", "--Q", "95"}, rgb, PhotometricRGB, []byte("\xff\xee\x00\x0eAdobe")},
		{"libvips gray", "vips", []string{"--compression", "jpeg"}, source{600, 400, 1, false}, PhotometricMinIsBlack, []byte("\xff\xe0\x00\x10JFIF\x00")},
		{"gdal cog ycbcr", "gdal", []string{"-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=JPEG"}, rgb, PhotometricYCbCr, []byte("\xff\xe0\x00\x10JFIF\x00")},
		{"gdal rgb", "gdal", []string{"-of", "GTiff", "-co", "TILED=YES", "-co", "COMPRESS=JPEG", "-co", "PHOTOMETRIC=RGB"}, rgb, PhotometricRGB, []byte("\xff\xee\x00\x0eAdobe")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src, path := filepath.Join(dir, "src.png"), filepath.Join(dir, "out.tif")
			tc.src.writePNG(t, src)
			if tc.tool == "vips" {
				run(t, "vips", append([]string{"tiffsave", src, path, "--tile", "--pyramid", "--tile-width", "256", "--tile-height", "256"}, tc.args...)...)
			} else {
				run(t, "gdal_translate", append(append([]string{"-q"}, tc.args...), src, path)...)
			}
			f, _ := openFile(t, path)
			l := f.Levels[0]
			if l.Photometric != tc.photometric {
				t.Fatalf("got photometric %d, want %d", l.Photometric, tc.photometric)
			}
			ref := vipsLevel(t, path, 0, false, l.Width, l.Height, tc.src.bands)
			b, _ := os.ReadFile(path)
			// An inner tile and the bottom-right edge tile.
			for _, p := range []image.Point{{1, 0}, {l.TilesAcross - 1, l.TilesDown - 1}} {
				raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(b)), []image.Point{p}, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				whole, err := l.WholeJPEG(raws[0].Data)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(whole[2:], tc.marker) {
					t.Errorf("tile %v: got %q after SOI, want %q", p, whole[2:2+len(tc.marker)], tc.marker)
				}
				goImg, err := jpeg.Decode(bytes.NewReader(whole))
				if err != nil {
					t.Fatal(err)
				}
				jpg := filepath.Join(dir, fmt.Sprintf("tile%d_%d.jpg", p.X, p.Y))
				if err := os.WriteFile(jpg, whole, 0o644); err != nil {
					t.Fatal(err)
				}
				vipsImg := vipsJPEG(t, jpg, l.TileWidth, l.TileHeight, tc.src.bands)
				// libvips decodes with libjpeg, as libtiff does: within 1
				// everywhere. image/jpeg differs as in the decode tests.
				for _, dec := range []struct {
					name        string
					img         image.Image
					limit, edge float64
				}{{"image/jpeg", goImg, jpegMax, jpegEdge}, {"libvips", vipsImg, 1, 1}} {
					d := diff{limit: dec.limit}
					compareTile(&d, &Tile{Image: dec.img}, l, p.X, p.Y, ref)
					if d.mean() > jpegMean || d.over > d.n/1000 || d.max > dec.edge {
						t.Errorf("tile %v decoded by %s: got mean difference %.3f, %d samples over %v, at most %v (%s); want at most %v, %d, %v",
							p, dec.name, d.mean(), d.over, dec.limit, d.max, d.where, jpegMean, d.n/1000, dec.edge)
					}
				}
			}
		})
	}
}

// vipsJPEG decodes a JPEG file with libvips into an image of bands bands.
func vipsJPEG(t *testing.T, path string, w, h, bands int) image.Image {
	t.Helper()
	out := path + ".raw"
	run(t, "vips", "rawsave", path, out)
	raw := readRaw(t, out, w, h, bands, "uint8")
	if bands == 1 {
		return &image.Gray{Pix: raw.pix, Stride: w, Rect: image.Rect(0, 0, w, h)}
	}
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range w * h {
		copy(rgba.Pix[4*i:], raw.pix[3*i:3*i+3])
		rgba.Pix[4*i+3] = 255
	}
	return rgba
}
