package main

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/tilesieve/tilesieve/shared/config"
)

// TestMemoryLimit: on Lambda the Go memory limit is 90% of the function's
// memory; off Lambda it is MEM_CACHE_BYTES × 1.05 plus the Go memory in use
// after init (the other 0.05 of the bound is for the collector's
// overshoot), init's garbage not counted; GOMEMLIMIT, when set, wins
// everywhere.
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
		{name: "off Lambda", env: map[string]string{"MEM_CACHE_BYTES": "1GiB"},
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
			setMemoryLimit(cfg, log) // before init
			min, max := tt.min, tt.max
			if tt.plusBase {
				debug.FreeOSMemory()
				base := goMemoryInUse()
				min, max = min+base, max+base
				// Init's garbage: not what the idle process holds.
				garbage = make([]byte, 64*mib)
				clear(garbage)
				garbage = nil
			}
			setMemoryLimitOffLambda(cfg, log)
			if got := debug.SetMemoryLimit(-1); got < min || got > max {
				t.Errorf("got limit %d, want within [%d, %d]", got, min, max)
			}
		})
	}
}
