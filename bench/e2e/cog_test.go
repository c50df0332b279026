package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/aerial"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

func TestParseCost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      string
		n       int
		b       int64
		wantErr bool
	}{
		{"", 0, 0, false},
		{"requests=1; bytes=31337", 1, 31337, false},
		{"requests=3;bytes=9", 3, 9, false},
		{"requests=x; bytes=1", 0, 0, true},
		{"requests", 0, 0, true},
	} {
		n, b, err := parseCost(c.in)
		if (err != nil) != c.wantErr || n != c.n || b != c.b {
			t.Errorf("parseCost(%q) = %d, %d, %v; want %d, %d, error %v", c.in, n, b, err, c.n, c.b, c.wantErr)
		}
	}
}

// TestLonLatTile: the corner of the section's web mercator imagery is the
// corner of its first tile.
func TestLonLatTile(t *testing.T) {
	t.Parallel()
	span := 2 * halfWorld / math.Exp2(cogZoom)
	mx, my := -halfWorld+(cogX0+0.5)*span, halfWorld-(cogY0+0.5)*span
	lon := mx / halfWorld * 180
	lat := math.Atan(math.Sinh(my/halfWorld*math.Pi)) * 180 / math.Pi
	if x, y := lonLatTile(cogZoom, lon, lat); x != cogX0 || y != cogY0 {
		t.Errorf("lonLatTile(%d, %v, %v) = %d, %d; want %d, %d", cogZoom, lon, lat, x, y, cogX0, cogY0)
	}
}

func TestUTMKeys(t *testing.T) {
	t.Parallel()
	// About the UTM imagery of the section: 61 km square near 49° N.
	bounds := []float64{13.6, 48.73, 14.45, 49.29}
	keys, prime, err := utmKeys(14, bounds, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 500 {
		t.Fatalf("%d keys", len(keys))
	}
	seen := map[string]bool{prime: true}
	dx, dy := (bounds[2]-bounds[0])/6, (bounds[3]-bounds[1])/6
	x0, y0 := lonLatTile(14, bounds[0]+dx, bounds[3]-dy)
	x1, y1 := lonLatTile(14, bounds[2]-dx, bounds[1]+dy)
	for _, k := range keys {
		if seen[k] {
			t.Fatalf("%s twice (or the prime)", k)
		}
		seen[k] = true
		var z, x, y int
		if _, err := fmt.Sscanf(k, "%d/%d/%d.jpg", &z, &x, &y); err != nil || z != 14 || x <= x0 || x >= x1 || y <= y0 || y >= y1 {
			t.Errorf("%s: not a tile strictly inside tiles %d,%d–%d,%d (%v)", k, x0, y0, x1, y1, err)
		}
	}
	if _, _, err := utmKeys(14, bounds, 5000); err == nil {
		t.Error("5000 tiles from an area of fewer: no error")
	}
	if _, _, err := utmKeys(14, bounds[:2], 1); err == nil {
		t.Error("bounds of two numbers: no error")
	}
}

// TestStoredTiles: a GoogleMapsCompatible COG GDAL writes from the
// section's scene yields its stored tiles as the XYZ tiles of its place.
func TestStoredTiles(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("gdal_translate"); err != nil {
		t.Skip("gdal_translate not found: apt-get install gdal-bin")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a.ppm")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := aerial.New(1).WritePPM(f, 512, 256); err != nil {
		t.Fatal(err)
	}
	f.Close()
	span := 2 * halfWorld / math.Exp2(cogZoom)
	minX, maxY := -halfWorld+cogX0*span, halfWorld-cogY0*span
	out, err := exec.Command("gdal_translate", "-q", "-of", "COG", "-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "COMPRESS=JPEG",
		"-a_srs", "EPSG:3857", "-a_ullr", ftoa(minX), ftoa(maxY), ftoa(minX+2*span), ftoa(maxY-span), src, filepath.Join(dir, "c.tif")).CombinedOutput()
	if err != nil {
		t.Fatalf("gdal_translate: %v\n%s", err, out)
	}
	tiles, z, err := storedTiles(context.Background(), filepath.Join(dir, "c.tif"))
	if err != nil {
		t.Fatal(err)
	}
	if z != cogZoom || len(tiles) != 2 {
		t.Fatalf("zoom %d, %d tiles; want %d and 2", z, len(tiles), cogZoom)
	}
	for _, k := range []string{fmt.Sprintf("14/%d/%d.jpg", cogX0, cogY0), fmt.Sprintf("14/%d/%d.jpg", cogX0+1, cogY0)} {
		if len(tiles[k]) < 1000 {
			t.Errorf("%s: %d bytes", k, len(tiles[k]))
		}
	}
}

// TestRenderCOG renders a made-up result: its subsection, its summary rows,
// and a merge with an earlier document that lacks it.
func TestRenderCOG(t *testing.T) {
	t.Parallel()
	res := COGResult{Params: DefaultCOGParams("", "", true), Zoom: 14, UTMZoom: 14, Stored: 64,
		Bytes:     map[string]int64{"cog.tif": 1 << 20, "utm.tif": 1 << 20, "arc.pmtiles": 900 << 10},
		TileBytes: map[string]float64{cogPass: 14000, cogArc: 14000, cogUTM: 13000},
		Commands:  []string{"gdal_translate a", "gdal_translate b"}, Samples: map[string][]ServerRow{}}
	for _, s := range cogSets {
		row := ServerRow{Server: s.label, Tool: "wrk", RPS: 30000, Mean: time.Millisecond}
		res.Samples[s.name] = []ServerRow{row, row}
		res.Rows = append(res.Rows, row)
	}
	for _, lat := range []int{0, 20} {
		for _, s := range cogSets {
			res.Runs = append(res.Runs, COGRun{Set: s.name, LatencyMs: lat, Tiles: 24, OpenRequests: []int{6}, S3Requests: []int{24}, CostRequests: []int{24},
				CostBytes: []int64{24 * 14000}, WarmRequests: []int{0}, ColdTotals: []time.Duration{time.Second}, WarmTotals: []time.Duration{time.Millisecond},
				Cold: stats.Summary{P50: time.Millisecond, P99: 2 * time.Millisecond}, Warm: stats.Summary{P50: time.Microsecond}})
		}
	}
	res.targets()
	if len(res.Targets) != 4 {
		t.Fatalf("%d targets, want 4", len(res.Targets))
	}
	for _, tg := range res.Targets {
		if !tg.Met {
			t.Errorf("target %q: not met by equal rates and one request a tile", tg.What)
		}
	}
	doc, err := Render(All{COG: &res}, t.TempDir(), "bench")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### 10. COG imagery", "| 10 COG imagery | warm COG stored tiles", "![cog](bench/cog.png)", "| UTM resampled | 0 ms | 6 | 1.000 |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("rendered section lacks %q", want)
		}
	}
	old := "## End-to-end benchmarks\n\n### Targets\n\n| section | target | want | got | verdict | note |\n|---|---|---|---|---|---|\n| 8 archives | x | ≥ 1 | 1 | **met** | |\n\n### 8. PMTiles archives\n\ntext\n"
	merged, _ := Merge(old, doc)
	if !strings.Contains(merged, "### 8. PMTiles archives") || !strings.Contains(merged, "### 10. COG imagery") ||
		strings.Index(merged, "| 8 archives") > strings.Index(merged, "| 10 COG imagery") {
		t.Errorf("merged with an earlier section 8:\n%s", merged)
	}
}

func TestCOGSmoke(t *testing.T) {
	if os.Getenv("E2E_SMOKE") != "cog" {
		t.Skip("set E2E_SMOKE=cog")
	}
	r, err := RunCOG(context.Background(), DefaultCOGParams("../..", "..", true))
	for _, run := range r.Runs {
		t.Logf("%+v", run)
	}
	t.Logf("%+v", r.Targets)
	if err != nil {
		t.Fatal(err)
	}
}
