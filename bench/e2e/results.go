package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/internal/sysinfo"
)

// Target is one stated goal of a section and whether the run met it.
type Target struct {
	What   string  `json:"what"`   // "memory hit ≤ 1.5x static"
	Want   float64 `json:"want"`   // the bound
	Got    float64 `json:"got"`    // the measured ratio or value
	Unit   string  `json:"unit"`   // "x", "MiB", …
	Higher bool    `json:"higher"` // true: Got must be ≥ Want; false: ≤
	Met    bool    `json:"met"`
	Reason string  `json:"reason,omitempty"` // why it was missed, or a caveat
}

// Check fills Met from Got and Want.
func (t Target) Check() Target {
	if t.Higher {
		t.Met = t.Got >= t.Want
	} else {
		t.Met = t.Got <= t.Want
	}
	return t
}

// Machine describes where the run happened.
type Machine struct {
	GoVersion string    `json:"go_version"`
	CPU       string    `json:"cpu"`
	NProc     int       `json:"nproc"`
	OS        string    `json:"os"`
	Kernel    string    `json:"kernel"`
	Tools     []string  `json:"tools"`
	Date      time.Time `json:"date"`
}

// ThisMachine reads the machine's description.
func ThisMachine(tools []string) Machine {
	m := Machine{GoVersion: runtime.Version(), NProc: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Tools: tools, Date: time.Now().UTC()}
	m.CPU, _ = sysinfo.CPUModel()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// SaveJSON writes v as dir/name.json.
func SaveJSON(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644)
}

// LoadJSON reads dir/name.json into v; false if it does not exist.
func LoadJSON(dir, name string, v any) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// Milliseconds of d as a float.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
