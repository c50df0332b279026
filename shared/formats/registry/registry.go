// Package registry pairs each format of formats.Table with the code that
// opens it. The tile function and the upload command read formats through
// it; the sync worker, which needs only formats.Table, does not link it.
package registry

import (
	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/dataset"
)

// openers opens each format of formats.Table, by its name.
var openers = map[string]formats.Opener{
	"pmtiles": pmtiles.OpenDataset,
	"mbtiles": mbtiles.OpenDataset,
	"tiff":    dataset.Open,
}

// Opener returns the opener of the format called name.
func Opener(name string) (formats.Opener, bool) {
	o, ok := openers[name]
	return o, ok
}
