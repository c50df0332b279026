package e2e

import (
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// ProcessCPU is the CPU time process pid has used, its exited threads'
// included: its CPU-time clock (the clock clock_getcpuclockid(3) names),
// read with clock_gettime. Unlike ProcCPU's sum over the threads alive,
// it never goes back when a thread exits.
func ProcessCPU(pid int) (time.Duration, error) {
	// The kernel's MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED).
	clock := ^uintptr(pid)<<3 | 2
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clock, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, fmt.Errorf("e2e: CPU clock of process %d: %w", pid, errno)
	}
	return time.Duration(ts.Nano()), nil
}
