package upload

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
	tiffdataset "github.com/tilesieve/tilesieve/shared/formats/tiff/dataset"
)

// isImageExt reports whether ext (lower case, no dot) is a TIFF's: the
// image ID.tif, and at the top level the tileset NAME/ when it is
// georeferenced.
func isImageExt(ext string) bool { return ext == "tif" || ext == "tiff" }

// checkImage validates the TIFF at p, of size bytes, as the tile function
// reads it: tiled and pyramidal, in compressions and samples it decodes
// (tiff.Validate, whose message says what to run); and, when it is
// georeferenced, in a coordinate reference system the map view serves
// (its message gives the gdalwarp command). upload cannot tell where
// TILES_PREFIX ends, so a georeferenced TIFF is held to the map view's
// rules at any depth. So a TIFF the server would refuse is never uploaded.
func checkImage(ctx context.Context, p, name string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return badSource(err, "")
	}
	defer f.Close()
	tf, err := tiff.Open(ctx, tiff.ReaderAt(f), size, tiff.Options{})
	if err != nil {
		return badSource(err, "%s: not a TIFF tilesieve reads", p)
	}
	if err := tiff.Validate(tf); err != nil {
		return badSource(err, "%s: not servable", p)
	}
	ds, err := tiffdataset.Open(ctx, formats.Object{Name: name, Size: size, Range: formats.ReaderAt(f)}, formats.Options{View: formats.ViewTiles})
	switch {
	case errors.Is(err, formats.ErrNotTileset):
		return nil // an image without georeferencing: IIIF only
	case err != nil:
		return badSource(err, "%s: georeferenced, but not servable as map tiles", p)
	}
	if err := ds.Close(); err != nil {
		return fmt.Errorf("upload: %s: %w", p, err)
	}
	return nil
}
