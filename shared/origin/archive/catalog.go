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

// Picture opens image id as an IIIF request would and reports whether it
// serves: nil when it is one whose pixels are a picture; an error matching
// tile.ErrNotFound when there is no such image; else why it is not served
// (its format refused it, or its samples are heights, not colours). The
// catalog lists images by it.
func (a *Origin) Picture(ctx context.Context, id string) error {
	v, err := a.Image(ctx, id)
	if err != nil {
		var r *tile.RefusedError
		if errors.As(err, &r) {
			return r.Err
		}
		return err
	}
	return v.Pyramid.Pictured()
}
