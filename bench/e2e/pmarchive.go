package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

// archiveTile is one tile of an archive the benchmark writes.
type archiveTile struct {
	z    uint8
	x, y uint32
	body []byte
}

// writePMTiles writes tiles of type tt, stored as given, to a new PMTiles
// archive at path, its metadata naming the tileset. It writes with pmwrite,
// the writer `tilesieve upload` converts with, so every server of the
// benchmark (tilesieve and `pmtiles serve`) serves the archive an operator
// would upload; identical tiles are stored once. That go-pmtiles reads this
// writer's archives as its own is checked in bench/pmcheck. On an error the
// partial file is removed.
func writePMTiles(path string, tiles []archiveTile, tt pmtiles.TileType, name string) error {
	w, err := pmwrite.New(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer w.Close()
	for _, t := range tiles {
		if err := w.Add(t.z, t.x, t.y, t.body); err != nil {
			return err
		}
	}
	meta, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		return fmt.Errorf("pmtiles archive %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("pmtiles archive: %w", err)
	}
	_, err = w.Finish(f, pmwrite.Options{TileType: tt, Metadata: meta})
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}
