package lambdatest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
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

func (e *endTB) Skip(args ...any) { e.Skipf("%s", fmt.Sprint(args...)) }

func (e *endTB) Fatal(args ...any) { e.Fatalf("%s", fmt.Sprint(args...)) }

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
			if want := RIEBinary + " not found"; len(rec.msg) < len(want) || rec.msg[:len(want)] != want {
				t.Errorf("got message %q, want it to start with %q", rec.msg, want)
			}
		})
	}
}

// TestLockFileGivesUp: a lock another holder keeps is waited for, once
// said, then given up with an error at the deadline; released, it is taken.
func TestLockFileGivesUp(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(path, time.Now(), func() { t.Error("waiting called for a free lock") })
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	if _, err := lockFile(path, time.Now().Add(150*time.Millisecond), func() { waits++ }); err == nil || !strings.Contains(err.Error(), "still held") {
		t.Errorf("second lock: err %v; want it given up while the first is held", err)
	}
	if waits != 1 {
		t.Errorf("waiting called %d times, want 1", waits)
	}
	unlock()
	again, err := lockFile(path, time.Now(), func() {})
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	again()
}
