package mbtiles_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
)

type zxy struct{ z, x, y int } // y in TMS rows, as stored

// fixtureTiles are distinct tiles at zooms 0-2, so a wrong row flip reads
// another tile's bytes.
func fixtureTiles(t *testing.T, pbf bool) map[zxy][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	tiles := map[zxy][]byte{}
	for z := 0; z <= 2; z++ {
		for x := 0; x < 1<<z; x++ {
			for y := 0; y < 1<<z; y++ {
				b := make([]byte, 16+r.IntN(200))
				for i := range b {
					b[i] = byte(r.Uint32())
				}
				if pbf {
					b = pmtilestest.Compress(b, pmtiles.CompressionGzip)
				} else {
					b = append([]byte("\x89PNG\r\n\x1a\n"), b...)
				}
				tiles[zxy{z, x, y}] = b
			}
		}
	}
	// One tile, stored twice in the deduplicated layout.
	tiles[zxy{2, 3, 3}] = tiles[zxy{2, 0, 0}]
	return tiles
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// writeDB builds an MBTiles database with the sqlite3 tool: the plain tiles
// table, or mb-util's map/images tables behind a tiles view.
func writeDB(t *testing.T, layout string, tiles map[zxy][]byte, meta map[string]string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), layout+".mbtiles")
	var s strings.Builder
	s.WriteString("BEGIN;\nCREATE TABLE metadata (name text, value text);\n")
	for k, v := range meta {
		fmt.Fprintf(&s, "INSERT INTO metadata VALUES (%s, %s);\n", quote(k), quote(v))
	}
	switch layout {
	case "table":
		s.WriteString("CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\n")
		s.WriteString("CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);\n")
		for k, b := range tiles {
			fmt.Fprintf(&s, "INSERT INTO tiles VALUES (%d, %d, %d, X'%x');\n", k.z, k.x, k.y, b)
		}
	case "view":
		s.WriteString("CREATE TABLE map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT);\n")
		s.WriteString("CREATE UNIQUE INDEX map_index ON map (zoom_level, tile_column, tile_row);\n")
		s.WriteString("CREATE TABLE images (tile_data blob, tile_id text);\nCREATE UNIQUE INDEX images_id ON images (tile_id);\n")
		ids := map[string]bool{}
		for k, b := range tiles {
			id := fmt.Sprintf("%x", b)[:24]
			fmt.Fprintf(&s, "INSERT INTO map VALUES (%d, %d, %d, '%s');\n", k.z, k.x, k.y, id)
			if !ids[id] {
				ids[id] = true
				fmt.Fprintf(&s, "INSERT INTO images VALUES (X'%x', '%s');\n", b, id)
			}
		}
		s.WriteString(`CREATE VIEW tiles AS SELECT map.zoom_level AS zoom_level, map.tile_column AS tile_column,
  map.tile_row AS tile_row, images.tile_data AS tile_data FROM map JOIN images ON images.tile_id = map.tile_id;` + "\n")
	default:
		t.Fatalf("layout %q", layout)
	}
	s.WriteString("COMMIT;\n")
	sqlitetest.Run(t, db, s.String())
	return db
}

// openDB opens the database at path, closed when the test ends.
func openDB(t *testing.T, path string) *mbtiles.DB {
	t.Helper()
	d, err := mbtiles.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// checkAgainstSQLite reads every tile sqlite3 sees through Tile, by XYZ.
func checkAgainstSQLite(t *testing.T, db string) int {
	t.Helper()
	want := sqlitetest.ReadTiles(t, db)
	d := openDB(t, db)
	for k, b := range want {
		got, err := d.Tile(context.Background(), k.Z, k.X, k.Y)
		if err != nil {
			t.Fatalf("tile %v: %v", k, err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("tile %v (TMS row %d): got %d bytes %x..., want sqlite3's %d bytes", k, 1<<k.Z-1-k.Y, len(got), got[:min(8, len(got))], len(b))
		}
	}
	return len(want)
}

func TestTilesMatchSQLite(t *testing.T) {
	sqlitetest.Need(t, "sqlite3", "sqlite3") // skip once, not in every subtest
	for _, layout := range []string{"table", "view"} {
		for _, pbf := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pbf=%v", layout, pbf), func(t *testing.T) {
				t.Parallel()
				tiles := fixtureTiles(t, pbf)
				db := writeDB(t, layout, tiles, map[string]string{"name": "t", "format": map[bool]string{false: "png", true: "pbf"}[pbf]})
				if n := checkAgainstSQLite(t, db); n != len(tiles) {
					t.Errorf("got %d tiles from sqlite3, want %d", n, len(tiles))
				}
			})
		}
	}
}

func TestTileFlipsRows(t *testing.T) {
	tiles := fixtureTiles(t, false)
	db := writeDB(t, "table", tiles, map[string]string{"format": "png"})
	d := openDB(t, db)
	for _, c := range []struct {
		z      uint8
		x, y   uint32
		stored zxy
	}{
		{0, 0, 0, zxy{0, 0, 0}},
		{1, 0, 0, zxy{1, 0, 1}},
		{1, 1, 1, zxy{1, 1, 0}},
		{2, 1, 0, zxy{2, 1, 3}},
		{2, 2, 3, zxy{2, 2, 0}},
	} {
		t.Run(fmt.Sprintf("%d/%d/%d", c.z, c.x, c.y), func(t *testing.T) {
			got, err := d.Tile(context.Background(), c.z, c.x, c.y)
			if err != nil || !bytes.Equal(got, tiles[c.stored]) {
				t.Errorf("got %x, %v, want the tile stored at TMS row %d", got[:min(8, len(got))], err, c.stored.y)
			}
		})
	}
}

func TestTileNotFound(t *testing.T) {
	db := writeDB(t, "view", fixtureTiles(t, true), map[string]string{"format": "pbf"})
	d := openDB(t, db)
	for _, c := range []struct {
		name string
		z    uint8
		x, y uint32
	}{
		{"a zoom the database lacks", 3, 0, 0},
		{"x outside the grid", 1, 2, 0},
		{"y outside the grid", 2, 0, 4},
		{"a zoom past the deepest", 31, 0, 0},
		{"the largest coordinates", 30, 1<<30 - 1, 1<<30 - 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := d.Tile(context.Background(), c.z, c.x, c.y)
			if !errors.Is(err, mbtiles.ErrNotFound) {
				t.Errorf("got %d bytes, %v, want ErrNotFound", len(got), err)
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	sqlitetest.Need(t, "sqlite3", "sqlite3") // skip once, not in every subtest
	layers := `[{"id":"roads","fields":{"kind":"String"},"minzoom":0,"maxzoom":2}]`
	for _, c := range []struct {
		name  string
		pbf   bool
		meta  map[string]string
		check func(t *testing.T, tj map[string]any)
	}{
		{"tippecanoe's rows", true, map[string]string{
			"name": "Roads", "format": "pbf", "minzoom": "0", "maxzoom": "2",
			"bounds": "-10,-20,30,40", "center": "10,10,1", "attribution": "© OSM",
			"description": "roads of the world", "type": "overlay",
			"json": `{"vector_layers":` + layers + `,"tilestats":{}}`,
		}, func(t *testing.T, tj map[string]any) {
			want := map[string]any{
				"tilejson": "3.0.0", "name": "Roads", "format": "pbf", "minzoom": 0.0, "maxzoom": 2.0,
				"bounds": []any{-10.0, -20.0, 30.0, 40.0}, "center": []any{10.0, 10.0, 1.0},
				"attribution": "© OSM", "description": "roads of the world", "scheme": "xyz",
				"tiles": []any{"https://tiles.example.com/roads/{z}/{x}/{y}.pbf"},
			}
			for k, v := range want {
				if fmt.Sprint(tj[k]) != fmt.Sprint(v) {
					t.Errorf("%s: got %v, want %v", k, tj[k], v)
				}
			}
			var wantLayers any
			if err := json.Unmarshal([]byte(layers), &wantLayers); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tj["vector_layers"], wantLayers) {
				t.Errorf("vector_layers: got %v, want %s", tj["vector_layers"], layers)
			}
		}},
		{"no format, no zooms: told by the tiles", false, map[string]string{"name": "sat"}, func(t *testing.T, tj map[string]any) {
			if tj["format"] != "png" || tj["minzoom"] != 0.0 || tj["maxzoom"] != 2.0 || tj["vector_layers"] != nil {
				t.Errorf("got format %v, zooms %v-%v, vector_layers %v, want png, 0-2, none", tj["format"], tj["minzoom"], tj["maxzoom"], tj["vector_layers"])
			}
			if tj["tiles"].([]any)[0] != "https://tiles.example.com/roads/{z}/{x}/{y}.png" {
				t.Errorf("tiles: got %v", tj["tiles"])
			}
		}},
		{"jpeg is served as jpg", false, map[string]string{"format": "JPEG"}, func(t *testing.T, tj map[string]any) {
			if tj["format"] != "jpg" || tj["name"] != "roads" {
				t.Errorf("got format %v, name %v, want jpg, roads", tj["format"], tj["name"])
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := writeDB(t, "table", fixtureTiles(t, c.pbf), c.meta)
			d := openDB(t, db)
			tj, err := d.Metadata(context.Background(), "https://tiles.example.com", "roads")
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(tj.Marshal(), &m); err != nil {
				t.Fatal(err)
			}
			c.check(t, m)
		})
	}
}

func TestMetadataRefusesBadRows(t *testing.T) {
	sqlitetest.Need(t, "sqlite3", "sqlite3") // skip once, not in every subtest
	for _, c := range []struct {
		name string
		meta map[string]string
	}{
		{"minzoom not a number", map[string]string{"format": "png", "minzoom": "low"}},
		{"bounds of three numbers", map[string]string{"format": "png", "bounds": "1,2,3"}},
		{"unknown format", map[string]string{"format": "tiff"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := writeDB(t, "table", fixtureTiles(t, false), c.meta)
			d := openDB(t, db)
			if tj, err := d.Metadata(context.Background(), "https://t.example", "x"); err == nil {
				t.Errorf("got %s, want an error", tj.Marshal())
			}
		})
	}
}

func TestContentHeaders(t *testing.T) {
	for _, c := range []struct {
		tile          []byte
		format, ctype string
		cenc          string
	}{
		{[]byte{0x1f, 0x8b, 8, 0}, "pbf", "application/vnd.mapbox-vector-tile", "gzip"},
		{[]byte{0x1a, 0x02, 'x'}, "", "application/octet-stream", ""}, // an uncompressed MVT
		{[]byte("\x89PNG\r\n\x1a\nrest"), "png", "image/png", ""},
		{[]byte{0xff, 0xd8, 0xff, 0xe0}, "jpg", "image/jpeg", ""},
		{[]byte("RIFF\x00\x00\x00\x00WEBPVP8 "), "webp", "image/webp", ""},
		{[]byte("\x00\x00\x00\x1cftypavif"), "avif", "image/avif", ""},
		{nil, "", "application/octet-stream", ""},
	} {
		t.Run(fmt.Sprintf("%x", c.tile[:min(4, len(c.tile))]), func(t *testing.T) {
			if got := mbtiles.Sniff(c.tile); got != c.format {
				t.Errorf("Sniff: got %q, want %q", got, c.format)
			}
			if got := mbtiles.ContentType(c.format); got != c.ctype {
				t.Errorf("ContentType: got %q, want %q", got, c.ctype)
			}
			if got := mbtiles.ContentEncoding(c.tile); got != c.cenc {
				t.Errorf("ContentEncoding: got %q, want %q", got, c.cenc)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	good := writeDB(t, "table", fixtureTiles(t, false), map[string]string{"format": "png"})
	whole, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	bare := func(name, script string) string {
		p := filepath.Join(dir, name)
		sqlitetest.Run(t, p, script)
		return p
	}
	for _, c := range []struct {
		name, path string
	}{
		{"random bytes", file("random.mbtiles", random)},
		{"an empty file", file("empty.mbtiles", nil)},
		{"the SQLite header alone", file("header.mbtiles", whole[:100])},
		{"truncated to half", file("half.mbtiles", whole[:len(whole)/2])},
		{"truncated by one byte", file("short.mbtiles", whole[:len(whole)-1])},
		{"a directory", dir},
		{"no tiles", bare("notiles.mbtiles", "CREATE TABLE metadata (name text, value text);")},
		{"no metadata", bare("nometa.mbtiles", "CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);")},
		{"tiles without tile_data", bare("cols.mbtiles", "CREATE TABLE metadata (name text, value text); CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer);")},
		{"metadata without value", bare("metacols.mbtiles", "CREATE TABLE metadata (name text); CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);")},
		{"tiles an index", bare("index.mbtiles", "CREATE TABLE metadata (name text, value text); CREATE TABLE t (zoom_level integer); CREATE INDEX tiles ON t (zoom_level);")},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := mbtiles.Open(context.Background(), c.path)
			if err == nil {
				d.Close()
				t.Fatal("got a database, want ErrInvalid")
			}
			if !errors.Is(err, mbtiles.ErrInvalid) || strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("got %q, want one line matching ErrInvalid", err)
			}
		})
	}
	t.Run("a missing file", func(t *testing.T) {
		if _, err := mbtiles.Open(context.Background(), filepath.Join(dir, "none.mbtiles")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want os.ErrNotExist", err)
		}
	})
}

// TestOpenLeavesTheFileAlone: immutable and read-only, Open writes no
// journal or WAL beside the database and changes no byte of it.
func TestOpenLeavesTheFileAlone(t *testing.T) {
	db := writeDB(t, "table", fixtureTiles(t, false), map[string]string{"format": "png"})
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	d, err := mbtiles.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Tile(context.Background(), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Dir(db))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !bytes.Equal(before, after) {
		t.Errorf("got %d files (%v), bytes equal %v, want the database alone and unchanged", len(entries), entries, bytes.Equal(before, after))
	}
}

func TestConcurrentReaders(t *testing.T) {
	tiles := fixtureTiles(t, true)
	db := writeDB(t, "view", tiles, map[string]string{"format": "pbf"})
	d := openDB(t, db)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 200 {
				z := r.IntN(3)
				x, y := r.IntN(1<<z), r.IntN(1<<z)
				got, err := d.Tile(context.Background(), uint8(z), uint32(x), uint32(y))
				if want := tiles[zxy{z, x, 1<<z - 1 - y}]; err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("tile %d/%d/%d: got %d bytes, %v, want %d bytes", z, x, y, len(got), err, len(want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestGDALDatabase reads a database written by GDAL's MBTiles driver.
func TestGDALDatabase(t *testing.T) {
	create := sqlitetest.Need(t, "gdal_create", "gdal-bin")
	translate := sqlitetest.Need(t, "gdal_translate", "gdal-bin")
	dir := t.TempDir()
	tif, db := filepath.Join(dir, "in.tif"), filepath.Join(dir, "gdal.mbtiles")
	for _, args := range [][]string{
		{create, "-of", "GTiff", "-outsize", "512", "512", "-bands", "3", "-burn", "200", "-burn", "100", "-burn", "50",
			"-a_srs", "EPSG:3857", "-a_ullr", "-20037508.34", "20037508.34", "20037508.34", "-20037508.34", tif},
		{translate, "-q", "-of", "MBTILES", tif, db},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", filepath.Base(args[0]), err, out)
		}
	}
	if n := checkAgainstSQLite(t, db); n == 0 {
		t.Fatal("got no tiles from sqlite3")
	}
	d := openDB(t, db)
	tj, err := d.Metadata(context.Background(), "https://t.example", "gdal")
	if err != nil {
		t.Fatal(err)
	}
	if tj.Format != "png" || len(tj.Bounds) != 4 || tj.MaxZoom < tj.MinZoom {
		t.Errorf("got %s, want png tiles, bounds and zooms", tj.Marshal())
	}
}

// TestEachMatchesSQLite walks every tile and compares it with sqlite3's
// reading, rows flipped to XYZ.
func TestEachMatchesSQLite(t *testing.T) {
	sqlitetest.Need(t, "sqlite3", "sqlite3")
	for _, layout := range []string{"table", "view"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			db := writeDB(t, layout, fixtureTiles(t, true), map[string]string{"format": "pbf"})
			want := sqlitetest.ReadTiles(t, db)
			d := openDB(t, db)
			got := map[pmtiles.ZXY][]byte{}
			err := d.Each(context.Background(), func(z uint8, x, y uint32, b []byte) error {
				got[pmtiles.ZXY{Z: z, X: x, Y: y}] = b
				return nil
			})
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("got %d tiles (%v), want sqlite3's %d, equal", len(got), err, len(want))
			}
			stop := errors.New("stop")
			n := 0
			if err := d.Each(context.Background(), func(uint8, uint32, uint32, []byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
				t.Errorf("stopping: got %v after %d tiles, want stop after 1", err, n)
			}
		})
	}
}

// TestFormatSniffedPastEmptyTiles: without a format row the format comes
// from a stored tile, and an empty tile (or NULL) stored first tells nothing.
func TestFormatSniffedPastEmptyTiles(t *testing.T) {
	sqlitetest.Need(t, "sqlite3", "sqlite3")
	for _, empty := range []string{"X''", "NULL"} {
		t.Run(empty, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), "e.mbtiles")
			sqlitetest.Run(t, db, "CREATE TABLE metadata (name text, value text);\n"+
				"CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\n"+
				"INSERT INTO tiles VALUES (1, 0, 0, "+empty+");\n"+
				"INSERT INTO tiles VALUES (0, 0, 0, X'89504e470d0a1a0a');\n")
			d := openDB(t, db)
			if got := d.Format(); got != "png" {
				t.Errorf("got %q, want png", got)
			}
		})
	}
}
