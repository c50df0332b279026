package config_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/obs/emf"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
)

// TestPackageDefaultsAreConfigs: a package's own default (what its zero
// Config field means) must be the default of the variable that sets that
// field, or a function built without the variable behaves unlike
// docs/configuration.md says.
func TestPackageDefaultsAreConfigs(t *testing.T) {
	t.Parallel()
	vars := map[string]config.Var{}
	for _, v := range append(config.TilesVars(), config.WorkerVars()...) {
		vars[v.Name] = v
	}
	duration := func(s string) (any, error) { return time.ParseDuration(s) }
	whole := func(s string) (any, error) { return strconv.Atoi(s) }
	size := func(s string) (any, error) { n, err := config.ParseBytes(s); return int(n), err }
	text := func(s string) (any, error) { return s, nil }
	tests := []struct {
		pkg      string
		variable string
		parse    func(string) (any, error)
		value    any
	}{
		{"tiers.DefaultRevalidateAfter", "REVALIDATE_AFTER", duration, tiers.DefaultRevalidateAfter},
		{"tiers.DefaultOriginTimeout", "ORIGIN_TIMEOUT", duration, tiers.DefaultOriginTimeout},
		{"tiers.DefaultMaxOriginFetches", "MAX_ORIGIN_FETCHES", whole, tiers.DefaultMaxOriginFetches},
		{"tiers.DefaultOriginFailureWindow", "ORIGIN_FAILURE_WINDOW", duration, tiers.DefaultOriginFailureWindow},
		{"origin.DefaultTimeout", "ORIGIN_TIMEOUT", duration, origin.DefaultTimeout},
		{"origin.DefaultMaxObjectBytes", "MAX_TILE_BYTES", size, origin.DefaultMaxObjectBytes},
		{"disk.DefaultDir", "DISK_CACHE_DIR", text, disk.DefaultDir},
		{"stage.DefaultBudget", "STAGE_BUDGET", duration, stage.DefaultBudget},
		{"follower.DefaultInterval", "SYNC_INTERVAL", duration, follower.DefaultInterval},
		{"follower.DefaultTimeout", "SYNC_TIMEOUT", duration, follower.DefaultTimeout},
		{"purge.DefaultThreshold", "COALESCE_THRESHOLD", whole, purge.DefaultThreshold},
		{"purge.DefaultCap", "COALESCE_CAP", whole, purge.DefaultCap},
		{"obs.DefaultNamespace", "METRICS_NAMESPACE", text, obs.DefaultNamespace},
		{"obs.DefaultMaxTileSets", "METRICS_TILESETS", whole, obs.DefaultMaxTileSets},
		{"emf.DefaultInterval", "METRICS_INTERVAL", duration, emf.DefaultInterval},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			t.Parallel()
			v, ok := vars[tt.variable]
			if !ok {
				t.Fatalf("config lists no %s", tt.variable)
			}
			got, err := tt.parse(v.Default)
			if err != nil {
				t.Fatalf("%s's default %q: %v", tt.variable, v.Default, err)
			}
			if got != tt.value {
				t.Errorf("%s default: got %v (config), want %v (%s)", tt.variable, got, tt.value, tt.pkg)
			}
		})
	}
}

// TestDefaultsLoad: every Default the loader parses is well formed (a bad one
// panics), and an empty environment but for the bucket loads the documented
// values.
func TestDefaultsLoad(t *testing.T) {
	t.Parallel()
	env := func(name string) string {
		if name == "TILES_BUCKET" {
			return "tiles"
		}
		return ""
	}
	tiles, err := config.LoadTiles(env)
	if err != nil {
		t.Fatalf("LoadTiles: %v", err)
	}
	worker, err := config.LoadWorker(env)
	if err != nil {
		t.Fatalf("LoadWorker: %v", err)
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"MaxTileBytes", tiles.MaxTileBytes, int64(16 << 20)},
		{"StageBudget", tiles.StageBudget, 5 * time.Second},
		{"MissingTile", tiles.MissingTile, config.DefaultMissingTile},
		{"CORSAllowOrigins", tiles.CORSAllowOrigins, "*"},
		{"Metrics.Interval", tiles.Metrics.Interval, time.Minute},
		{"worker Metrics.Interval", worker.Metrics.Interval, time.Minute},
		{"CoalesceCap", worker.CoalesceCap, 15},
		{"SyncInterval", worker.SyncInterval, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}
