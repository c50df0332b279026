//go:build !linux

package e2e

import (
	"errors"
	"time"
)

// ProcessCPU is the CPU time process pid has used; only Linux has it here.
func ProcessCPU(pid int) (time.Duration, error) {
	return 0, errors.New("e2e: a process's CPU clock is read on Linux only")
}
