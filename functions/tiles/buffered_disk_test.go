package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"runtime"
	"testing"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestBufferedDiskHitLeavesNoGarbage: a buffered disk hit reads its body
// and builds its payload in pooled buffers: Handle and the runtime's read
// and Close of its payload allocate far less than the tile (3.7 KB of a
// 300 KB tile, when no collection empties the pools). Not parallel: it
// reads the process's allocation counters.
func TestBufferedDiskHitLeavesNoGarbage(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers on purpose: make test runs it without -race")
	}
	s3e := s3localtest.Start(t, "tiles")
	body := compressible(300 << 10) // past the memory tier's entry limit: answered from disk
	s3localtest.Put(t, s3e.Client, "tiles", "tiles/big/0/0/0.png", body, "image/png", "")
	cfg, err := config.LoadTiles(func(k string) string {
		return map[string]string{"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "MEM_CACHE_BYTES": "1MiB",
			"DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "64MiB"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(s3e.Client, app.OriginConfig(cfg)), log, app.WithExtra(buildPayload))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a) })
	b := &buffered{srv: a.Server, next: a.Handler, log: log}
	var ev urlEvent
	if err := json.Unmarshal(withPath(t, fixtures.Read(t, "url-get-tile.json"), "/big/0/0/0.png"), &ev); err != nil {
		t.Fatal(err)
	}
	invoke := func() int64 {
		r, err := b.Handle(context.Background(), &ev)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, r)
		r.(io.Closer).Close()
		return n
	}
	invoke() // the miss fills the disk tier
	const n = 50
	var before, after runtime.MemStats
	for i := range n + 2 {
		if i == 2 { // the pool's buffers are made
			runtime.ReadMemStats(&before)
		}
		if got := invoke(); got < int64(len(body)) {
			t.Fatalf("payload of %d bytes for a %d-byte tile", got, len(body))
		}
	}
	runtime.ReadMemStats(&after)
	if hits := a.Engine.Stats().DiskHits; hits < n {
		t.Fatalf("%d disk hits, want %d", hits, n)
	}
	per := int64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%d bytes allocated per buffered disk hit of %d bytes", per, len(body))
	// An eighth of the tile: a collection may empty the pools (sync.Pool
	// keeps its buffers through one), and refilling them once or twice
	// over the run costs a tile and a payload each time.
	if limit := int64(len(body)) / 8; per > limit {
		t.Errorf("a buffered disk hit of %d bytes allocated %d bytes, want at most %d", len(body), per, limit)
	}
}
