package mbtiles_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
)

// seedDB writes a small valid database with the package's own SQLite
// library, so the seed corpus needs no outside tool.
func seedDB(f *testing.F, layout string) []byte {
	f.Helper()
	script := []string{
		`CREATE TABLE metadata (name text, value text)`,
		`INSERT INTO metadata VALUES ('format', 'pbf'), ('minzoom', '0'), ('maxzoom', '1'), ('json', '{"vector_layers":[]}')`,
	}
	if layout == "view" {
		script = append(script,
			`CREATE TABLE map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT)`,
			`CREATE TABLE images (tile_data blob, tile_id text)`,
			`INSERT INTO map VALUES (0, 0, 0, 'a'), (1, 0, 0, 'a'), (1, 1, 1, 'b')`,
			`INSERT INTO images VALUES (X'1f8b0800', 'a'), (X'1f8b0801', 'b')`,
			`CREATE VIEW tiles AS SELECT zoom_level, tile_column, tile_row, tile_data FROM map JOIN images ON images.tile_id = map.tile_id`)
	} else {
		script = append(script,
			`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
			`CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row)`,
			`INSERT INTO tiles VALUES (0, 0, 0, X'89504e470d0a1a0a'), (1, 0, 1, X'ffd8ff')`)
	}
	return sqlitetest.Write(f, filepath.Join(f.TempDir(), "seed.mbtiles"), script...)
}

// FuzzOpen: whatever the bytes, Open and the reads after it return errors,
// never panic or hang.
func FuzzOpen(f *testing.F) {
	for _, layout := range []string{"table", "view"} {
		b := seedDB(f, layout)
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:100])
		flipped := append([]byte(nil), b...)
		flipped[len(flipped)-100] ^= 0xff
		f.Add(flipped)
	}
	f.Add([]byte("SQLite format 3\x00"))
	f.Add([]byte("not a database at all"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "fuzz.mbtiles")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := mbtiles.Open(context.Background(), p)
		if err != nil {
			return
		}
		defer d.Close()
		for _, c := range [][3]uint32{{0, 0, 0}, {1, 0, 0}, {1, 1, 1}} {
			_, _ = d.Tile(context.Background(), uint8(c[0]), c[1], c[2])
		}
		_, _ = d.Metadata(context.Background(), "https://t.example", "fuzz")
	})
}
