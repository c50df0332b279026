package tooltest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// endTB records how a test ended instead of ending the real one.
type endTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (e *endTB) Skip(args ...any) {
	e.skipped, e.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (e *endTB) Fatal(args ...any) {
	e.failed, e.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

// end runs f against a recorder and returns it once f has returned or
// ended the test.
func end(t *testing.T, f func(tb testing.TB)) *endTB {
	rec := &endTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	return rec
}

// TestMissingToolSaysWhatInstallsIt: a missing tool skips the test with
// one line naming it, what installs it and the variable that makes it a
// failure; with the variable at 1 the same line fails it.
func TestMissingToolSaysWhatInstallsIt(t *testing.T) {
	tool := Debian("tilesieve-no-such-tool", "no-such-package", "TILESIEVE_REQUIRE_NOSUCH")
	for _, tc := range []struct {
		require              string
		wantSkip, wantFailed bool
		want                 string
	}{
		{"", true, false, "tilesieve-no-such-tool not found: apt-get install no-such-package (TILESIEVE_REQUIRE_NOSUCH=1 makes this a failure)"},
		{"0", true, false, "tilesieve-no-such-tool not found: apt-get install no-such-package (TILESIEVE_REQUIRE_NOSUCH=1 makes this a failure)"},
		{"1", false, true, "tilesieve-no-such-tool not found and TILESIEVE_REQUIRE_NOSUCH=1: apt-get install no-such-package"},
	} {
		t.Run("require="+tc.require, func(t *testing.T) {
			t.Setenv(tool.Require, tc.require)
			rec := end(t, func(tb testing.TB) { tool.Path(tb) })
			if rec.skipped != tc.wantSkip || rec.failed != tc.wantFailed || rec.msg != tc.want {
				t.Errorf("got skipped %v failed %v %q, want skipped %v failed %v %q", rec.skipped, rec.failed, rec.msg, tc.wantSkip, tc.wantFailed, tc.want)
			}
		})
	}
	t.Run("no variable", func(t *testing.T) {
		rec := end(t, func(tb testing.TB) { Debian("tilesieve-no-such-tool", "p", "").Path(tb) })
		if want := "tilesieve-no-such-tool not found: apt-get install p"; !rec.skipped || rec.msg != want {
			t.Errorf("got skipped %v %q, want a skip %q", rec.skipped, rec.msg, want)
		}
	})
}

// TestFoundToolIsItsPath: a tool on PATH, or at an absolute path, is
// returned and the test goes on.
func TestFoundToolIsItsPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	for _, name := range []string{"tool", bin} {
		var got string
		rec := end(t, func(tb testing.TB) { got = Debian(name, "p", "TILESIEVE_REQUIRE_NOSUCH").Path(tb) })
		if rec.skipped || rec.failed || got != bin {
			t.Errorf("%s: got %q (skipped %v failed %v %q), want %q", name, got, rec.skipped, rec.failed, rec.msg, bin)
		}
	}
}
