package memory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// heapBase is the live heap a cache may hold beyond its bound whatever it
// holds: the Cache value with its shard array and read stripes, a table per
// shard, and the slack of index tables sized ahead of their keys.
const heapBase = 512 << 10

// TestHeapWithinBound fills caches far past their bound with distinct tiles
// (distinct keys, bodies, ETags and content types, as origin responses give)
// and with remembered 404s under random keys (a flood of missing keys), and
// checks that the live heap they hold, after GC, is at most 1.1x the bound
// plus heapBase. Not parallel: it reads the process's heap.
func TestHeapWithinBound(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~100 MB")
	}
	const bound = 16 << 20
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		make func(r *rand.Rand, i int) (string, *tile.Tile)
	}{
		{"distinct tiles", func(r *rand.Rand, i int) (string, *tile.Tile) {
			body := make([]byte, 50+r.IntN(4000))
			return fmt.Sprintf("osm/14/%d/%d.mvt", r.IntN(1<<14), i), &tile.Tile{
				Body:         body,
				ContentType:  strings.Clone("application/vnd.mapbox-vector-tile"),
				ETag:         fmt.Sprintf(`"%032x"`, r.Uint64()),
				LastModified: now,
				StoredAt:     now,
			}
		}},
		{"404 flood", func(r *rand.Rand, i int) (string, *tile.Tile) {
			return fmt.Sprintf("osm/%d/%d/%d.png", r.IntN(20), r.Uint32(), r.Uint32()),
				&tile.Tile{Missing: true, StoredAt: now}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c, err := New(Config{MaxBytes: bound})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			// Until the cache has turned over twice.
			for i := 0; i%1024 != 1023 || c.Stats().Evictions < 2*int64(c.Len()); i++ {
				k, tl := tt.make(r, i)
				c.Set(k, tl)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			limit := int64(bound)*11/10 + heapBase
			t.Logf("%d entries charged %d of %d: live heap grew %d (%.2fx the bound), limit %d",
				c.Len(), c.Bytes(), bound, grew, float64(grew)/bound, limit)
			if grew > limit {
				t.Errorf("live heap grew %d bytes, want <= 1.1 x %d + %d = %d", grew, bound, heapBase, limit)
			}
			if c.Stats().Evictions == 0 {
				t.Error("nothing was evicted: the test did not fill the cache")
			}
			runtime.KeepAlive(c)
		})
	}
}
