package archive

import (
	"context"
	"fmt"
	"strings"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// maxZoom is the deepest zoom a tile key may name: the deepest a PMTiles
// tile id addresses.
const maxZoom = 31

// Stager copies an object whole to local disk, pinned to one version, for
// formats whose reader needs a file (SQLite); *stage.Files is one. An
// object larger than the room the disk tier leaves is refused with an error
// matching stage.ErrNoRoom, before a byte is read.
type Stager interface {
	Stage(ctx context.Context, key, etag string, size int64) (path string, err error)
}

// closeDataset closes the dataset of a forgotten name once its probe ends
// (the dataset waits for the reads under way).
func closeDataset(ar *archive) {
	<-ar.ready
	if ar.ds != nil {
		ar.ds.Close()
	}
}

// Open opens the object key (NAME.mbtiles, NAME.pmtiles, ID.tif) now, as
// the first request of it would (STAGE_PREFIXES names it): a format read
// whole is staged, so later requests find it open. It reports why not: the
// key is no tileset's or image's object, no such object, the object was
// refused, or another format's object of that name is served instead.
func (a *Origin) Open(ctx context.Context, key string) error {
	spec, name, ok := formats.Of(key)
	if !ok || tile.ValidateKey(name) != nil || (spec.Tiles && strings.Contains(name, "/")) {
		return fmt.Errorf("archive: %q: not the object of a tileset or an image", key)
	}
	if !a.Serves(spec.Name) {
		return fmt.Errorf("archive: %s: %s objects are off", key, spec.Name)
	}
	ar, _ := a.lookupKind(name, spec.Image)
	if ar == nil {
		return fmt.Errorf("archive: %s: %w", key, tile.ErrNotFound)
	}
	select {
	case <-ar.ready:
	case <-ctx.Done():
		return fmt.Errorf("archive: %s: %w", key, ctx.Err())
	}
	switch {
	case ar.err != nil:
		return ar.err
	case ar.missing:
		return fmt.Errorf("archive: %s: %w", key, tile.ErrNotFound)
	case ar.spec.Ext != spec.Ext:
		return fmt.Errorf("archive: %s: %s exists; it is served instead", key, ar.objectKey())
	}
	return nil
}
