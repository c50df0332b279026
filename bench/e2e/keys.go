package e2e

import (
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

// IIIFKeys is every key of one image: its pyramid, info.json and thumbnail.
func IIIFKeys(imageID string) []string {
	keys := []string{tileset.IIIFInfo(imageID), tileset.IIIFThumb(imageID)}
	for _, t := range tileset.IIIFPyramid(imageID, workload.IIIFWidth, workload.IIIFHeight, workload.IIIFTile) {
		keys = append(keys, t.Key)
	}
	return keys
}

// Workloads are the IIIF-viewer loads of section 1.
func Workloads() []workload.Workload {
	return []workload.Workload{workload.Cantaloupe("cantaloupe"), workload.Mirador("mirador")}
}
