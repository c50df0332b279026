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

	"github.com/tilesieve/tilesieve/infra/devstack/s3local"
	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/tiers"
)

// TestStoredKeysHoldOnlyThemselves: a key the server derives from a request
// is a substring of the request's line, query string included. The memory
// tier charges an entry for its key's bytes, so a stored key must not keep
// that whole line alive: a 404 flood with long query strings would hold
// many times MEM_CACHE_BYTES. Fills a tier past its bound with remembered
// 404s whose keys are cut from 1 KiB lines, and checks the live heap it
// holds after GC. Not parallel: it reads the process's heap.
func TestStoredKeysHoldOnlyThemselves(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of S3 requests")
	}
	const bound = 1 << 20
	srv, err := s3local.New(s3local.Config{Buckets: []string{bucket}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	mem, err := cache.New(cache.Config{MaxBytes: bound})
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
	query := strings.Repeat("q", 1<<10)
	get := func(i int) {
		line := fmt.Sprintf("GET /flood/18/%d/%d.png?%s HTTP/1.1", i, i*7, query)
		key := line[len("GET /"):strings.IndexByte(line, '?')]
		if _, err := eng.Get(ctx, key, time.Now()); !errors.Is(err, origin.ErrNotFound) {
			t.Fatalf("%s: got %v, want %v", key, err, origin.ErrNotFound)
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
	// The bound with the cache's own allowance (TestHeapWithinBound) and
	// as much again for the engine's and the S3 client's live state.
	limit := int64(bound)*11/10 + 1<<20
	t.Logf("%d entries charged %d: live heap grew %d (%.2fx the bound)", mem.Len(), mem.Bytes(), grew, float64(grew)/bound)
	if grew > limit {
		t.Errorf("live heap grew %d bytes, want <= %d (1.1 x %d + 1 MiB)", grew, limit, bound)
	}
	runtime.KeepAlive(mem)
}
