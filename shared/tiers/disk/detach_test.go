package disk_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
)

// gate blocks the first call through it until released, after announcing
// it; later calls pass.
type gate struct {
	once            sync.Once
	reached, opened chan struct{}
}

func newGate() *gate { return &gate{reached: make(chan struct{}), opened: make(chan struct{})} }

func (g *gate) pass() {
	g.once.Do(func() {
		close(g.reached)
		<-g.opened
	})
}

// TestGetWhileUnlinking holds the unlink of a 20k-file purge (2k under
// -short or -race) on its first file: a Get of an unrelated key, a Put of
// an unrelated key and a Put of a purged key all complete meanwhile. When DeletePrefix unlinked under the
// lock its caller held (or its own lock that Gets wait on), they hung.
func TestGetWhileUnlinking(t *testing.T) {
	t.Parallel()
	n := 20_000
	if testing.Short() || raceEnabled {
		n = 2_000 // still 32 unlink batches: the hold is on the first
	}
	last := fmt.Sprintf("purge/%d/%d.png", (n-1)/1000, (n-1)%1000) // a detached key
	s := open(t, t.TempDir(), 1<<30)
	for i := range n {
		put(t, s, fmt.Sprintf("purge/%d/%d.png", i/1000, i%1000), mk("p", `"p"`))
	}
	put(t, s, "other/1.png", mk("other", `"o"`))

	d := s.Detach("purge/")
	if d.Entries != n || s.Len() != 1 {
		t.Fatalf("Detach: got %d entries (%d left), want %d (1 left)", d.Entries, s.Len(), n)
	}
	g := newGate()
	disk.SetRemoveHook(s, func(path string) error { g.pass(); return os.Remove(path) })
	done := make(chan error)
	go func() { done <- d.Unlink() }()
	<-g.reached // the unlink loop is stopped inside its first batch

	if got, ok := s.Get("other/1.png"); !ok || string(got.Body) != "other" {
		t.Fatalf("Get of an unrelated key during the unlink: got %v, %v", got, ok)
	}
	put(t, s, "other/2.png", mk("new", `"n"`))
	// A detached key is not served, and a new version of one (outside the
	// batch being unlinked) is stored and survives the unlink.
	if _, ok := s.Get(last); ok {
		t.Fatal("a detached tile was served")
	}
	put(t, s, last, mk("fresh", `"f"`))

	close(g.opened)
	if err := <-done; err != nil {
		t.Fatalf("Unlink: %v", err)
	}
	if got, ok := s.Get(last); !ok || string(got.Body) != "fresh" {
		t.Fatalf("the version Put after the detach: got %v, %v, want it kept", got, ok)
	}
	if got, want := len(tileFiles(t, s.Dir())), 3; got != want || s.Len() != want {
		t.Errorf("after Unlink: %d files, %d entries, want %d", got, s.Len(), want)
	}
}

// TestPutWaitsForItsFileUnlink: a Put of a key whose file is being unlinked
// at that moment waits for it, so the unlink cannot remove the new file.
func TestPutWaitsForItsFileUnlink(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<20)
	put(t, s, "p/1", mk("old", `"old"`))
	d := s.Detach("p/")
	g := newGate()
	disk.SetRemoveHook(s, func(path string) error { g.pass(); return os.Remove(path) })
	unlinked := make(chan error)
	go func() { unlinked <- d.Unlink() }()
	<-g.reached
	putDone := make(chan error)
	go func() { putDone <- s.Put("p/1", mk("new", `"new"`)) }()
	// The Put cannot commit until the file is gone: release the unlink.
	close(g.opened)
	if err := <-unlinked; err != nil {
		t.Fatal(err)
	}
	if err := <-putDone; err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Get("p/1"); !ok || string(got.Body) != "new" {
		t.Fatalf("got %v, %v, want the new version", got, ok)
	}
}

// TestDetachedFiles: a Put in flight when Detach runs is not committed;
// detached files are not served; a failed unlink is reported and retried;
// a store opened over the directory before Unlink finds the files again.
func TestDetachedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 1<<20)
	for i := range 10 {
		put(t, s, fmt.Sprintf("d/%d", i), mk("x", `"x"`))
	}
	put(t, s, "keep/1", mk("k", `"k"`))

	writing, release := holdFirstWrite(s)
	putErr := make(chan error)
	go func() { putErr <- s.Put("d/new", mk("stale", `"s"`)) }()
	<-writing
	d := s.Detach("d/")
	close(release)
	if err := <-putErr; !errors.Is(err, disk.ErrPurged) {
		t.Fatalf("Put overtaken by Detach: got %v, want ErrPurged", err)
	}
	if d.Entries != 10 || d.Bytes != 10*s.Charge("d/0", mk("x", `"x"`)) {
		t.Errorf("Detach: got %d entries, %d bytes", d.Entries, d.Bytes)
	}
	for i := range 10 {
		k := fmt.Sprintf("d/%d", i)
		if _, ok := s.Get(k); ok {
			t.Errorf("detached %s served", k)
		}
		if _, _, ok := s.Open(k); ok {
			t.Errorf("detached %s opened", k)
		}
	}
	if len(tileFiles(t, dir)) != 11 {
		t.Fatalf("files before Unlink: %v", tileFiles(t, dir))
	}
	// A restart before the unlink finds them (the purge was not recorded as
	// applied, so it will be applied again).
	if r := open(t, dir, 1<<20); r.Len() != 11 {
		t.Errorf("reopened before Unlink: %d entries, want 11", r.Len())
	}

	// A read-only file system: the unlink fails, is reported, and a second
	// Unlink retries.
	disk.SetRemoveHook(s, func(path string) error {
		return &fs.PathError{Op: "remove", Path: path, Err: syscall.EROFS}
	})
	if err := d.Unlink(); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Unlink on a read-only disk: got %v, want EROFS", err)
	}
	disk.SetRemoveHook(s, os.Remove)
	if err := d.Unlink(); err != nil {
		t.Fatalf("second Unlink: %v", err)
	}
	got := tileFiles(t, dir)
	if want := []string{disk.FileName("keep/1")}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("files after Unlink: got %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, disk.FileName("d/new"))); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the purged Put left its file")
	}
	if err := (disk.Detached{}).Unlink(); err != nil {
		t.Errorf("zero Detached: %v", err)
	}
}
