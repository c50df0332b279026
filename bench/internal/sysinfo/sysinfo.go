// Package sysinfo reads what the benchmark reports say about the machine.
package sysinfo

import (
	"os"
	"strings"
)

// CPUModel is the first "model name" of /proc/cpuinfo; ok is false when the
// file cannot be read or has no such line.
func CPUModel() (model string, ok bool) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
