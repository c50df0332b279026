package lambdatest

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Stop shuts the emulator down as Lambda ends an execution environment: it
// sends the function SIGTERM (the Go runtime's internal extension asks for
// it), gives it a deadline, then kills it. Stop returns how long the
// emulator took to exit; the function's own exit shows in Output, which
// says when it had to be killed (Killed).
func (e *Emulator) Stop(t testing.TB) time.Duration {
	t.Helper()
	began := time.Now()
	if err := e.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("stop %s: %v", RIEBinary, err)
	}
	select {
	case <-e.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not exit within 10s of its interrupt\n%s", RIEBinary, e.Output())
	}
	return time.Since(began)
}

// Killed reports whether the emulator had to kill the function at its
// shutdown deadline, instead of the function exiting by itself.
func (e *Emulator) Killed() bool {
	return strings.Contains(e.Output(), "did not exit after deadline")
}
