package sqlitetest_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// TestReadTilesFlipsRows: rows written in TMS order come back at their XYZ
// coordinates, an empty blob as no bytes.
func TestReadTilesFlipsRows(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "t.mbtiles")
	sqlitetest.Run(t, db, "CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\n"+
		"INSERT INTO tiles VALUES (0, 0, 0, X'00'), (2, 1, 0, X'2a10'), (2, 3, 3, X'ff'), (3, 5, 1, X'');\n")
	got := sqlitetest.ReadTiles(t, db)
	for _, tc := range []struct {
		at   pmtiles.ZXY
		want []byte
	}{
		{pmtiles.ZXY{Z: 0, X: 0, Y: 0}, []byte{0}},
		{pmtiles.ZXY{Z: 2, X: 1, Y: 3}, []byte{0x2a, 0x10}},
		{pmtiles.ZXY{Z: 2, X: 3, Y: 0}, []byte{0xff}},
		{pmtiles.ZXY{Z: 3, X: 5, Y: 6}, []byte{}},
	} {
		b, ok := got[tc.at]
		if !ok || !bytes.Equal(b, tc.want) {
			t.Errorf("%v: got %x (present %v), want %x", tc.at, b, ok, tc.want)
		}
	}
	if len(got) != 4 {
		t.Errorf("got %d tiles, want 4: %v", len(got), got)
	}
}
