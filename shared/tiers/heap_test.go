package tiers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// fillWith404s fills a memory tier of bound bytes past its bound with
// remembered 404s through an engine over an in-process S3, each key cut
// from a request line with a query string of query bytes, and returns the
// live heap it grew by, after GC. Not parallel: it reads the process's heap.
func fillWith404s(t *testing.T, bound int64, query int) int64 {
	t.Helper()
	if testing.Short() {
		t.Skip("thousands of S3 requests")
	}
	srv, err := s3local.New(s3local.Config{Buckets: []string{bucket}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	mem, err := memory.New(memory.Config{MaxBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := tiers.New(tiers.Config{NegativeTTL: time.Hour}, tiers.Deps{Memory: mem,
		Origin: origin.NewWithS3(srv.Client(hs.URL), origin.Config{Bucket: bucket, Prefix: "tiles/"})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Drain)
	ctx := context.Background()
	q := strings.Repeat("q", query)
	get := func(i int) {
		line := fmt.Sprintf("GET /flood/18/%d/%d.png?%s HTTP/1.1", i, i*7, q)
		key := line[len("GET /"):strings.IndexByte(line, '?')]
		if _, err := eng.Get(ctx, key, time.Now()); !errors.Is(err, tile.ErrNotFound) {
			t.Fatalf("%s: got %v, want %v", key, err, tile.ErrNotFound)
		}
	}
	get(0) // the first request's one-time allocations (clients, pools)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 1; mem.Stats().Evictions < int64(mem.Len()); i++ {
		get(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d entries charged %d: live heap grew %d (%.2fx the bound)", mem.Len(), mem.Bytes(), grew, float64(grew)/float64(bound))
	runtime.KeepAlive(mem)
	return grew
}

// tierBytes is the memory tier's bound in the two tests below. Each fill
// costs about two S3 requests per entry the tier holds, the tests' time
// under -race. Their limits are multiples of the bound, and at 512 KiB
// (1,872 remembered 404s) each still fails on the fault it is for: a stored
// key that keeps its request line alive grows the heap to 4.4x the bound
// (limit 2.1x), one Tile per remembered 404 to 0.85x (limit 0.7x).
const tierBytes = 512 << 10

// TestStoredKeysHoldOnlyThemselves: a key the server derives from a request
// is a substring of the request's line, query string included. The memory
// tier charges an entry for its key's bytes, so a stored key must not keep
// that whole line alive: a 404 flood with long query strings would hold
// many times MEM_CACHE_BYTES.
func TestStoredKeysHoldOnlyThemselves(t *testing.T) {
	const bound = tierBytes
	grew := fillWith404s(t, bound, 1<<10)
	// The bound with the cache's own allowance (TestHeapWithinBound) and
	// as much again for the engine's and the S3 client's live state.
	if limit := int64(bound)*11/10 + bound; grew > limit {
		t.Errorf("live heap grew %d bytes, want <= %d (2.1 x %d)", grew, limit, bound)
	}
}

// TestRemembered404sShareTheirTile: misses close together share one
// remembered 404, so a tier full of them holds well under its bound (each
// entry is still charged a whole Tile), leaving the heap's own overhead
// room inside the process's memory limit.
func TestRemembered404sShareTheirTile(t *testing.T) {
	const bound = tierBytes
	grew := fillWith404s(t, bound, 0)
	if limit := int64(bound) * 7 / 10; grew > limit {
		t.Errorf("live heap grew %d bytes, want <= %d (0.7 x %d)", grew, limit, bound)
	}
}
