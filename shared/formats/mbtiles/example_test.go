package mbtiles_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
)

// A database as a tile pipeline writes it: rows counted from the bottom
// (TMS), so XYZ tile 1/0/0 is stored at row 1.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "mbtiles-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "roads.mbtiles")
	w, _ := sql.Open("sqlite", path)
	for _, s := range []string{
		`CREATE TABLE metadata (name text, value text)`,
		`INSERT INTO metadata VALUES ('name', 'Roads'), ('format', 'pbf'), ('json', '{"vector_layers":[{"id":"roads","fields":{}}]}')`,
		`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
		`INSERT INTO tiles VALUES (1, 0, 1, X'1f8b08000000')`,
	} {
		if _, err := w.Exec(s); err != nil {
			fmt.Println(err)
			return
		}
	}
	w.Close()

	ctx := context.Background()
	db, err := mbtiles.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	tile, err := db.Tile(ctx, 1, 0, 0)
	fmt.Println(len(tile), err, db.ContentType(), mbtiles.ContentEncoding(tile))
	tj, _ := db.Metadata(ctx, "https://tiles.example.com", "roads")
	fmt.Println(tj.Tiles[0], tj.MinZoom, tj.MaxZoom, string(tj.VectorLayers))
	// Output:
	// 6 <nil> application/vnd.mapbox-vector-tile gzip
	// https://tiles.example.com/roads/{z}/{x}/{y}.pbf 1 1 [{"id":"roads","fields":{}}]
}
