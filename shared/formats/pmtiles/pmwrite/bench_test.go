package pmwrite_test

import (
	"encoding/binary"
	"io"
	"runtime"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

// BenchmarkWriteDistinctTiles writes b.N distinct tiles of zoom 12 and
// reports the heap the writer holds per tile once they are added (its
// entries and hashes; the tile bytes are in the temporary file).
func BenchmarkWriteDistinctTiles(b *testing.B) {
	b.ReportAllocs()
	w, err := pmwrite.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tile := make([]byte, 64)
	b.ResetTimer()
	for i := range b.N {
		binary.LittleEndian.PutUint64(tile, uint64(i))
		if err := w.Add(12, uint32(i%4096), uint32(i/4096%4096), tile); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-B/tile")
	b.StartTimer()
	if _, err := w.Finish(io.Discard, pmwrite.Options{TileType: pmtiles.TileTypePNG}); err != nil {
		b.Fatal(err)
	}
}
