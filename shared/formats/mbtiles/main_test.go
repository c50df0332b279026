package mbtiles_test

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
)

func TestMain(m *testing.M) { sqlitetest.MainNoneOpen(m) }
