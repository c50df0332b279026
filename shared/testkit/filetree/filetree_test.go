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
