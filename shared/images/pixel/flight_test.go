package pixel

import (
	"context"
	"errors"
	"image"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestInFlightBytesBoundLiveHeap floods a pipeline with large renders, more
// at once than its byte budget holds, and checks the live heap while they
// run: the pixel buffers of renders in flight stay within
// Config.InFlightBytes (plus the decoded tiles and the runtime's own), where
// without the budget every render's canvas is made at once.
func TestInFlightBytesBoundLiveHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates and collects hundreds of MiB")
	}
	const (
		side    = 2048 // source canvas: 16 MiB
		answer  = 1024 // scaled answer: 4 MiB
		tile    = 256
		renders = 8
	)
	job := Job{Source: image.Rect(0, 0, side, side), TileSize: image.Pt(tile, tile), Width: answer, Height: answer, Format: JPEG}
	p := testPipeline(t, nil)
	budget := p.weight(job) // one render at a time
	p = testPipeline(t, func(c *Config) { c.InFlightBytes = budget })

	blank := image.NewRGBA(image.Rect(0, 0, tile, tile))
	var (
		mu   sync.Mutex
		peak uint64
		base uint64
		seen atomic.Int64
	)
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base = live()
	job.Tile = func(ctx context.Context, col, row int) (image.Image, error) {
		// Sample the live heap once per render, with its canvas made.
		if col == 3 && row == 3 {
			seen.Add(1)
			time.Sleep(20 * time.Millisecond) // let the others make theirs
			h := live()
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
		}
		return blank, nil
	}
	var wg sync.WaitGroup
	for range renders {
		wg.Go(func() {
			if _, err := p.Run(context.Background(), job); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if seen.Load() != renders {
		t.Fatalf("sampled %d renders, want %d", seen.Load(), renders)
	}
	slack := uint64(8 << 20) // decoded tiles, goroutines, test bookkeeping
	if grew := peak - min(peak, base); grew > uint64(budget)+slack {
		t.Errorf("live heap grew by %d MiB with %d renders in flight; the budget is %d MiB",
			grew>>20, renders, budget>>20)
	}
	if st := p.Stats(); st.InFlightPeak > budget || st.InFlight != 0 || st.Waited == 0 {
		t.Errorf("stats %+v: want a peak within %d, nothing left in flight, and renders that waited", st, budget)
	}
}

// TestInFlightBytesLargeJobRunsAlone: a render that needs more than the
// whole budget is not refused: it waits for the budget to empty and runs
// alone.
func TestInFlightBytesLargeJobRunsAlone(t *testing.T) {
	t.Parallel()
	tiles := &tilesOf{src: pattern(512, 512), tw: 64, th: 64}
	job := Job{Source: image.Rect(0, 0, 512, 512), TileSize: image.Pt(64, 64), Tile: tiles.tile, Width: 256, Height: 256}
	p := testPipeline(t, func(c *Config) { c.InFlightBytes = 1 << 10 })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := p.Run(context.Background(), job); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := p.Stats(); st.InFlightPeak > 1<<10 || st.InFlight != 0 {
		t.Errorf("stats %+v: want at most the budget in flight, and nothing left", st)
	}
}

// TestInFlightBytesDeadline: a render waiting for room gives up at its
// deadline, before any decode.
func TestInFlightBytesDeadline(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	tiles := &tilesOf{src: pattern(512, 512), tw: 64, th: 64, gate: gate}
	job := Job{Source: image.Rect(0, 0, 512, 512), TileSize: image.Pt(64, 64), Tile: tiles.tile, Width: 256, Height: 256}
	// Decodes never wait on each other here: only the budget holds.
	p := testPipeline(t, func(c *Config) { c.InFlightBytes, c.Decoders = 1<<10, 1024 })
	done := make(chan error, 1)
	go func() { _, err := p.Run(context.Background(), job); done <- err }()
	for tiles.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	other := &tilesOf{src: pattern(512, 512), tw: 64, th: 64}
	job.Tile = other.tile
	if _, err := p.Run(ctx, job); !errors.Is(err, context.DeadlineExceeded) || other.calls.Load() != 0 {
		t.Errorf("waiting render: got %v after %d decodes, want the deadline before any", err, other.calls.Load())
	}
	close(gate)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestInFlightBytesTold: Config.OnInFlight hears every change of the bytes
// in flight, in order, ending at zero; each value it hears is one Stats
// could have read (never above the budget, never negative).
func TestInFlightBytesTold(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		heard []int64
	)
	tiles := &tilesOf{src: pattern(512, 512), tw: 64, th: 64}
	job := Job{Source: image.Rect(0, 0, 512, 512), TileSize: image.Pt(64, 64), Tile: tiles.tile, Width: 256, Height: 256}
	p := testPipeline(t, func(c *Config) {
		c.InFlightBytes = 4 << 20
		c.OnInFlight = func(n int64) { mu.Lock(); heard = append(heard, n); mu.Unlock() }
	})
	w := p.weight(job)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := p.Run(context.Background(), job); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(heard) != 12 || heard[len(heard)-1] != 0 {
		t.Fatalf("heard %v: want 12 changes (6 runs, each taking and giving back), ending at 0", heard)
	}
	prev := int64(0)
	for _, n := range heard {
		if n < 0 || n > 4<<20 || (n-prev != w && prev-n != w) {
			t.Fatalf("heard %v: each change is one run's weight (%d), within the budget", heard, w)
		}
		prev = n
	}
}
