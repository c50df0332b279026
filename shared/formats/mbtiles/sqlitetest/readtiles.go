package sqlitetest

import (
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// ReadTiles is every tile of the MBTiles database db as the sqlite3 tool
// reads it, keyed by XYZ coordinates: MBTiles rows count from the south
// (TMS), so row r of zoom z is y = 2^z-1-r. A row it cannot parse fails the
// test.
func ReadTiles(t testing.TB, db string) map[pmtiles.ZXY][]byte {
	t.Helper()
	out := Run(t, db, "SELECT zoom_level || ' ' || tile_column || ' ' || tile_row || ' ' || hex(tile_data) FROM tiles;\n")
	tiles := map[pmtiles.ZXY][]byte{}
	for line := range strings.Lines(strings.TrimSpace(out)) {
		f := strings.Fields(line)
		if len(f) == 3 {
			f = append(f, "") // an empty blob prints no hex
		}
		if len(f) != 4 {
			t.Fatalf("sqlitetest: %s: tile row %q: want zoom, column, row and hex data", db, line)
		}
		z, errZ := strconv.ParseUint(f[0], 10, 8)
		x, errX := strconv.ParseUint(f[1], 10, 32)
		row, errR := strconv.ParseUint(f[2], 10, 32)
		b, errB := hex.DecodeString(f[3])
		if errZ != nil || errX != nil || errR != nil || errB != nil || z > pmtiles.MaxZoom || row >= 1<<z {
			t.Fatalf("sqlitetest: %s: tile row %q: want zoom, column, row and hex data", db, line)
		}
		tiles[pmtiles.ZXY{Z: uint8(z), X: uint32(x), Y: uint32(1<<z - 1 - row)}] = b
	}
	return tiles
}
