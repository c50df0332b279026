package disk_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
)

// BenchmarkGet is a disk hit of a 12 KB tile, file read and verified, beside
// its floor: os.ReadFile of the same file, what any read of it costs (an
// open, a size, a read, a close). The files are in the page cache, as a disk
// tier's hot tiles are; 64 of them in turn, so no single file stays hot in
// the CPU's caches. bench/cmd/tierbench runs the two side by side and writes
// the section of docs/BENCHMARKS.md.
//
//	go test -run '^$' -bench BenchmarkGet -count 6 ./shared/tiers/disk/
func BenchmarkGet(b *testing.B) {
	dir := b.TempDir()
	s, err := disk.Open(disk.Config{Dir: dir, MaxBytes: 64 << 20}, nil)
	if err != nil {
		b.Fatal(err)
	}
	const n = 64
	keys := make([]string, n)
	body := make([]byte, 12<<10)
	for i := range keys {
		keys[i] = fmt.Sprintf("osm/12/%d/%d.png", i, i)
		if err := s.Put(keys[i], mk(string(body), `"e"`)); err != nil {
			b.Fatal(err)
		}
	}
	files := make([]string, n)
	for i, k := range keys {
		files[i] = filepath.Join(dir, disk.FileName(k))
	}
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, ok := s.Get(keys[i%n]); !ok {
				b.Fatal("miss")
			}
		}
	})
	b.Run("ReadFileFloor", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := os.ReadFile(files[i%n]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
