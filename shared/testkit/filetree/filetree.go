// Package filetree writes a tree of files for tests: tile directories,
// styles with their sprites and fonts, whatever a command reads from disk.
// Every failure fails the test, so a test states only what the tree holds.
// OpenUnder tells which files below a directory the process holds open.
package filetree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes each file of files below dir, creating the directories on
// its way. A name is a slash-separated path relative to dir ("osm/0/0/0.png").
func Write(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("filetree: %v", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatalf("filetree: %v", err)
		}
	}
}

// OpenUnder lists the files below dir the process holds open, read from
// /proc/self/fd; it skips the test where there is no /proc (not Linux).
func OpenUnder(t testing.TB, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("filetree: no /proc/self/fd to read open files from: %v", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open
}
