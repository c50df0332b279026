package archive

import (
	"context"
	"errors"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// Tileset opens the object of the tileset name as a request would, sharing
// its probe, and reports what it is: found when it serves as a tileset or
// its format refused it (refusal says why: its tiles answer that); neither
// when it is no tileset (no object, or a TIFF without georeferencing, which
// is an image only) or could not be asked in time. The catalog lists by it.
func (a *Origin) Tileset(ctx context.Context, name string) (found bool, refusal error) {
	ar, _ := a.lookup(name)
	if ar == nil {
		return false, nil
	}
	select {
	case <-ar.ready:
	case <-ctx.Done():
		return false, nil
	}
	var r *tile.RefusedError
	if errors.As(ar.err, &r) {
		return true, r.Err
	}
	return ar.err == nil && !ar.missing, nil
}
