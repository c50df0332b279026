package archive

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// ImageVersion is one version of an image the origin opened.
type ImageVersion struct {
	Pyramid      formats.Pyramid
	ETag         string
	LastModified time.Time
	ar           *archive
}

// Image returns image id (the object ID.tif or ID.tiff under
// TILES_PREFIX, at any depth), opened at its current version as every
// request of it shares: ID.tif and ID.tiff are probed side by side, the
// header and IFDs read once and kept until the TTL, a purge of it or a
// change seen under a read. An error matching tile.ErrNotFound is no such
// image; a tile.RefusedError one its format refused (logged once).
func (a *Origin) Image(ctx context.Context, id string) (*ImageVersion, error) {
	if err := tile.ValidateKey(id); err != nil || strings.HasSuffix(id, "/") {
		return nil, fmt.Errorf("archive: image %q: %w", id, tile.ErrNotFound)
	}
	ar, _ := a.lookupKind(id, true)
	if ar == nil {
		return nil, fmt.Errorf("archive: image %s: %w", id, tile.ErrNotFound)
	}
	select {
	case <-ar.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	switch {
	case ar.err != nil:
		return nil, ar.err
	case ar.missing:
		return nil, fmt.Errorf("archive: image %s: %w", id, tile.ErrNotFound)
	}
	p, ok := ar.ds.(formats.Pyramid)
	if !ok {
		return nil, fmt.Errorf("archive: %s is not a pyramidal image: %w", ar.objectKey(), tile.ErrNotFound)
	}
	return &ImageVersion{Pyramid: p, ETag: ar.etag, LastModified: ar.lastModified, ar: ar}, nil
}

// Changed drops image version v, whose object no longer has its ETag (a
// read of it answered 412): its answers on this instance and what the
// origin holds of it, so that the next Image opens the new version.
func (a *Origin) Changed(v *ImageVersion) { a.changed(v.ar) }

// Current returns the ETag image version v's object has now, checked with
// S3 once the TTL (or the journal follower's vouching) has passed: how a
// revalidation of an answer derived from it is answered without deriving
// it again. An error matching tile.ErrPreconditionFailed means it changed.
func (a *Origin) Current(ctx context.Context, v *ImageVersion) (string, error) {
	cur, err := a.current(ctx, v.ar)
	if err != nil {
		return "", err
	}
	return cur.etag, nil
}

// VersionOf is the object ETag an ETag derived from it names (tile.DerivedTag
// with a suffix that starts with the one slash it holds), or "".
func VersionOf(tag string) string { return archiveOfTag(tag) }
