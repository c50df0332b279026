package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadInit: the bootstrap's inittrace lines are those after the
// emulator execs it; the emulator's own, before, are not counted.
func TestReadInit(t *testing.T) {
	t.Parallel()
	log := `init runtime @0.033 ms, 0.10 ms clock, 0 bytes, 0 allocs
07 Dec 2026 10:38:17,900 [INFO] (rapid) exec '/tmp/x/bootstrap' (cwd=/tmp/x, handler=)
init runtime @0.05 ms, 0.20 ms clock, 0 bytes, 0 allocs
init net/http @2.5 ms, 0.023 ms clock, 4712 bytes, 49 allocs
{"level":"INFO","msg":"ready"}
`
	p := filepath.Join(t.TempDir(), "rie.log")
	if err := os.WriteFile(p, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readInit(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].clock != 200*time.Microsecond || got[1].pkg != "net/http" || got[1].bytes != 4712 || got[1].allocs != 49 {
		t.Fatalf("got %+v", got)
	}
}
