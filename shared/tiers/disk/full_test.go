package disk_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// fakeFS makes a store's directory behave like a small file system of 4 KiB
// blocks: a write that would take more blocks than it has fails with ENOSPC
// after writing what fits, as write(2) does. It keeps count through the
// store's write and remove hooks (a rename keeps a file's blocks), so the
// tests must not replace files.
type fakeFS struct {
	mu     sync.Mutex // guards blocks and usedBlocks
	blocks int64      // capacity
	// usedBlocks is what the files take; the directory starts empty.
	usedBlocks int64
}

const fakeBlock = 4096

func blocksOf(size int64) int64 { return (size + fakeBlock - 1) / fakeBlock }

// install makes s write and remove through f.
func (f *fakeFS) install(s *disk.Store) {
	disk.SetWriteHook(s, f.write)
	disk.SetRemoveHook(s, f.remove)
}

func (f *fakeFS) used() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.usedBlocks
}

func (f *fakeFS) free() (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(0, f.blocks-f.usedBlocks) * fakeBlock, nil
}

func (f *fakeFS) write(file *os.File, p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := file.Stat()
	if err != nil {
		return 0, err
	}
	cur := fi.Size()
	if grow := blocksOf(cur+int64(len(p))) - blocksOf(cur); f.usedBlocks+grow <= f.blocks {
		f.usedBlocks += grow
		return file.Write(p)
	}
	fit := min(max(0, (f.blocks-f.usedBlocks+blocksOf(cur))*fakeBlock-cur), int64(len(p)))
	n, _ := file.Write(p[:fit])
	f.usedBlocks += blocksOf(cur+int64(n)) - blocksOf(cur)
	return n, &fs.PathError{Op: "write", Path: file.Name(), Err: syscall.ENOSPC}
}

func (f *fakeFS) remove(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	f.usedBlocks -= blocksOf(fi.Size())
	return nil
}

// onDisk is what the files under dir take, in fakeFS blocks.
func onDisk(t *testing.T, dir string) int64 {
	var n int64
	for _, rel := range files(t, dir) {
		fi, err := os.Stat(filepath.Join(dir, rel))
		must(t, err)
		n += blocksOf(fi.Size())
	}
	return n
}

func distinctKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("small/%d/%d.png", i/1000, i%1000)
	}
	return keys
}

// TestFullFileSystemKeepsAcceptingTiles fills a 4 KiB-block file system with
// small tiles. A bound that counts file bytes thinks the disk is nearly
// empty when it is full, so every Put after the first ENOSPC would fail and
// no new tile would reach the disk.
func TestFullFileSystemKeepsAcceptingTiles(t *testing.T) {
	t.Parallel()
	const capBlocks = 64
	dir := t.TempDir()
	s := open(t, dir, capBlocks*fakeBlock)
	ffs := &fakeFS{blocks: capBlocks}
	ffs.install(s)
	keys := distinctKeys(3000)
	for i, k := range keys {
		body := strings.Repeat("t", 100+i%200)
		if err := s.Put(k, &tile.Tile{Body: []byte(body), ETag: fmt.Sprintf(`"%d"`, i)}); err != nil {
			t.Fatalf("Put %d of %d (%q): %v", i, len(keys), k, err)
		}
		if got, ok := s.Get(k); !ok || string(got.Body) != body {
			t.Fatalf("Put %d: the new tile is not readable", i)
		}
	}
	if used := onDisk(t, dir); used != ffs.used() || used > capBlocks {
		t.Errorf("files take %d blocks (fake counts %d), capacity %d", used, ffs.used(), capBlocks)
	}
	if st := s.Stats(); st.WriteErrors != 0 || st.Bytes > st.MaxBytes {
		t.Errorf("stats: %+v", st)
	}
}

// TestSharedFileSystemFills: the file system has a quarter of the room the
// bound allows (others hold the rest). The Put that first meets ENOSPC
// evicts and retries; the store then works under what fits, so later Puts
// make room before they write instead of failing first.
func TestSharedFileSystemFills(t *testing.T) {
	t.Parallel()
	const capBlocks = 64
	dir := t.TempDir()
	s := open(t, dir, 4*capBlocks*fakeBlock)
	ffs := &fakeFS{blocks: capBlocks}
	ffs.install(s)
	disk.SetFreeHook(s, func(string) (int64, error) { return ffs.free() })
	keys := distinctKeys(2600)
	for i, k := range keys[:2000] {
		body := strings.Repeat("s", 100+i%3000)
		if err := s.Put(k, &tile.Tile{Body: []byte(body)}); err != nil {
			t.Fatalf("Put %d (%q): %v", i, k, err)
		}
		if got, ok := s.Get(k); !ok || string(got.Body) != body {
			t.Fatalf("Put %d: the new tile is not readable", i)
		}
	}
	st := s.Stats()
	if st.NoSpace == 0 || st.NoSpace > 3 {
		t.Errorf("%d writes hit ENOSPC, want 1 to 3 (then the store works under what fits)", st.NoSpace)
	}
	if st.WriteErrors != 0 || st.LimitBytes > capBlocks*fakeBlock || st.Bytes > st.LimitBytes {
		t.Errorf("stats: %+v", st)
	}
	if used := onDisk(t, dir); used != ffs.used() || used > capBlocks {
		t.Errorf("files take %d blocks (fake counts %d), capacity %d", used, ffs.used(), capBlocks)
	}

	// The others free their space: the store grows back to its bound.
	ffs.mu.Lock()
	ffs.blocks = 8 * capBlocks
	ffs.mu.Unlock()
	for i, k := range keys[2000:] {
		if err := s.Put(k, &tile.Tile{Body: []byte("grown")}); err != nil {
			t.Fatalf("Put %d after the space came back: %v", i, err)
		}
	}
	if st := s.Stats(); st.LimitBytes != st.MaxBytes || st.Entries <= capBlocks {
		t.Errorf("after the space came back: %+v, want the limit back at MaxBytes", st)
	}
}
