package mbtiles

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// OpenDataset opens the database staged at obj.Path as a formats.Dataset.
// A file that is not an MBTiles database is refused (formats.ErrInvalid).
func OpenDataset(ctx context.Context, obj formats.Object, opts formats.Options) (formats.Dataset, error) {
	db, err := Open(ctx, obj.Path)
	switch {
	case errors.Is(err, ErrInvalid):
		return nil, formats.Invalid(err)
	case err != nil:
		return nil, err
	}
	return &dataset{db: db, format: db.Format(), maxTile: opts.MaxTileBytes}, nil
}

// dataset is an open database. Close waits for the reads under way; a read
// after it finds the version gone (tile.ErrPreconditionFailed), so its
// caller reads the current one.
type dataset struct {
	format  string
	maxTile int64        // MAX_TILE_BYTES; zero or negative: off
	mu      sync.RWMutex // guards db: reads hold it shared, Close alone
	db      *DB          // nil once closed
}

// Accepts reports whether a URL's extension names tiles of the database's
// format.
func (d *dataset) Accepts(r formats.TileRequest) bool {
	if r.Variant != "" {
		return false
	}
	ext := strings.ToLower(r.Ext)
	switch d.format {
	case "":
		return false
	case "pbf", "mvt":
		return ext == "pbf" || ext == "mvt"
	case "jpg":
		return ext == "jpg" || ext == "jpeg"
	}
	return ext == d.format
}

func (d *dataset) Tile(ctx context.Context, r formats.TileRequest) (formats.Tile, error) {
	z, x, y := r.Z, r.X, r.Y
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return formats.Tile{}, tile.ErrPreconditionFailed
	}
	body, err := d.db.Tile(ctx, z, x, y)
	switch {
	case errors.Is(err, ErrNotFound):
		return formats.Tile{}, tile.ErrNotFound
	case err != nil:
		return formats.Tile{}, err
	}
	if d.maxTile > 0 && int64(len(body)) > d.maxTile {
		return formats.Tile{}, fmt.Errorf("mbtiles: tile %d/%d/%d is %d bytes, MAX_TILE_BYTES is %d: %w", z, x, y, len(body), d.maxTile, tile.ErrTooLarge)
	}
	return formats.Tile{
		Body:            body,
		ContentType:     ContentType(d.format),
		ContentEncoding: ContentEncoding(body),
		Version:         strconv.Itoa(int(z)) + "-" + strconv.FormatUint(uint64(x), 10) + "-" + strconv.FormatUint(uint64(y), 10),
	}, nil
}

func (d *dataset) TileJSON(ctx context.Context, baseURL, name string) (tileset.TileJSON, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.db == nil {
		return tileset.TileJSON{}, tile.ErrPreconditionFailed
	}
	return d.db.Metadata(ctx, baseURL, name)
}

// Close closes the database once the reads under way end.
func (d *dataset) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil
	}
	err := d.db.Close()
	d.db = nil
	return err
}
