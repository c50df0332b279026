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

// LoadAvg is the machine's 1, 5 and 15 minute load averages as
// /proc/loadavg gives them ("1.65, 1.95, 2.75"); "" where it is not there.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], ", ")
}
