package lambdatest

import (
	"fmt"
	"runtime"
	"testing"
)

// endTB records how a helper ended a test, without ending this one.
type endTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (e *endTB) Helper() {}

func (e *endTB) Skipf(format string, args ...any) {
	e.skipped, e.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (e *endTB) Fatalf(format string, args ...any) {
	e.failed, e.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestBuildChecksForTheEmulatorFirst: without aws-lambda-rie on PATH, Build
// ends the test before it runs the go command (here not on PATH either, so
// a build would fail): a skip, or a failure under TILESIEVE_REQUIRE_RIE=1.
func TestBuildChecksForTheEmulatorFirst(t *testing.T) {
	for _, tc := range []struct {
		require              string
		wantSkip, wantFailed bool
	}{
		{require: "", wantSkip: true},
		{require: "1", wantFailed: true},
	} {
		t.Run("TILESIEVE_REQUIRE_RIE="+tc.require, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			t.Setenv("TILESIEVE_REQUIRE_RIE", tc.require)
			rec := &endTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				Build(rec, "github.com/tilesieve/tilesieve/functions/tiles")
			}()
			<-done
			if rec.skipped != tc.wantSkip || rec.failed != tc.wantFailed {
				t.Fatalf("got skipped %v failed %v (%q), want skipped %v failed %v", rec.skipped, rec.failed, rec.msg, tc.wantSkip, tc.wantFailed)
			}
			if want := RIEBinary + " not on PATH"; len(rec.msg) < len(want) || rec.msg[:len(want)] != want {
				t.Errorf("got message %q, want it to start with %q", rec.msg, want)
			}
		})
	}
}
