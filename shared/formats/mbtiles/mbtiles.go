// Package mbtiles reads MBTiles 1.3 databases from local disk: SQLite files
// with a tiles table (or a tiles view over map and images, as mb-util and
// tippecanoe write when they deduplicate) and a metadata table. It uses a
// pure-Go SQLite (modernc.org/sqlite), so the tile function builds without
// cgo.
//
// What it promises:
//
//   - A database is opened read-only and immutable: SQLite takes no locks,
//     reads no journal and writes nothing, so a DB is safe for concurrent
//     readers and the file must not change while it is open (the disk tier
//     replaces a staged copy, it never rewrites one).
//   - Open refuses, with one error matching ErrInvalid, a file that is not
//     an SQLite database (random bytes), one shorter than its header says
//     (a truncated copy), and one without a tiles table or view and a
//     metadata table with the MBTiles columns. Nothing it reads panics.
//   - Tile takes XYZ rows and flips them to the TMS rows MBTiles stores
//     (y = 2^z - 1 - y); a missing tile, or one outside the zoom's grid, is
//     an error matching ErrNotFound.
//   - The tile format comes from the metadata's format row, else from the
//     magic bytes of a stored tile; ContentEncoding tells gzip'd tiles by
//     their magic bytes, not by the format's convention.
package mbtiles

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrInvalid is a file that is not a readable MBTiles database.
	ErrInvalid = errors.New("mbtiles: not an MBTiles database")
	// ErrNotFound is a tile the database does not hold.
	ErrNotFound = errors.New("mbtiles: tile not found")
)

// MaxZoom is the deepest zoom Tile answers; rows of 2^z tiles fit uint32.
const MaxZoom = 30

// sqliteMagic starts every SQLite 3 database file.
const sqliteMagic = "SQLite format 3\x00"

// headerLen is the SQLite file header's size.
const headerLen = 100

// maxMetadataRows bounds what Open reads from the metadata table.
const maxMetadataRows = 4096

// DB is an open MBTiles database. It is safe for concurrent use.
type DB struct {
	path   string
	db     *sql.DB
	tile   *sql.Stmt
	meta   map[string]string
	format string
}

// Open opens the MBTiles database at path read-only and validates it.
func Open(ctx context.Context, path string) (*DB, error) {
	return OpenDriver(ctx, "sqlite", path)
}

// OpenDriver is Open through another registered database/sql SQLite driver
// that accepts file: URIs, so drivers can be compared on the same reader.
func OpenDriver(ctx context.Context, driver, path string) (*DB, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("mbtiles: %s: %w", path, err)
	}
	// immutable=1: no locks and no journal, which is what makes concurrent
	// readers cheap and a read-only directory enough.
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open(driver, u.String())
	if err != nil {
		return nil, fmt.Errorf("mbtiles: %s: %w", path, err)
	}
	db.SetMaxIdleConns(8) // keep connections (and their page caches) across bursts
	d := &DB{path: path, db: db}
	if err := d.load(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

// checkFile refuses files SQLite would open without complaint but read
// wrongly: with immutable=1 SQLite trusts the file, so a truncated copy is
// caught here from the header's page count.
func checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mbtiles: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("mbtiles: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("mbtiles: %s: not a regular file: %w", path, ErrInvalid)
	}
	h := make([]byte, headerLen)
	if _, err := io.ReadFull(f, h); err != nil || string(h[:len(sqliteMagic)]) != sqliteMagic {
		return fmt.Errorf("mbtiles: %s: not an SQLite database: %w", path, ErrInvalid)
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize&(pageSize-1) != 0 {
		return fmt.Errorf("mbtiles: %s: page size %d: %w", path, pageSize, ErrInvalid)
	}
	// The page count in the header is valid when the version-valid-for
	// number equals the change counter (SQLite 3.7.0 and later).
	if pages := int64(binary.BigEndian.Uint32(h[28:32])); pages > 0 && binary.BigEndian.Uint32(h[92:96]) == binary.BigEndian.Uint32(h[24:28]) {
		if want := pages * pageSize; st.Size() < want {
			return fmt.Errorf("mbtiles: %s: %d bytes, the header says %d (truncated): %w", path, st.Size(), want, ErrInvalid)
		}
	} else if st.Size()%pageSize != 0 {
		return fmt.Errorf("mbtiles: %s: %d bytes, not whole %d-byte pages (truncated): %w", path, st.Size(), pageSize, ErrInvalid)
	}
	return nil
}

func (d *DB) invalid(format string, args ...any) error {
	return fmt.Errorf("mbtiles: %s: "+format+": %w", append(append([]any{d.path}, args...), ErrInvalid)...)
}

// load checks the schema, reads the metadata and prepares the tile query.
func (d *DB) load(ctx context.Context) error {
	kinds := map[string]string{}
	rows, err := d.db.QueryContext(ctx, `SELECT name, type FROM sqlite_master WHERE name IN ('tiles', 'metadata')`)
	if err != nil {
		return d.invalid("reading the schema: %v", err)
	}
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			rows.Close()
			return d.invalid("reading the schema: %v", err)
		}
		kinds[name] = kind
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return d.invalid("reading the schema: %v", err)
	}
	for _, name := range []string{"tiles", "metadata"} {
		if k := kinds[name]; k != "table" && k != "view" {
			return d.invalid("no %s table or view", name)
		}
	}
	// Preparing checks the columns, whatever the layout behind the name.
	d.tile, err = d.db.PrepareContext(ctx, `SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`)
	if err != nil {
		return d.invalid("tiles: want zoom_level, tile_column, tile_row, tile_data: %v", err)
	}
	if d.meta, err = d.readMetadata(ctx); err != nil {
		return err
	}
	d.format = strings.ToLower(strings.TrimSpace(d.meta["format"]))
	if d.format == "jpeg" {
		d.format = "jpg"
	}
	if d.format == "" {
		var b []byte
		err := d.db.QueryRowContext(ctx, `SELECT tile_data FROM tiles WHERE length(tile_data) > 0 LIMIT 1`).Scan(&b)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return d.invalid("reading a tile: %v", err)
		default:
			d.format = Sniff(b)
		}
	}
	return nil
}

func (d *DB) readMetadata(ctx context.Context) (map[string]string, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT name, value FROM metadata LIMIT ?`, maxMetadataRows+1)
	if err != nil {
		return nil, d.invalid("metadata: want name, value: %v", err)
	}
	defer rows.Close()
	meta := map[string]string{}
	n, size := 0, 0
	for rows.Next() {
		var name, value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return nil, d.invalid("metadata: %v", err)
		}
		if n++; n > maxMetadataRows {
			return nil, d.invalid("metadata: more than %d rows", maxMetadataRows)
		}
		if size += len(name.String) + len(value.String); size > tileset.MaxMetadataBytes {
			return nil, d.invalid("metadata: more than %d bytes", tileset.MaxMetadataBytes)
		}
		if name.Valid {
			meta[name.String] = value.String
		}
	}
	if err := rows.Err(); err != nil {
		return nil, d.invalid("metadata: %v", err)
	}
	return meta, nil
}

// Close closes the database.
func (d *DB) Close() error {
	return errors.Join(d.tile.Close(), d.db.Close())
}

// Tile returns the bytes of tile z/x/y, y counted from the top (XYZ, as
// URLs name tiles).
func (d *DB) Tile(ctx context.Context, z uint8, x, y uint32) ([]byte, error) {
	if z > MaxZoom || uint64(x) >= 1<<z || uint64(y) >= 1<<z {
		return nil, fmt.Errorf("mbtiles: %d/%d/%d is outside the zoom's grid: %w", z, x, y, ErrNotFound)
	}
	row := (uint32(1)<<z - 1) - y
	var b []byte
	err := d.tile.QueryRowContext(ctx, int64(z), int64(x), int64(row)).Scan(&b)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("mbtiles: %d/%d/%d: %w", z, x, y, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("mbtiles: %s: tile %d/%d/%d: %w", d.path, z, x, y, err)
	}
	if b == nil {
		b = []byte{} // a NULL or empty blob is an empty tile, not a missing one
	}
	return b, nil
}

// Each calls fn with every tile of the database, in the database's order,
// y counted from the top (the stored TMS rows flipped), and stops at fn's
// first error, which it returns. A row outside its zoom's grid is an error
// matching ErrInvalid.
func (d *DB) Each(ctx context.Context, fn func(z uint8, x, y uint32, data []byte) error) error {
	rows, err := d.db.QueryContext(ctx, `SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles`)
	if err != nil {
		return fmt.Errorf("mbtiles: %s: tiles: %w", d.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var z, x, row int64
		var b []byte
		if err := rows.Scan(&z, &x, &row, &b); err != nil {
			return d.invalid("tiles: %v", err)
		}
		if z < 0 || z > MaxZoom || x < 0 || x >= 1<<z || row < 0 || row >= 1<<z {
			return d.invalid("tile at zoom %d, column %d, row %d lies outside the zoom's grid", z, x, row)
		}
		if err := fn(uint8(z), uint32(x), uint32(1<<z-1-row), b); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("mbtiles: %s: tiles: %w", d.path, err)
	}
	return nil
}

// Format is the tiles' extension: "pbf", "png", "jpg", "webp", ... or ""
// when the metadata names none and the database holds no tile.
func (d *DB) Format() string { return d.format }

// ContentType is the MIME type of the tiles.
func (d *DB) ContentType() string { return ContentType(d.format) }

// RawMetadata returns a copy of the metadata table's rows.
func (d *DB) RawMetadata() map[string]string {
	m := make(map[string]string, len(d.meta))
	for k, v := range d.meta {
		m[k] = v
	}
	return m
}

// Metadata describes the database as tileset name under baseURL: name,
// format, zooms, bounds, center, attribution, description, version and the
// vector_layers of the json row. Zooms the metadata does not give are read
// from the tiles.
func (d *DB) Metadata(ctx context.Context, baseURL, name string) (tileset.TileJSON, error) {
	m := make(map[string]string, len(d.meta)+3)
	for k, v := range d.meta {
		m[k] = v
	}
	if d.format == "" {
		return tileset.TileJSON{}, d.invalid("no format in the metadata and no tile to tell it")
	}
	m["format"] = d.format
	if m["minzoom"] == "" || m["maxzoom"] == "" {
		var lo, hi sql.NullInt64
		if err := d.db.QueryRowContext(ctx, `SELECT min(zoom_level), max(zoom_level) FROM tiles`).Scan(&lo, &hi); err != nil {
			return tileset.TileJSON{}, fmt.Errorf("mbtiles: %s: zooms: %w", d.path, err)
		}
		if lo.Valid && m["minzoom"] == "" {
			m["minzoom"] = strconv.FormatInt(lo.Int64, 10)
		}
		if hi.Valid && m["maxzoom"] == "" {
			m["maxzoom"] = strconv.FormatInt(hi.Int64, 10)
		}
	}
	for _, k := range []string{"minzoom", "maxzoom", "bounds", "center"} {
		if strings.TrimSpace(m[k]) == "" {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return tileset.TileJSON{}, fmt.Errorf("mbtiles: %s: metadata: %w", d.path, err)
	}
	t, err := tileset.FromMetadata(baseURL, name, b)
	if err != nil {
		return tileset.TileJSON{}, fmt.Errorf("mbtiles: %s: metadata table: %w", d.path, err)
	}
	return t, nil
}

// ContentType is the MIME type of tiles of format (an extension without
// the dot), "application/octet-stream" when unknown.
func ContentType(format string) string {
	if strings.EqualFold(format, "mlt") {
		return "application/vnd.maplibre-tile"
	}
	if t := tile.ContentTypeOfExt(format); t != "" && !strings.EqualFold(format, "json") {
		return t
	}
	return "application/octet-stream"
}

// ContentEncoding is the HTTP Content-Encoding of tile bytes: "gzip" when
// they start with the gzip magic, else "".
func ContentEncoding(tile []byte) string {
	if len(tile) >= 2 && tile[0] == 0x1f && tile[1] == 0x8b {
		return "gzip"
	}
	return ""
}

// Sniff tells a tile's format from its first bytes: "png", "jpg", "webp",
// "avif", or "pbf" for gzip'd bytes (vector tiles are the only tiles
// MBTiles stores compressed); "" when it cannot tell.
func Sniff(tile []byte) string {
	switch {
	case bytes.HasPrefix(tile, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(tile, []byte{0xff, 0xd8, 0xff}):
		return "jpg"
	case len(tile) >= 12 && string(tile[:4]) == "RIFF" && string(tile[8:12]) == "WEBP":
		return "webp"
	case len(tile) >= 12 && string(tile[4:8]) == "ftyp" && (string(tile[8:12]) == "avif" || string(tile[8:12]) == "avis"):
		return "avif"
	case ContentEncoding(tile) == "gzip":
		return "pbf"
	}
	return ""
}
