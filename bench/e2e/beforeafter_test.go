package e2e

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

func TestSidesInRound(t *testing.T) {
	t.Parallel()
	for round, want := range [][2]string{{Before, After}, {After, Before}, {Before, After}, {After, Before}} {
		if got := SidesInRound(round); got != want {
			t.Errorf("round %d: got %v, want %v", round, got, want)
		}
	}
}

// TestPairRatios: a rate's ratio is after ÷ before, a cost's before ÷
// after, each taken within a round; the pair's ratio is their median.
func TestPairRatios(t *testing.T) {
	t.Parallel()
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	var rate Pair
	for _, v := range [][2]float64{{100, 110}, {200, 180}, {100, 100}} {
		rate.Values.Add(After, v[1])
		rate.Values.Add(Before, v[0])
	}
	if !slices.Equal(rate.Values.Before, []float64{100, 200, 100}) || !slices.Equal(rate.Values.After, []float64{110, 180, 100}) {
		t.Fatalf("Add: got %+v, want each side's values in round order", rate.Values)
	}
	got := rate.Ratios()
	if len(got) != 3 || !near(got[0], 1.1) || !near(got[1], 0.9) || !near(got[2], 1) || !near(rate.Ratio(), 1) {
		t.Errorf("rate: ratios %v, ratio %v; want 1.1, 0.9, 1 and 1", got, rate.Ratio())
	}
	cost := Pair{Unit: "ns/op", Cost: true, Values: Sides{Before: []float64{500, 400}, After: []float64{250, 500}}}
	if got := cost.Ratios(); !near(got[0], 2) || !near(got[1], 0.8) || !near(cost.Ratio(), 1.4) {
		t.Errorf("cost: ratios %v, ratio %v; want 2, 0.8 and 1.4", got, cost.Ratio())
	}
	// A round with one side only, or where a side measured nothing, has
	// no ratio.
	half := Pair{Values: Sides{Before: []float64{1, 2, 4}, After: []float64{1, 0}}}
	if got := half.Ratios(); len(got) != 1 || got[0] != 1 {
		t.Errorf("got ratios %v, want [1]", got)
	}
}

// TestTilesConfigCommand: section 2's configurations set what the section
// says, and the memory bound only where one is given.
func TestTilesConfigCommand(t *testing.T) {
	t.Parallel()
	env := func(c tilesConfig) []string { return c.command("/bin/tiles", "/tmp/x", "http://127.0.0.1:9", 8081).Env }
	has := func(env []string, kv string) bool { return slices.Contains(env, kv) }
	hasKey := func(env []string, k string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	}
	def := env(defaultBoundConfig)
	if hasKey(def, "MEM_CACHE_BYTES") || !has(def, "DISK_CACHE_BYTES=0") || !has(def, "PORT=8081") || !has(def, "LISTEN_ADDR=127.0.0.1") {
		t.Errorf("default bound: %v", def)
	}
	if m := env(memBoundConfig(64 << 20)); !has(m, "MEM_CACHE_BYTES=67108864") || !has(m, "DISK_CACHE_BYTES=0") {
		t.Errorf("64 MiB bound: %v", m)
	}
	d := env(diskHitsConfig)
	for _, kv := range []string{"MEM_CACHE_BYTES=1MiB", "DISK_CACHE_BYTES=1GiB", "STAGE_PREFIXES=osm/", "DISK_CACHE_DIR=/tmp/x/disk-8081", "GODEBUG=gctrace=1"} {
		if !has(d, kv) {
			t.Errorf("disk hits: no %s in %v", kv, d)
		}
	}
	// The product's own limit and GOGC, as an operator runs it.
	for _, k := range []string{"GOMEMLIMIT", "GOGC"} {
		for _, e := range [][]string{def, d} {
			if hasKey(e, k) {
				t.Errorf("%s set: %v", k, e)
			}
		}
	}
}

// TestStoragePairSmoke runs the comparison of section 2's servers at tiny
// sizes, the same tree's tile server on both sides (E2E_SMOKE=compare).
func TestStoragePairSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") != "compare" {
		t.Skip("set E2E_SMOKE=compare")
	}
	for _, tool := range []string{"ab", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (bench/e2e/install-tools.sh)", tool)
		}
	}
	bin := t.TempDir()
	if err := BuildAll(t.Context(), bin, Build{"../..", "tiles", "./functions/tiles"}, Build{"..", "s3serve", "./cmd/s3serve"}); err != nil {
		t.Fatal(err)
	}
	tiles := filepath.Join(bin, "tiles")
	sp := DefaultStorageParams("../..", "..", true)
	sp.ABN, sp.WrkDur = 500, time.Second
	r, err := RunStoragePair(context.Background(), tileset.NewPool(4, 128, 5_000, 10_000, 1),
		StoragePairParams{Storage: sp, Tiles: map[string]string{Before: tiles, After: tiles}, S3Serve: filepath.Join(bin, "s3serve"), Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pairs) != 5 {
		t.Fatalf("got %d pairs, want 5 (ab and wrk at two bounds, wrk on disk hits): %+v", len(r.Pairs), r.Pairs)
	}
	for _, p := range r.Pairs {
		if len(p.Ratios()) != 2 || p.Ratio() <= 0 {
			t.Errorf("%s: ratios %v", p.What, p.Ratios())
		}
		if p.CPU == nil || len(p.CPU.Before) != 2 || len(p.CPU.After) != 2 || slices.Min(p.CPU.Before) <= 0 || slices.Min(p.CPU.After) <= 0 {
			t.Errorf("%s: server CPU per request %+v", p.What, p.CPU)
		}
		t.Logf("%s: before %v, after %v; %s", p.What, p.Values.Before, p.Values.After, p.Note)
	}
}

// TestStoragePairBudget: the comparison runs section 2's full tier, the
// set's bytes over FullShare, as RunStorage does; with the budget left to
// RunStorage to set, the comparison once passed MEM_CACHE_BYTES=0 and the
// tile server refused to start.
func TestStoragePairBudget(t *testing.T) {
	sp := DefaultStorageParams("/repo", "/repo/bench", true)
	const setBytes = 7 << 20
	configs := storagePairConfigs(sp.fullBudget(setBytes))
	want := "MEM_CACHE_BYTES=" + strconv.Itoa(8<<20)
	if !strings.Contains(configs[1].env, want) {
		t.Errorf("the full tier's configuration %q: want %s", configs[1].env, want)
	}
}
