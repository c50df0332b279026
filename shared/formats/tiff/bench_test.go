package tiff

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// benchFile writes a file with a tool once per benchmark and returns its
// bytes.
func benchFile(b *testing.B, tool string, src source, args ...string) []byte {
	b.Helper()
	dir := b.TempDir()
	in, out := filepath.Join(dir, "src.png"), filepath.Join(dir, "out.tif")
	src.writePNG(b, in)
	if tool == "vips" {
		run(b, "vips", append([]string{"tiffsave", in, out}, args...)...)
	} else {
		run(b, "gdal_translate", append(append([]string{"-q"}, args...), in, out)...)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkOpen opens a 4096x4096 GDAL COG (JPEG with masks, 512-pixel
// tiles, four overviews) held in memory.
func BenchmarkOpen(b *testing.B) {
	needGDAL(b)
	needVips(b)
	data := benchFile(b, "gdal", source{4096, 4096, 4, false}, "-of", "COG", "-co", "COMPRESS=JPEG", "-co", "BLOCKSIZE=512")
	r := ReaderAt(bytes.NewReader(data))
	b.ReportAllocs()
	for b.Loop() {
		f, err := Open(context.Background(), r, int64(len(data)), Options{})
		if err != nil || len(f.Levels) != 4 {
			b.Fatalf("got %v levels, %v", len(f.Levels), err)
		}
	}
}

// jpegTile is a stored 512x512 JPEG tile (YCbCr, 4:2:0, Q 85) of a
// libvips pyramid, and its level.
func jpegTile(b *testing.B) (*Level, Raw) {
	b.Helper()
	needVips(b)
	data := benchFile(b, "vips", source{1024, 1024, 3, true}, "--tile", "--pyramid", "--compression", "jpeg", "--Q", "85",
		"--tile-width", "512", "--tile-height", "512")
	f, err := Open(context.Background(), ReaderAt(bytes.NewReader(data)), int64(len(data)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	l := f.Levels[0]
	raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(data)), []image.Point{{1, 1}}, ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return l, raws[0]
}

func BenchmarkDecodeJPEGTile(b *testing.B) {
	l, raw := jpegTile(b)
	b.SetBytes(int64(len(raw.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJPEGTileFloor is the floor of BenchmarkDecodeJPEGTile:
// image/jpeg decoding the same tile already made whole.
func BenchmarkDecodeJPEGTileFloor(b *testing.B) {
	l, raw := jpegTile(b)
	whole, err := l.WholeJPEG(raw.Data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jpeg.Decode(bytes.NewReader(whole)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWholeJPEG(b *testing.B) {
	l, raw := jpegTile(b)
	b.SetBytes(int64(len(raw.Data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.WholeJPEG(raw.Data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeDeflateTile decodes a 512x512 RGB Deflate tile with the
// horizontal predictor, for comparison with JPEG.
func BenchmarkDecodeDeflateTile(b *testing.B) {
	needVips(b)
	data := benchFile(b, "vips", source{1024, 1024, 3, true}, "--tile", "--compression", "deflate", "--predictor", "horizontal",
		"--tile-width", "512", "--tile-height", "512")
	f, err := Open(context.Background(), ReaderAt(bytes.NewReader(data)), int64(len(data)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	l := f.Levels[0]
	raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(data)), []image.Point{{1, 1}}, ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raws[0].Data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Decode(raws[0]); err != nil {
			b.Fatal(err)
		}
	}
}
