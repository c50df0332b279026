package archive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// MBTilesExt names an MBTiles database: TILES_PREFIX + NAME + MBTilesExt
// serves the tileset NAME/ when no NAME.pmtiles exists.
const MBTilesExt = ".mbtiles"

// Stager copies an object whole to local disk, pinned to one version, for
// readers that need a file (SQLite); *stage.Files is one. A database larger
// than the room the disk tier leaves is refused with an error matching
// stage.ErrNoRoom, before a byte is read.
type Stager interface {
	Stage(ctx context.Context, key, etag string, size int64) (path string, err error)
}

// mbStageTimeout bounds one staging of a database, detached from the
// requests that wait for it: a large database takes longer than a tile.
const mbStageTimeout = 5 * time.Minute

// mbSource is one version of NAME.mbtiles, staged and open.
type mbSource struct {
	key string       // tile key of the database, NAME.mbtiles
	mu  sync.RWMutex // guards db: reads hold it shared, close alone
	db  *mbtiles.DB  // nil once closed (the version was forgotten)
}

// tile reads z/x/y (XYZ) from the open database; a closed one is the
// version gone (ErrPreconditionFailed: the reader reads the current one).
func (m *mbSource) tile(ctx context.Context, z uint8, x, y uint32) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.db == nil {
		return nil, tile.ErrPreconditionFailed
	}
	return m.db.Tile(ctx, z, x, y)
}

func (m *mbSource) metadata(ctx context.Context, name string) (tileset.TileJSON, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.db == nil {
		return tileset.TileJSON{}, tile.ErrPreconditionFailed
	}
	return m.db.Metadata(ctx, PlaceholderBase, name)
}

func (m *mbSource) format() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.db == nil {
		return ""
	}
	return m.db.Format()
}

// close closes the database once the reads under way end.
func (m *mbSource) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.db != nil {
		m.db.Close()
		m.db = nil
	}
}

// closeMB closes the database of a forgotten name once its probe ends and
// the reads under way end.
func closeMB(ar *archive) {
	<-ar.ready
	if ar.mb != nil {
		ar.mb.close()
	}
}

// objectKey is the tile key of ar's file.
func (ar *archive) objectKey() string {
	if ar.mb != nil {
		return ar.mb.key
	}
	return ar.name + Ext
}

// probeMBTiles runs in the probe of a name without NAME.pmtiles: when
// NAME.mbtiles exists (and a Stager is set), the probe stages it whole and
// opens it, so every request of the name waits for one download; else the
// name is missing. Failures are the probe's: S3 errors are forgotten (the
// next request probes again), a database that does not fit or is not one is
// refused, logged once, until the TTL or a purge.
func (a *Origin) probeMBTiles(ctx context.Context, ar *archive) {
	if a.stager == nil {
		ar.missing = true
		return
	}
	key := ar.name + MBTilesExt
	first, err := a.store.GetRange(ctx, a.store.ObjectKey(key), 0, 1, "")
	switch {
	case errors.Is(err, tile.ErrNotFound):
		ar.missing = true
		return
	case err != nil:
		ar.err = fmt.Errorf("archive: mbtiles %s: %w", ar.name, err)
		a.forgetFailed(ar)
		return
	}
	ar.etag, ar.lastModified = first.ETag, first.LastModified
	sctx, cancel := context.WithTimeout(a.base, mbStageTimeout)
	defer cancel()
	began := time.Now()
	path, err := a.stager.Stage(sctx, key, first.ETag, first.Size)
	var db *mbtiles.DB
	if err == nil {
		db, err = mbtiles.Open(sctx, path)
	}
	switch {
	case err == nil:
		ar.mb = &mbSource{key: key, db: db}
		a.log.Info("mbtiles staged", "name", ar.name, "key", key, "etag", first.ETag, "size", first.Size, "path", path, "elapsed", time.Since(began))
	case errors.Is(err, stage.ErrNoRoom), errors.Is(err, mbtiles.ErrInvalid):
		a.log.Error("mbtiles refused", "name", ar.name, "key", key, "etag", first.ETag, "size", first.Size, "err", err)
		ar.err = &refusedError{name: ar.name, err: err}
	default:
		ar.err = fmt.Errorf("archive: mbtiles %s: %w", ar.name, err)
		a.forgetFailed(ar)
	}
}

// readMBTile reads tile z/x/y of the database behind ar, like readTile an
// archive's: a revalidation whose tile ETag names the database's current
// version is ErrNotModified, answered without reading.
func (a *Origin) readMBTile(ctx context.Context, ar *archive, z uint8, x, y uint32, ext, ifNoneMatch string) (*tile.Tile, error) {
	format := ar.mb.format()
	if !mbExtMatches(format, ext) {
		return nil, tile.ErrNotFound
	}
	if err := a.notModified(ctx, ar, ifNoneMatch); err != nil {
		return nil, err
	}
	body, err := ar.mb.tile(ctx, z, x, y)
	switch {
	case errors.Is(err, mbtiles.ErrNotFound):
		return nil, tile.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("archive: %w", err)
	}
	if max := a.store.MaxObjectBytes(); max > 0 && int64(len(body)) > max {
		return nil, fmt.Errorf("archive: mbtiles %s: tile %d/%d/%d is %d bytes, MAX_TILE_BYTES is %d: %w", ar.name, z, x, y, len(body), max, tile.ErrTooLarge)
	}
	return &tile.Tile{
		Body:            body,
		ContentType:     mbtiles.ContentType(format),
		ContentEncoding: mbtiles.ContentEncoding(body),
		ETag:            DerivedTag(ar.etag, "/"+strconv.Itoa(int(z))+"-"+strconv.FormatUint(uint64(x), 10)+"-"+strconv.FormatUint(uint64(y), 10)),
		LastModified:    ar.lastModified,
	}, nil
}

// mbTileJSON is NAME.json of a database: its metadata table as TileJSON,
// stored with the placeholder base like an archive's.
func (a *Origin) mbTileJSON(ctx context.Context, ar *archive) (*tile.Tile, error) {
	tj, err := ar.mb.metadata(ctx, ar.name)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &tile.Tile{Body: tj.Marshal(), ContentType: "application/json", ETag: DerivedTag(ar.etag, TileJSONTag), LastModified: ar.lastModified}, nil
}

// mbExtMatches reports whether a URL's extension names tiles of format.
func mbExtMatches(format, ext string) bool {
	ext = strings.ToLower(ext)
	switch format {
	case "":
		return false
	case "pbf", "mvt":
		return ext == "pbf" || ext == "mvt"
	case "jpg":
		return ext == "jpg" || ext == "jpeg"
	}
	return ext == format
}

// StageMBTiles stages and opens NAME.mbtiles now, as its first request
// would (STAGE_PREFIXES names it): later requests find it open. It reports
// why not when the name is no database, or it was refused.
func (a *Origin) StageMBTiles(ctx context.Context, name string) error {
	if a.stager == nil {
		return errors.New("archive: mbtiles are off")
	}
	if err := tile.ValidateKey(name); err != nil || strings.Contains(name, "/") {
		return fmt.Errorf("archive: mbtiles %q: not a tileset name", name)
	}
	ar, _ := a.lookup(name)
	if ar == nil {
		return fmt.Errorf("archive: mbtiles %s: %w", name, tile.ErrNotFound)
	}
	select {
	case <-ar.ready:
	case <-ctx.Done():
		return fmt.Errorf("archive: mbtiles %s: %w", name, ctx.Err())
	}
	switch {
	case ar.err != nil:
		return ar.err
	case ar.missing:
		return fmt.Errorf("archive: mbtiles %s: %w", name, tile.ErrNotFound)
	case ar.mb == nil:
		return fmt.Errorf("archive: mbtiles %s: %s exists; it is served instead", name, name+Ext)
	}
	return nil
}
