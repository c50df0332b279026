package tiff

import (
	"bytes"
	"context"
	"image"
	"os"
	"path/filepath"
	"testing"

	tt "github.com/tilesieve/tilesieve/shared/formats/tiff/internal/tifftest"
)

// fuzzOptions keeps each fuzz input cheap.
var fuzzOptions = Options{
	MaxIFDs: 16, MaxIFDBytes: 1 << 20, MaxTilesPerLevel: 1024, MaxSide: 1 << 14,
	MaxTilePixels: 1 << 16, MaxStoredTileBytes: 1 << 20, MaxTileBytes: 1 << 20,
}

// FuzzOpen opens any bytes and decodes up to 16 tiles of every level:
// errors are fine; a panic, a tile of the wrong size or a read outside the
// object are not.
func FuzzOpen(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.tif")
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(tt.File{Blobs: tiles(), IFDs: [][]tt.Entry{ifd0()}}.Bytes())
	f.Add(tt.File{Big: true, Blobs: tiles(), IFDs: [][]tt.Entry{with(ifd0(), tt.Ints(tagCompression, tt.Short, 8))}}.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &boundedReader{t: t, b: b}
		file, err := Open(context.Background(), r, int64(len(b)), fuzzOptions)
		if err != nil {
			return
		}
		_ = Validate(file)
		_, _ = file.Georeferencing()
		for i, l := range file.Levels {
			_, _ = file.LevelTransform(i)
			fuzzLevel(t, r, l)
		}
	})
}

func fuzzLevel(t *testing.T, r RangeReader, l *Level) {
	pts := allTiles(l)
	raws, _, err := l.ReadTiles(context.Background(), r, pts[:min(16, len(pts))], ReadOptions{Mask: true})
	if err != nil {
		return
	}
	for _, raw := range raws {
		if l.Compression == CompressionJPEG && raw.Data != nil {
			_, _ = l.WholeJPEG(raw.Data)
		}
		tile, err := l.Decode(raw)
		if err != nil {
			continue
		}
		want := image.Rect(0, 0, l.TileWidth, l.TileHeight)
		switch {
		case tile.Image != nil && tile.Image.Bounds() != want:
			t.Fatalf("got a tile of %v, want %v", tile.Image.Bounds(), want)
		case tile.Raster != nil && (tile.Raster.Width != l.TileWidth || len(tile.Raster.Pix) != l.TileWidth*l.TileHeight):
			t.Fatalf("got a raster of %dx%d, want %v", tile.Raster.Width, tile.Raster.Height, want)
		case tile.Mask != nil && tile.Mask.Bounds() != want:
			t.Fatalf("got a mask of %v, want %v", tile.Mask.Bounds(), want)
		}
	}
}

// boundedReader fails the test on a read outside the object.
type boundedReader struct {
	t *testing.T
	b []byte
}

func (r *boundedReader) ReadRange(_ context.Context, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > int64(len(r.b)) || n > int64(len(r.b))-off {
		r.t.Fatalf("read %d bytes at %d of a %d-byte object", n, off, len(r.b))
	}
	return bytes.Clone(r.b[off : off+n]), nil
}
