package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/viewer"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
)

// TestStoredAsIs: a viewer's tile is a stored tile as it is only inside
// the level, at the stored tile size.
func TestStoredAsIs(t *testing.T) {
	t.Parallel()
	levels := []*tiff.Level{
		{Width: 25167, Height: 12483, TileWidth: 512, TileHeight: 512},
		{Width: 12583, Height: 6241, TileWidth: 512, TileHeight: 512},
		{Width: 6291, Height: 3120, TileWidth: 512, TileHeight: 512},
	}
	in := viewer.Info{Version: 3, Width: 25167, Height: 12483, TileWidth: 512, TileHeight: 512, ScaleFactors: []int{1, 2, 4}}
	for _, c := range []struct {
		f, x, y int
		want    bool
	}{
		{1, 0, 0, true}, {1, 48, 23, true}, {1, 49, 0, false}, {1, 0, 24, false},
		{2, 23, 11, true}, {2, 24, 0, false}, {4, 11, 5, true}, {4, 12, 0, false}, {4, 0, 6, false},
		{8, 0, 0, false}, // no such level in the file
	} {
		if got := storedAsIs(levels, in.Tile(c.f, c.x, c.y)); got != c.want {
			t.Errorf("tile %d/%d,%d: got %v, want %v", c.f, c.x, c.y, got, c.want)
		}
	}
}

func TestPerfTop(t *testing.T) {
	t.Parallel()
	out := "# Samples: 785\n#\n# Overhead  Shared Object  Symbol\n    20.76%  tiles  [.] image/png.filter  -  -\n     4.20%  [kernel.kallsyms]  [k] finish_task_switch.isra.0  -  -\n\n"
	got := perfTop(out, 5)
	want := []string{"20.76% tiles image/png.filter", "4.20% [kernel.kallsyms] finish_task_switch.isra.0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := perfTop("# Overhead  Shared Object\n    61.02%  [kernel.kallsyms]\n    38.98%  tiles\n", 5); strings.Join(got, "|") != "61.02% [kernel.kallsyms]|38.98% tiles" {
		t.Errorf("by binary: got %q", got)
	}
}

// TestImagesTargets: the targets take same-round ratios, and the faster of
// IIPImage's two throughput rows.
func TestImagesTargets(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	r := ImagesResult{Params: ImagesParams{Latencies: []time.Duration{0, 20 * time.Millisecond}},
		Sessions: []SessionInfo{{Name: "mirador"}},
		Runs: []ImageRun{
			{Server: imgTS, Session: "mirador", LatencyMs: 0, Cold: ms(200, 300, 100), Warm: ms(10, 10, 10)},
			{Server: imgIIP, Session: "mirador", Cold: ms(100, 300, 100), Warm: ms(90, 90, 90)},
			{Server: imgTS, Session: "mirador", LatencyMs: 20, Cold: ms(700, 800, 900), Warm: ms(10, 50, 30)},
		},
		Stored: []StoredProbe{{Session: "mirador", Tiles: 92, S3Requests: 92}},
		Throughput: []ServerRow{
			{Server: wrkTS, RPS: 20000, RoundsRPS: []float64{20000, 30000}},
			{Server: wrkIIP, RPS: 1000, RoundsRPS: []float64{1000, 1000}},
			{Server: wrkIIPLegacy, RPS: 2000, RoundsRPS: []float64{2000, 2000}},
			{Server: wrkStatic, RPS: 50000, RoundsRPS: []float64{50000, 50000}},
		},
	}
	r.targets()
	want := map[string]float64{
		"mirador cold at 0 ms: tilesieve's total ≤ 1.5x IIPImage's":                                        1,
		"warm throughput (wrk, the Mirador requests): tilesieve ≥ 10x IIPImage":                            12.5,
		"warm throughput (wrk, the Mirador requests): tilesieve ≥ 0.5x nginx serving its answers as files": 0.5,
		"mirador: warm ≥ 20x faster than cold at 20 ms (total time)":                                       30,
		"mirador: S3 requests per stored tile, cold, the image open (92 tiles)":                            1,
	}
	if len(r.Targets) != len(want) {
		t.Fatalf("got %d targets, want %d: %+v", len(r.Targets), len(want), r.Targets)
	}
	for _, tg := range r.Targets {
		if w, ok := want[tg.What]; !ok || tg.Got != w {
			t.Errorf("%s: got %v, want %v", tg.What, tg.Got, w)
		}
	}
}

// TestImagesSmoke runs the section at its quick sizes when
// E2E_SMOKE=images (it needs vips, iipsrv, nginx and wrk).
func TestImagesSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") != "images" {
		t.Skip("set E2E_SMOKE=images")
	}
	wd, _ := os.Getwd()
	p := DefaultImagesParams(filepath.Join(wd, "../.."), filepath.Join(wd, ".."), filepath.Join(wd, "../results/cache"), true)
	r, err := RunImages(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range r.Targets {
		t.Logf("%+v", tg)
	}
}
