package demoimage_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/tilesieve/tilesieve/infra/devstack/demoimage"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
)

// TestServable: the embedded file is what the tile function serves and
// what upload accepts (tiled, pyramidal, JPEG that answers stored tiles
// as they are), of the size the package says, and small.
func TestServable(t *testing.T) {
	t.Parallel()
	b := demoimage.TIFF
	if len(b) >= 1<<20 {
		t.Errorf("image.tif is %d bytes, want under 1 MiB", len(b))
	}
	f, err := tiff.Open(context.Background(), tiff.ReaderAt(bytes.NewReader(b)), int64(len(b)), tiff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tiff.Validate(f); err != nil {
		t.Fatal(err)
	}
	top := f.Levels[0]
	if top.Width != demoimage.Width || top.Height != demoimage.Height || top.TileWidth != demoimage.TileSize || top.TileHeight != demoimage.TileSize {
		t.Errorf("level 0: got %dx%d in %dx%d tiles, want %dx%d in %dx%d", top.Width, top.Height, top.TileWidth, top.TileHeight,
			demoimage.Width, demoimage.Height, demoimage.TileSize, demoimage.TileSize)
	}
	for i, l := range f.Levels {
		if l.Compression != tiff.CompressionJPEG {
			t.Errorf("level %d: compression %v, want JPEG", i, l.Compression)
		}
	}
	if _, err := f.Georeferencing(); err == nil {
		t.Errorf("the demo image is georeferenced: it would be a map tileset too")
	}
}
