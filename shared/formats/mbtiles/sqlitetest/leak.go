package sqlitetest

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// openerFrame ends the stack of the goroutine (connectionOpener) every
// open *sql.DB runs until it is closed, started or not yet.
const openerFrame = "\ncreated by database/sql.OpenDB "

// OpenDatabases counts the *sql.DB handles of the process not yet closed,
// by the goroutine each keeps.
func OpenDatabases() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte(openerFrame))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// MainNoneOpen runs a package's tests (call it from TestMain) and fails
// the run when a database any of them opened is still open at the end: a
// server that goes away must close what it opened. A closed handle's
// goroutine ends just after Close returns, so it waits up to a second.
func MainNoneOpen(m *testing.M) {
	code := m.Run()
	if code == 0 {
		open := OpenDatabases()
		for deadline := time.Now().Add(time.Second); open > 0 && time.Now().Before(deadline); open = OpenDatabases() {
			time.Sleep(10 * time.Millisecond)
		}
		if open > 0 {
			fmt.Fprintf(os.Stderr, "sqlitetest: %d databases still open after the tests (a server or DB not closed)\n", open)
			code = 1
		}
	}
	os.Exit(code)
}
