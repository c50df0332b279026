package disk_test

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/tilegen"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// heapDelta is the live heap fn leaves behind.
func heapDelta(fn func()) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// TestIndexBytes indexes distinct, realistic keys with distinct ETags and
// checks Stats().IndexBytes against the live heap the index grew by. Not
// parallel: it reads the process's heap.
func TestIndexBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 5,000 files")
	}
	const n = 5000
	keys := tilegen.Keys(n, 0x7115e5e5)
	tiles := make([]*tile.Tile, n)
	for i := range tiles {
		tiles[i] = &tile.Tile{Body: []byte("b"), ETag: fmt.Sprintf(`"%032x"`, i*7919)}
	}
	s := open(t, t.TempDir(), 1<<40)
	grew := heapDelta(func() {
		for i, k := range keys {
			put(t, s, k, tiles[i])
		}
	})
	est := s.Stats().IndexBytes
	t.Logf("%d entries: heap grew %d bytes (%.1f per entry), IndexBytes %d (%.1f per entry)",
		s.Len(), grew, float64(grew)/n, est, float64(est)/n)
	if lo, hi := grew*3/4, grew*5/4; est < lo || est > hi {
		t.Errorf("IndexBytes %d, want within ±25%% of the measured %d", est, grew)
	}
	runtime.KeepAlive(keys)
	runtime.KeepAlive(tiles)
	runtime.KeepAlive(s)
}

// TestOpenDoesNotLoadBody streams a large body in order and a range of it:
// neither allocates more than a small buffer, however big the tile.
// Not parallel: it reads the process's allocation counter.
func TestOpenDoesNotLoadBody(t *testing.T) {
	const size = 8 << 20
	s := open(t, t.TempDir(), 1<<30)
	put(t, s, "big/1", &tile.Tile{Body: make([]byte, size)})
	for _, ranged := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, b, ok := s.Open("big/1")
		if !ok {
			t.Fatal("miss")
		}
		var n int64
		var err error
		if ranged {
			b.Seek(size/2, io.SeekStart)
			n, err = io.CopyN(io.Discard, b, 1<<20)
		} else {
			n, err = io.Copy(io.Discard, b)
		}
		b.Close()
		runtime.ReadMemStats(&after)
		if err != nil || (n != size && !ranged) {
			t.Fatalf("ranged %v: read %d, %v", ranged, n, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<10 {
			t.Errorf("ranged %v: streaming a %d-byte body allocated %d bytes", ranged, size, alloc)
		}
	}
}
