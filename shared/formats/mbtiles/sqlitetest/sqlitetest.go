// Package sqlitetest builds and reads the MBTiles tests' fixtures. Write
// needs no outside tool: it uses the SQLite library the product reads
// MBTiles with. Need, Run and ReadTiles find and run the command-line
// tools, Debian's sqlite3 and gdal-bin; a test whose tool is missing is
// skipped with one line, or failed when TILESIEVE_REQUIRE_SQLITE3=1 (CI
// installs the tools and sets it).
package sqlitetest

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
	_ "modernc.org/sqlite" // the "sqlite" driver, as the product's mbtiles package registers it
)

// RequireEnv, set to 1, makes a missing sqlite3 or GDAL tool a failure.
const RequireEnv = "TILESIEVE_REQUIRE_SQLITE3"

// Need returns the path of tool, from the Debian package pkg, or skips t
// (fails it when RequireEnv is 1) when it is missing.
func Need(t testing.TB, tool, pkg string) string {
	t.Helper()
	return tooltest.Debian(tool, pkg, RequireEnv).Path(t)
}

// Run runs script through the sqlite3 tool on db and returns what it
// printed; an error, or anything on its stderr, fails the test.
func Run(t testing.TB, db, script string) string {
	t.Helper()
	cmd := exec.Command(Need(t, "sqlite3", "sqlite3"), "-batch", db)
	cmd.Stdin = strings.NewReader(script)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("sqlite3 %s: %v: %s", db, err, stderr.String())
	}
	return out.String()
}

// Write creates the database at path by executing stmts in order, closes
// it, and returns its bytes; a statement that fails fails the test.
func Write(t testing.TB, path string, stmts ...string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("sqlitetest: %s: %v", path, err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("sqlitetest: %s: %s: %v", path, s, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("sqlitetest: %s: %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("sqlitetest: %v", err)
	}
	return b
}
