package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestProcessCPU: a child that burns CPU shows it on its clock, which
// never goes back, and not more than the child used in all.
func TestProcessCPU(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self"); err != nil {
		t.Skip("no /proc: not Linux")
	}
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done; read x; exit 0")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first, err := ProcessCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	burnt, err := ProcessCPU(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	total := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if burnt <= first || burnt <= time.Millisecond {
		t.Errorf("CPU clock %v at start, %v after the loop: want it to have grown past 1ms", first, burnt)
	}
	// rusage counts in ticks of the scheduler; allow one either way.
	if burnt > total+10*time.Millisecond {
		t.Errorf("CPU clock %v after the loop, more than the %v the child used in all", burnt, total)
	}
	if _, err := ProcessCPU(cmd.Process.Pid); err == nil {
		t.Error("the CPU clock of a process that was reaped was read")
	}
}
