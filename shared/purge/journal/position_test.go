package journal

import (
	"os"
	"path/filepath"
	"testing"
)

// tempPosition is a position file of the test's own, not yet written.
func tempPosition(t *testing.T) PositionFile {
	return PositionFile{Path: filepath.Join(t.TempDir(), PositionFileName)}
}

// TestPositionFile: saves are whole, and a corrupt file is an error.
func TestPositionFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := PositionFile{Path: filepath.Join(dir, PositionFileName), Fsync: true}
	if _, ok, err := p.Load(); ok || err != nil {
		t.Fatalf("missing file: ok %v err %v", ok, err)
	}
	want := Position{Journal: "abc", Seq: 42}
	if err := p.Save(want); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := p.Load(); !ok || err != nil || got != want {
		t.Fatalf("got %+v %v %v, want %+v", got, ok, err, want)
	}
	if err := os.WriteFile(p.Path, []byte(`{"journal":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Load(); err == nil {
		t.Error("a torn position file loaded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left in the directory: %d, want only the position file", len(entries))
	}
}

// TestPositionFileCompatible: a position file written before digests were
// kept loads, with the entry unknown; one with a digest keeps it.
func TestPositionFileCompatible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want Position
	}{
		{`{"journal":"abc","seq":42}`, Position{Journal: "abc", Seq: 42}},
		{`{"journal":"abc","seq":42,"entry":"0123"}`, Position{Journal: "abc", Seq: 42, Entry: "0123"}},
		{`{"journal":"","seq":0}`, Position{}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			p := tempPosition(t)
			if err := os.WriteFile(p.Path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, ok, err := p.Load()
			if err != nil || !ok || got != tc.want {
				t.Fatalf("got %+v %v %v, want %+v", got, ok, err, tc.want)
			}
			if err := p.Save(got); err != nil {
				t.Fatal(err)
			}
			if again, _, _ := p.Load(); again != got {
				t.Errorf("after a save: got %+v, want %+v", again, got)
			}
		})
	}
}
