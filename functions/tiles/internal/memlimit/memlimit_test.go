package memlimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// TestMemoryLimit: on Lambda the Go memory limit is 90% of the function's
// memory; off Lambda it is MEM_CACHE_BYTES × 1.05 plus the Go memory in use
// after init (IIIF_RENDER_BYTES is not in it: see
// TestRenderingRaisesTheLimitOffLambda) (the other 0.05 of the bound is for the collector's
// overshoot), init's garbage not counted, and GOGC is raised to
// GCPercent unless set, on Lambda too; GOMEMLIMIT, when set, wins everywhere.
// garbage is where the test leaves init's garbage.
var garbage []byte

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, tt := range []struct {
		name       string
		env        map[string]string
		gomemlimit string
		min, max   int64 // the limit set, inclusive; math.MaxInt64 for none
		plusBase   bool  // min and max are over the Go memory in use
	}{
		// 1 GiB, so that × 1.05 and × 1.1 lie far apart, beyond what the
		// rest of the process may allocate meanwhile (the slack).
		{name: "off Lambda", env: map[string]string{"MEM_CACHE_BYTES": "1GiB", "IIIF_RENDER_BYTES": "256MiB"},
			min: 1024*mib*21/20 - 8*mib, max: 1024*mib*21/20 + 8*mib, plusBase: true},
		{name: "off Lambda, GOMEMLIMIT set", env: map[string]string{"MEM_CACHE_BYTES": "32MiB"}, gomemlimit: "1GiB",
			min: math.MaxInt64, max: math.MaxInt64},
		{name: "on Lambda", env: map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"},
			min: 1024 * mib * 9 / 10, max: 1024 * mib * 9 / 10},
		{name: "on Lambda, GOMEMLIMIT set", env: map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"},
			gomemlimit: "1GiB", min: math.MaxInt64, max: math.MaxInt64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tt.gomemlimit)
			env := map[string]string{"TILES_BUCKET": "tiles"}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := config.LoadTiles(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			debug.SetMemoryLimit(math.MaxInt64)
			log := slog.New(slog.DiscardHandler)
			gcBefore := debug.SetGCPercent(100)
			t.Cleanup(func() { debug.SetGCPercent(gcBefore) })
			lim := &Limit{}
			OnLambda(lim, cfg, log) // before init
			min, max := tt.min, tt.max
			if tt.plusBase {
				debug.FreeOSMemory()
				base := GoMemoryInUse()
				min, max = min+base, max+base
				// Init's garbage: not what the idle process holds.
				garbage = make([]byte, 64*mib)
				clear(garbage)
				garbage = nil
			}
			OffLambda(lim, cfg, log)
			if got := debug.SetMemoryLimit(-1); got < min || got > max {
				t.Errorf("got limit %d, want within [%d, %d]", got, min, max)
			}
			// GOGC is raised where the limit was derived off Lambda, and
			// only there.
			wantGC := 100
			if tt.gomemlimit == "" {
				wantGC = GCPercent
			}
			if got := debug.SetGCPercent(100); got != wantGC {
				t.Errorf("got GOGC %d, want %d", got, wantGC)
			}
		})
	}
	t.Run("off Lambda, GOGC set", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		t.Setenv("GOGC", "150")
		cfg, err := config.LoadTiles(func(k string) string {
			return map[string]string{"TILES_BUCKET": "tiles", "MEM_CACHE_BYTES": "32MiB"}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		debug.SetMemoryLimit(math.MaxInt64)
		gcBefore := debug.SetGCPercent(150) // as the runtime read GOGC at start
		t.Cleanup(func() { debug.SetGCPercent(gcBefore) })
		OffLambda(&Limit{}, cfg, slog.New(slog.DiscardHandler))
		if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 {
			t.Error("no memory limit set")
		}
		if got := debug.SetGCPercent(150); got != 150 {
			t.Errorf("got GOGC %d, want the environment's 150", got)
		}
	})
}

// TestRenderingRaisesTheLimitOffLambda: off Lambda the pixels of IIIF
// answers being made (pixel.Config.OnInFlight) raise the Go memory limit
// while they are held, and only then: a bound that always counted all of
// IIIF_RENDER_BYTES left a flood of requests for missing tiles, which
// renders nothing, 128 MiB of room for garbage (peak RSS 96.8 MiB against
// a bound of 56.3, docs/BENCHMARKS.md section 6). On Lambda the bound is
// the function's memory, which renders share: they do not raise it.
func TestRenderingRaisesTheLimitOffLambda(t *testing.T) {
	const mib = 1 << 20
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	gcBefore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(gcBefore) })
	log := slog.New(slog.DiscardHandler)
	load := func(env map[string]string) config.Tiles {
		env["TILES_BUCKET"] = "tiles"
		cfg, err := config.LoadTiles(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	off := &Limit{}
	OffLambda(off, load(map[string]string{"MEM_CACHE_BYTES": "256MiB", "IIIF_RENDER_BYTES": "128MiB"}), log)
	idle := off.Current()
	if idle == 0 || debug.SetMemoryLimit(-1) != idle {
		t.Fatalf("off Lambda: no limit set (%d)", idle)
	}
	if idle > 256*mib*21/20+GoMemoryInUse()+8*mib {
		t.Errorf("idle limit %d MiB: the render budget is counted while nothing renders", idle/mib)
	}
	off.RenderingChanged(40 * mib)
	if got := debug.SetMemoryLimit(-1); got != idle+40*mib {
		t.Errorf("rendering 40 MiB: limit %d, want %d", got, idle+40*mib)
	}
	off.RenderingChanged(0)
	off.OffHeapChanged(100 * mib) // the tier's bytes off the heap lower it as before
	withTier := off.Current()
	off.RenderingChanged(40 * mib)
	if got := debug.SetMemoryLimit(-1); withTier >= idle || got != withTier+40*mib {
		t.Errorf("rendering 40 MiB with 100 MiB off the heap: limit %d, want %d (and %d below the idle %d)", got, withTier+40*mib, withTier, idle)
	}
	off.RenderingChanged(0)
	off.OffHeapChanged(0)
	if got := debug.SetMemoryLimit(-1); got != idle {
		t.Errorf("done rendering: limit %d, want the idle %d", got, idle)
	}

	on := &Limit{}
	OnLambda(on, load(map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}), log)
	on.RenderingChanged(40 * mib)
	if got := debug.SetMemoryLimit(-1); got != 1024*mib*9/10 {
		t.Errorf("on Lambda, rendering: limit %d, want 90%% of the function's memory (%d)", got, 1024*mib*9/10)
	}
}

// sink keeps the test's garbage from being optimised away.
var sink []byte

// TestFullMemoryTierLeavesCollectorRoom: off Lambda, once the memory tier
// is full and has evicted and refilled, the collector still has room under
// the memory limit: after a collection its heap goal lies at least
// MEM_CACHE_BYTES/16 above the live heap. The tier is the one the tile
// function builds (its config from TierConfig), filled to three times
// its bound with tiles of 10–60 KB, each beside a fetch's worth of garbage.
// When the tier held the whole of MEM_CACHE_BYTES, the goal was the live
// heap itself (the runtime keeps 3% of the limit back, and its own memory
// grows with the heap), so every allocation brought the next collection.
func TestFullMemoryTierLeavesCollectorRoom(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	env := map[string]string{"TILES_BUCKET": "tiles", "MEM_CACHE_BYTES": "32MiB", "DISK_CACHE_BYTES": "0", "SYNC_INTERVAL": "1h"}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s3e := s3localtest.Start(t, "tiles")
	log := slog.New(slog.DiscardHandler)
	debug.SetMemoryLimit(math.MaxInt64)
	lim := &Limit{}
	a, err := app.NewWithOrigin(context.Background(), TierConfig(cfg), origin.NewWithS3(s3e.Client, origin.Config{Bucket: "tiles"}), log,
		app.WithOffHeap(lim.OffHeapChanged))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a) })
	gcBefore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(gcBefore) })
	OffLambda(lim, cfg, log)
	rng := rand.New(rand.NewPCG(1, 2))
	for i, filled := 0, int64(0); filled < 3*cfg.MemBytes; i++ {
		n := 10<<10 + rng.IntN(50<<10)
		// A fetch's own garbage (the SDK's buffers, the response), of
		// sizes that share the bodies' size classes.
		for range 4 {
			sink = make([]byte, 1<<10+rng.IntN(63<<10))
		}
		a.Memory.Set(fmt.Sprintf("osm/%d.jpg", i), &tile.Tile{Body: make([]byte, n), ContentType: "image/jpeg", ETag: `"e"`})
		filled += int64(n)
	}
	sink = nil
	if got, want := a.Memory.Bytes(), a.Memory.Stats().MaxBytes-cfg.MemBytes/16; got < want {
		t.Fatalf("memory tier holds %d bytes, want it full (at least %d)", got, want)
	}
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	goal, live := int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
	runtime.KeepAlive(a) // the tier is live through the collection
	if got, want := goal-live, cfg.MemBytes/16; got < want {
		t.Errorf("got %d bytes between the heap goal (%d) and the live heap (%d) beside a full memory tier, want at least %d", got, goal, live, want)
	}
}

// TestMemoryLimitFollowsOffHeap: the limit is the bound less what the
// memory tier holds off the heap, never below an eighth of the bound.
func TestMemoryLimitFollowsOffHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	const mib = 1 << 20
	lim := &Limit{}
	lim.OffHeapChanged(10 * mib) // before the bound: no limit of the process's yet
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit %d set without a bound", got)
	}
	lim.SetBound(100 * mib)
	for _, tt := range []struct{ offHeap, want int64 }{{10 * mib, 90 * mib}, {30 * mib, 70 * mib}, {0, 100 * mib}, {99 * mib, 100 * mib / 8}} {
		lim.OffHeapChanged(tt.offHeap)
		if got := debug.SetMemoryLimit(-1); got != tt.want || lim.Current() != tt.want {
			t.Errorf("off heap %d: limit %d (%d), want %d", tt.offHeap, got, lim.Current(), tt.want)
		}
	}
}

func closeApp(tb testing.TB, a *app.App) {
	tb.Helper()
	if err := a.Close(); err != nil {
		tb.Errorf("Close: %v", err)
	}
}

// TestOffHeapTierReleasesTheOvershootRoom: off Lambda the bound keeps a
// twentieth of MEM_CACHE_BYTES back from the Go limit (MEM_CACHE_BYTES ×
// 1.1 + base against a limit of × 1.05) for the collector's overshoot: a
// heap of live entries the collector cannot free goes past a soft limit.
// Bytes the tier holds off the heap are counted exactly and cannot
// overshoot, so as the tier fills off the heap that twentieth goes to the
// collector, in proportion: a full tier's collector then has the room of
// the whole bound. Without it, section 2's full tier (51.9 MiB) ran at a
// heap goal of 6 MB over 2-3 MB live and collected 124 times per 100,000
// hits against 50 with a tier four times the set (10 MB goal).
func TestOffHeapTierReleasesTheOvershootRoom(t *testing.T) {
	const mib = 1 << 20
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	gcBefore := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(gcBefore) })
	t.Setenv("GOMEMLIMIT", "")
	env := map[string]string{"TILES_BUCKET": "tiles", "MEM_CACHE_BYTES": "256MiB"}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	lim := &Limit{}
	OffLambda(lim, cfg, slog.New(slog.DiscardHandler))
	idle := lim.Current()
	tier := TierConfig(cfg).MemBytes
	spare := cfg.MemBytes / 20
	for _, tt := range []struct {
		name          string
		offHeap, want int64
	}{
		{"full", tier, idle - tier + spare},
		{"half full", tier / 2, idle - tier/2 + spare/2},
		{"past full (leased blocks of evicted entries)", tier + 2*mib, idle - tier - 2*mib + spare},
		{"empty", 0, idle},
	} {
		lim.OffHeapChanged(tt.offHeap)
		got := lim.Current()
		if got < tt.want-1 || got > tt.want+1 || debug.SetMemoryLimit(-1) != got { // rounded to the byte
			t.Errorf("%s (%d MiB off the heap): limit %d, want %d (the bound's overshoot twentieth given back in proportion)",
				tt.name, tt.offHeap/mib, got, tt.want)
		}
	}

	// On Lambda the bound is 90% of the function's memory, whose other tenth
	// is not the collector's: nothing is given back.
	env = map[string]string{"TILES_BUCKET": "tiles", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}
	if cfg, err = config.LoadTiles(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	on := &Limit{}
	OnLambda(on, cfg, slog.New(slog.DiscardHandler))
	on.OffHeapChanged(256 * mib)
	if got, want := on.Current(), int64(1024*mib*9/10-256*mib); got != want {
		t.Errorf("on Lambda with 256 MiB off the heap: limit %d, want %d", got, want)
	}
}
