// Package filetree writes a tree of files for tests: tile directories,
// styles with their sprites and fonts, whatever a command reads from disk.
// Every failure fails the test, so a test states only what the tree holds.
package filetree

import (
	"os"
	"path/filepath"
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
