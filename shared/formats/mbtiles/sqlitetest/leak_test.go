package sqlitetest_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
)

// TestOpenDatabases counts a handle from sql.Open until it is closed. Not
// parallel: the count is the process's, and parallel tests start after.
func TestOpenDatabases(t *testing.T) {
	before := sqlitetest.OpenDatabases()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	if got := sqlitetest.OpenDatabases(); got != before+1 {
		t.Errorf("open: got %d, want %d", got, before+1)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got := sqlitetest.OpenDatabases()
	for deadline := time.Now().Add(time.Second); got != before && time.Now().Before(deadline); got = sqlitetest.OpenDatabases() {
		time.Sleep(10 * time.Millisecond)
	}
	if got != before {
		t.Errorf("closed: got %d, want %d", got, before)
	}
}
