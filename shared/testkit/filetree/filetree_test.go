package filetree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string][]byte{
		"osm/0/0/0.png":               []byte("png"),
		"metadata.json":               []byte("{}"),
		"fonts/Noto Sans/0-255.pbf":   {},
		"deep/er/than/one/level.json": []byte("[]"),
	}
	filetree.Write(t, dir, files)
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}

func TestOpenUnder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	filetree.Write(t, dir, map[string][]byte{"a/held": nil, "a/closed": nil})
	f, err := os.Open(filepath.Join(dir, "a", "held"))
	if err != nil {
		t.Fatal(err)
	}
	if got := filetree.OpenUnder(t, dir); len(got) != 1 || got[0] != filepath.Join(dir, "a", "held") {
		t.Errorf("open: got %q, want only a/held", got)
	}
	if got := filetree.OpenUnder(t, filepath.Join(dir, "a", "he")); len(got) != 0 {
		t.Errorf("below a/he: got %q, want none (a prefix of a name is no directory)", got)
	}
	f.Close()
	if got := filetree.OpenUnder(t, dir); len(got) != 0 {
		t.Errorf("after Close: got %q, want none", got)
	}
}
