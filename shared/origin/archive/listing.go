package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// listMax bounds the names one listing reads.
const listMax = 1000

// Pyramid is what the keys of a directory tileset without a metadata.json
// show: the format of its tiles and its zoom levels.
type Pyramid struct {
	Format           string
	MinZoom, MaxZoom int
}

// ListPyramid reads the shape of the tileset name/ from its keys, in at
// most three bounded listings: its zoom directories, the first column of
// its lowest zoom, and that column's tiles. found is false when the keys
// show no NAME/{z}/{x}/{y}.{ext} of a tile format.
func (a *Origin) ListPyramid(ctx context.Context, name string) (p Pyramid, found bool, err error) {
	dirs, _, err := a.store.Prefixes(ctx, name+"/", listMax)
	if err != nil {
		return p, false, fmt.Errorf("archive: list %s/: %w", name, err)
	}
	p.MinZoom = -1
	for _, d := range dirs {
		z, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(d, name+"/"), "/"))
		if err != nil || z < 0 || z > pmtiles.MaxZoom {
			continue
		}
		if p.MinZoom < 0 || z < p.MinZoom {
			p.MinZoom = z
		}
		p.MaxZoom = max(p.MaxZoom, z)
	}
	if p.MinZoom < 0 {
		return p, false, nil
	}
	zdir := name + "/" + strconv.Itoa(p.MinZoom) + "/"
	cols, _, err := a.store.Prefixes(ctx, zdir, listMax)
	if err != nil {
		return p, false, fmt.Errorf("archive: list %s: %w", zdir, err)
	}
	for _, col := range cols {
		if _, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(col, zdir), "/"), 10, 32); err != nil {
			continue
		}
		_, objects, err := a.store.Prefixes(ctx, col, listMax)
		if err != nil {
			return p, false, fmt.Errorf("archive: list %s: %w", col, err)
		}
		for _, o := range objects {
			y, ext, ok := strings.Cut(strings.TrimPrefix(o.Key, col), ".")
			if _, err := strconv.ParseUint(y, 10, 32); err != nil || !ok {
				continue
			}
			switch ext = strings.ToLower(ext); ext {
			case "jpeg":
				ext = "jpg"
			case "pbf", "mvt", "mlt", "png", "jpg", "webp", "avif":
			default:
				continue
			}
			p.Format = ext
			return p, true, nil
		}
		break // the first column stands for the tileset
	}
	return p, false, nil
}

// listedTileJSON is the TileJSON of a directory tileset without a
// metadata.json or a NAME.json object, from what its keys show
// (listPyramid). Its ETag names that shape, so a revalidation lists again
// and answers 304 while the shape holds; a new zoom level shows within
// the revalidation bound, a new metadata.json at once (its purge derives
// NAME.json).
func (a *Origin) listedTileJSON(ctx context.Context, name, ifNoneMatch string) (*tile.Tile, error) {
	p, found, err := a.ListPyramid(ctx, name)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("archive: %s.json: no metadata.json and no tiles: %w", name, tile.ErrNotFound)
	}
	etag := tile.DerivedTag(`"keys-`+p.Format+"-"+strconv.Itoa(p.MinZoom)+"-"+strconv.Itoa(p.MaxZoom)+`"`, tileset.Tag)
	if ifNoneMatch == etag {
		return nil, tile.ErrNotModified
	}
	md, _ := json.Marshal(map[string]any{"format": p.Format, "minzoom": p.MinZoom, "maxzoom": p.MaxZoom})
	tj, err := tileset.FromMetadata(tileset.PlaceholderBase, name, md)
	if err != nil {
		return nil, err
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: etag}, nil
}

// TopLevel lists the first level of TILES_PREFIX: its directories and the
// keys of its objects, at most max of each (the catalog's listing).
func (a *Origin) TopLevel(ctx context.Context, max int) (dirs, keys []string, err error) {
	dirs, objects, err := a.store.Prefixes(ctx, "", max)
	if err != nil {
		return nil, nil, err
	}
	keys = make([]string, len(objects))
	for i, o := range objects {
		keys[i] = o.Key
	}
	return dirs, keys, nil
}

// Exists reports, with a HEAD, whether the object key exists (nil).
func (a *Origin) Exists(ctx context.Context, key string) error {
	_, err := a.store.Head(ctx, key)
	return err
}

// IsPyramid reports whether the keys of the directory name/ show a tile
// pyramid (ListPyramid).
func (a *Origin) IsPyramid(ctx context.Context, name string) (bool, error) {
	_, found, err := a.ListPyramid(ctx, name)
	return found, err
}
