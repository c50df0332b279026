package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/loadtool"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles" // also registers the "sqlite" driver writeMBTiles uses
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// ArchiveParams sizes the archive section.
type ArchiveParams struct {
	RepoRoot, BenchDir string
	MaxZoom            int // tiles {0..MaxZoom}/x/y.jpg, as objects and as one archive
	ABN, ABC           int
	ABPath             string // z/x/y.jpg of the ab tile, under each tileset
	WrkDur             time.Duration
	WrkConns           int
	WrkThread          int
	MemBudget          int64 // MEM_CACHE_BYTES of a process that serves the set once (MBTiles' first tile and staging)
	Rounds             int
	ColdReps           int           // repetitions of the cold/warm viewer workload
	Latency            time.Duration // injected S3 latency of the viewer workload
}

// SharedMem is MEM_CACHE_BYTES of the process that serves the set of
// setBytes three times, as objects, as an archive and as an MBTiles
// database: the three copies fill 7/8 of it, a full tier (off Lambda the
// tier holds MEM_CACHE_BYTES less a twelfth), so that its rows are memory
// hits (with one copy's budget each wrk pass over one copy refilled the
// tier from S3 after another's had evicted it), with the same tier and
// collector under every row, so that a ratio between them is the paths'
// alone.
func SharedMem(setBytes int64) int64 { return int64(math.Ceil(3 * float64(setBytes) * 8 / 7)) }

// DefaultArchiveParams are the section's sizes (quick: tiny ones).
func DefaultArchiveParams(repoRoot, benchDir string, quick bool) ArchiveParams {
	p := ArchiveParams{RepoRoot: repoRoot, BenchDir: benchDir, MaxZoom: 5, ABN: 20000, ABC: 20, ABPath: "5/10/12.jpg",
		WrkDur: 5 * time.Second, WrkConns: 20, WrkThread: 2, MemBudget: 64 << 20, Rounds: 5, ColdReps: 3, Latency: 20 * time.Millisecond}
	if quick {
		p.MaxZoom, p.ABN, p.ABPath, p.WrkDur, p.Rounds, p.ColdReps = 3, 2000, "3/2/2.jpg", 2*time.Second, 1, 1
	}
	return p
}

// ArchiveViewer is the viewer workload over an archive, cold and warm.
type ArchiveViewer struct {
	Workload      string          `json:"workload"`
	LatencyMs     int             `json:"latency_ms"`
	Tiles         int             `json:"tiles"`       // tile requests per run
	S3Requests    []int           `json:"s3_requests"` // during each cold run, after the directories were read
	PerTile       float64         `json:"per_tile"`    // median S3 requests per cold tile
	Cold          time.Duration   `json:"cold"`        // median totals
	Warm          time.Duration   `json:"warm"`
	ColdTotals    []time.Duration `json:"cold_totals"`
	WarmTotals    []time.Duration `json:"warm_totals"`
	PrimeRequests int             `json:"prime_requests"` // S3 requests of the priming tile (header, root, tile) in the first rep
}

// ArchiveResult is the archive section.
type ArchiveResult struct {
	Tiles    int           `json:"tiles"`
	Bytes    int64         `json:"bytes"`
	Params   ArchiveParams `json:"params"`
	Rows     []ServerRow   `json:"rows"`
	Viewer   ArchiveViewer `json:"viewer"`
	Targets  []Target      `json:"targets"`
	Commands []string      `json:"commands"`
	// MBFirstUse is the first tile of mb.mbtiles on a fresh process: probe,
	// download, open and read. MBFirstStaged is the first tile on a process
	// that staged it at start (STAGE_PREFIXES), and MBStageStart that
	// process's start (to health) with the staging.
	MBFirstUse    time.Duration `json:"mb_first_use"`
	MBFirstStaged time.Duration `json:"mb_first_staged"`
	MBStageStart  time.Duration `json:"mb_stage_start"`
	MBBytes       int64         `json:"mb_bytes"`
}

const (
	objSrv  = "tilesieve objects, memory hits"
	arcSrv  = "tilesieve archive, memory hits"
	mbSrv   = "tilesieve MBTiles, memory hits"
	pmSrv   = "go-pmtiles serve (same archive)"
	iiifArc = "mirador"
)

// RunArchive serves the same tiles as objects and as one PMTiles archive from
// one tile function process (memory hits), and the archive from `pmtiles
// serve`; then runs the Mirador workload against an archive cold and warm at
// p.Latency, counting the S3 requests of the cold tiles.
func RunArchive(ctx context.Context, pool tileset.Pool, p ArchiveParams) (ArchiveResult, error) {
	set := tileset.Build(tileset.XYZ("osm", "jpg", 0, p.MaxZoom), pool)
	res := ArchiveResult{Tiles: len(set), Bytes: set.Bytes(), Params: p}
	tmp, err := TempDir("archive")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	www, bin, logs, pm, vw := filepath.Join(tmp, "www"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "logs"), filepath.Join(tmp, "pm"), filepath.Join(tmp, "viewer")
	if err := mkdirs(www, bin, logs, pm, vw); err != nil {
		return res, err
	}
	if err := tileset.WriteDir(www, set); err != nil {
		return res, err
	}
	// The archive "arc" holds the tiles of "osm", byte for byte.
	if err := writeArchive(filepath.Join(www, "arc.pmtiles"), "osm", set); err != nil {
		return res, err
	}
	if err := writeArchive(filepath.Join(pm, "arc.pmtiles"), "osm", set); err != nil {
		return res, err
	}
	// The database "mb" holds them too, rows in TMS order.
	if res.MBBytes, err = writeMBTiles(ctx, filepath.Join(www, "mb.mbtiles"), "osm", set); err != nil {
		return res, err
	}
	s3p, err := buildAndServe(ctx, p.RepoRoot, p.BenchDir, bin, www, logs, nil,
		Build{p.BenchDir, "pmtiles", "github.com/protomaps/go-pmtiles"})
	if err != nil {
		return res, err
	}
	defer s3p.Stop()
	tilesCmd := func(port int, s3url, mem, disk string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, "tiles"))
		c.Env = tilesEnv(tmp, s3url, port,
			"MEM_CACHE_BYTES="+mem, "DISK_CACHE_DIR="+filepath.Join(tmp, "disk-"+strconv.Itoa(port)), "DISK_CACHE_BYTES="+disk,
			"SYNC_INTERVAL=1h", // the journal check is section 5's cost, not this one's
		)
		return c
	}

	var objPaths, arcPaths, mbPaths []string
	for _, k := range set.Keys() {
		objPaths = append(objPaths, "/"+k)
		arcPaths = append(arcPaths, "/arc/"+strings.TrimPrefix(k, "osm/"))
		mbPaths = append(mbPaths, "/mb/"+strings.TrimPrefix(k, "osm/"))
	}
	tsPort, err := FreePort()
	if err != nil {
		return res, err
	}
	tsURL := "http://127.0.0.1:" + strconv.Itoa(tsPort)
	// MBTiles are staged beside the disk tier: the process has one (1 GiB);
	// memory hits do not touch it.
	ts, err := StartProc(ctx, "tiles-"+strconv.Itoa(tsPort), tilesCmd(tsPort, s3p.URL, strconv.FormatInt(SharedMem(set.Bytes()), 10), strconv.Itoa(1<<30)), tsURL, "/_tilesieve/health", logs)
	if err != nil {
		return res, err
	}
	defer ts.Stop()
	pmPort, err := FreePort()
	if err != nil {
		return res, err
	}
	pmURL := "http://127.0.0.1:" + strconv.Itoa(pmPort)
	pmp, err := StartProc(ctx, "pmtiles-"+strconv.Itoa(pmPort), exec.Command(filepath.Join(bin, "pmtiles"), "serve", pm, "--interface=127.0.0.1",
		"--port="+strconv.Itoa(pmPort), "--cache-size=64", "--quiet"), pmURL, "/arc/"+p.ABPath, logs)
	if err != nil {
		return res, err
	}
	defer pmp.Stop()
	// A fresh process's first MBTiles tile: probe, download, open, read.
	mbURL, mbp, err := startMB(ctx, tilesCmd, s3p.URL, strconv.FormatInt(p.MemBudget, 10), logs, nil)
	if err != nil {
		return res, err
	}
	res.MBFirstUse, err = timeGet(mbURL + "/mb/" + p.ABPath)
	mbp.Stop()
	if err != nil {
		return res, err
	}
	began := time.Now()
	stURL, stp, err := startMB(ctx, tilesCmd, s3p.URL, strconv.FormatInt(p.MemBudget, 10), logs, []string{"STAGE_PREFIXES=mb.mbtiles"})
	if err != nil {
		return res, err
	}
	res.MBStageStart = time.Since(began)
	res.MBFirstStaged, err = timeGet(stURL + "/mb/" + p.ABPath)
	stp.Stop()
	if err != nil {
		return res, err
	}

	type target struct {
		name, url string
		paths     []string
	}
	targets := []target{{objSrv, tsURL, objPaths}, {arcSrv, tsURL, arcPaths}, {pmSrv, pmURL, arcPaths}, {mbSrv, tsURL, mbPaths}}
	client := HTTPClient()
	for _, t := range targets {
		keys := make([]string, len(t.paths))
		for i, pth := range t.paths {
			keys[i] = strings.TrimPrefix(pth, "/")
		}
		w := workload.Workload{Phases: []workload.Phase{{Keys: keys, Concurrency: 8}}}
		if r := workload.Run(ctx, w, workload.HTTPFetcher(client, t.url)); r.Errors > 0 {
			return res, fmt.Errorf("%s: warm-up: %d errors, first: %s", t.name, r.Errors, r.FirstErr)
		}
		client.CloseIdleConnections()
	}
	_, haveAB := exec.LookPath("ab")
	_, haveWrk := exec.LookPath("wrk")
	samples := map[[2]string][]ServerRow{}
	add := func(r ServerRow) { k := [2]string{r.Server, r.Tool}; samples[k] = append(samples[k], r) }
	for round := range max(1, p.Rounds) {
		for i := range targets {
			t := targets[(i+round)%len(targets)]
			if haveAB == nil {
				abPath := t.paths[0][:strings.Index(t.paths[0][1:], "/")+2] + p.ABPath
				r, err := loadtool.RunAB(ctx, t.url+abPath, p.ABN, p.ABC, tmp)
				if err != nil {
					return res, fmt.Errorf("%s: ab: %w", t.name, err)
				}
				add(ServerRow{Server: t.name, Tool: "ab", RPS: r.RPS, Mean: r.Mean, P50: r.P50, P99: r.P99, Errors: r.Failed + r.Non2xx})
			}
			if haveWrk == nil {
				r, err := loadtool.RunWrk(ctx, t.url, t.paths, p.WrkDur, p.WrkConns, p.WrkThread, tmp)
				if err != nil {
					return res, fmt.Errorf("%s: wrk: %w", t.name, err)
				}
				row := ServerRow{Server: t.name, Tool: "wrk", RPS: r.RPS, Mean: r.Mean, P50: r.P50, P99: r.P99, Errors: r.Non2xx}
				if r.SocketErrors != "" {
					row.Note = "socket errors: " + r.SocketErrors
				}
				add(row)
			}
			if haveAB != nil && haveWrk != nil {
				add(goLoad(ctx, client, t.name, t.url, t.paths, p))
			}
		}
	}
	for _, t := range targets {
		for _, tool := range []string{"ab", "wrk", "go"} {
			if got := samples[[2]string{t.name, tool}]; len(got) > 0 {
				res.Rows = append(res.Rows, medianRow(got))
			}
		}
	}
	res.Commands = []string{
		fmt.Sprintf("ab -k -n %d -c %d -e <csv> http://127.0.0.1:PORT/{osm,arc}/%s", p.ABN, p.ABC, p.ABPath),
		fmt.Sprintf("wrk -t %d -c %d -d %ds --latency -s <cycle %d paths>.lua http://127.0.0.1:PORT", p.WrkThread, p.WrkConns, int(p.WrkDur.Seconds()), len(objPaths)),
	}
	ts.Stop()
	pmp.Stop()
	s3p.Stop()

	v, err := archiveViewer(ctx, pool, p, bin, vw, logs, tilesCmd)
	res.Viewer = v
	if err != nil {
		return res, err
	}
	res.targets(samples)
	return res, nil
}

// startMB starts a tile function process with a 1 GiB disk tier (and env
// added) and waits for its health check.
func startMB(ctx context.Context, tilesCmd func(int, string, string, string) *exec.Cmd, s3url, mem, logs string, env []string) (string, *Proc, error) {
	port, err := FreePort()
	if err != nil {
		return "", nil, err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	cmd := tilesCmd(port, s3url, mem, strconv.Itoa(1<<30))
	cmd.Env = append(cmd.Env, env...)
	p, err := StartProc(ctx, "tiles-mb-"+strconv.Itoa(port), cmd, url, "/_tilesieve/health", logs)
	return url, p, err
}

// timeGet is how long one GET of url takes to its last byte; anything but
// a 200 is an error.
func timeGet(url string) (time.Duration, error) {
	began := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	elapsed := time.Since(began)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return elapsed, err
}

// writeMBTiles writes the prefix/z/x/y.jpg tiles of set into a new MBTiles
// database at path (TMS rows, format jpg), checks it opens, and returns its
// size.
func writeMBTiles(ctx context.Context, path, prefix string, set tileset.Set) (int64, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return 0, fmt.Errorf("mbtiles: %w", err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE metadata (name text, value text)`,
		`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
		`CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row)`,
		`INSERT INTO metadata VALUES ('name', '` + prefix + `'), ('format', 'jpg')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("mbtiles: %w", err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("mbtiles: %w", err)
	}
	defer tx.Rollback()
	for _, t := range set {
		var z, x, y int
		if _, err := fmt.Sscanf(t.Key, prefix+"/%d/%d/%d.jpg", &z, &x, &y); err != nil {
			return 0, fmt.Errorf("mbtiles: key %q: %w", t.Key, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tiles VALUES (?, ?, ?, ?)`, z, x, (1<<z)-1-y, t.Body); err != nil {
			return 0, fmt.Errorf("mbtiles: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("mbtiles: %w", err)
	}
	if err := db.Close(); err != nil {
		return 0, fmt.Errorf("mbtiles: %w", err)
	}
	check, err := mbtiles.Open(ctx, path)
	if err != nil {
		return 0, err
	}
	check.Close()
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// goLoad is the fallback load client when neither ab nor wrk is installed:
// WrkConns connections cycling through paths for WrkDur.
func goLoad(ctx context.Context, c *http.Client, name, url string, paths []string, p ArchiveParams) ServerRow {
	keys := make([]string, 0, len(paths))
	for _, pth := range paths {
		keys = append(keys, strings.TrimPrefix(pth, "/"))
	}
	var all []time.Duration
	var n, errs int
	start := time.Now()
	for time.Since(start) < p.WrkDur && ctx.Err() == nil {
		r := workload.Run(ctx, workload.Workload{Phases: []workload.Phase{{Keys: keys, Concurrency: p.WrkConns}}}, workload.HTTPFetcher(c, url))
		all = append(all, r.Latencies...)
		n += len(r.Latencies)
		errs += r.Errors
	}
	s := stats.Summarize(all)
	return ServerRow{Server: name, Tool: "go", RPS: float64(n) / time.Since(start).Seconds(), Mean: s.Mean, P50: s.P50, P99: s.P99, Errors: errs}
}

// viewerKey maps a key of the Mirador workload to the archive: info.json to
// the TileJSON, the thumbnail to 0/0/0, a tile at scale factor s of the
// IIIF pyramid to zoom maxZ-log2(s).
func viewerKeys() (tiles map[string]string, maxZ int) {
	sf := workload.IIIFScaleFactors()
	maxZ = len(sf) - 1
	tiles = map[string]string{
		tileset.IIIFInfo(iiifArc):  iiifArc + ".json",
		tileset.IIIFThumb(iiifArc): iiifArc + "/0/0/0.jpg",
	}
	for _, t := range tileset.IIIFPyramid(iiifArc, workload.IIIFWidth, workload.IIIFHeight, workload.IIIFTile) {
		var x, y int
		fmt.Sscanf(strings.TrimPrefix(t.Key, "iiif/"+iiifArc+"/"), "%d,%d", &x, &y)
		span := workload.IIIFTile * t.Scale
		z := maxZ - int(math.Log2(float64(t.Scale)))
		tiles[t.Key] = fmt.Sprintf("%s/%d/%d/%d.jpg", iiifArc, z, x/span, y/span)
	}
	return tiles, maxZ
}

// archiveViewer runs the Mirador workload, mapped onto an archive of the
// viewer image's pyramid, against fresh tile function processes at
// p.Latency: one tile outside the workload first (reads the header and root
// directory), then the workload cold (counting S3 requests), then again warm.
func archiveViewer(ctx context.Context, pool tileset.Pool, p ArchiveParams, bin, dir, logs string, tilesCmd func(int, string, string, string) *exec.Cmd) (ArchiveViewer, error) {
	m, maxZ := viewerKeys()
	var keys []string
	seen := map[string]bool{}
	for _, k := range m {
		if strings.HasSuffix(k, ".jpg") && !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	set := tileset.Build(keys, pool)
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return ArchiveViewer{}, err
	}
	if err := writeArchive(filepath.Join(www, iiifArc+".pmtiles"), iiifArc, set); err != nil {
		return ArchiveViewer{}, err
	}
	mir := workload.Mirador(iiifArc)
	w := workload.Workload{Name: mir.Name}
	tiles := 0
	for _, ph := range mir.Phases {
		nph := ph
		nph.Keys = nil
		for _, k := range ph.Keys {
			nph.Keys = append(nph.Keys, m[k])
			if strings.HasSuffix(m[k], ".jpg") {
				tiles++
			}
		}
		w.Phases = append(w.Phases, nph)
	}
	// A tile no phase asks for: the last of the full-resolution level.
	prime := fmt.Sprintf("%s/%d/%d/%d.jpg", iiifArc, maxZ, workload.IIIFWidth/workload.IIIFTile-1, workload.IIIFHeight/workload.IIIFTile-1)
	v := ArchiveViewer{Workload: w.Name + " (IIIF tiles mapped to z/x/y of one archive)", LatencyMs: int(p.Latency / time.Millisecond), Tiles: tiles}
	s3p, err := StartS3Serve(ctx, filepath.Join(bin, "s3serve"), www, logs, "-latency", p.Latency.String(), "-control")
	if err != nil {
		return v, err
	}
	defer s3p.Stop()
	for rep := range max(1, p.ColdReps) {
		port, err := FreePort()
		if err != nil {
			return v, err
		}
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		proc, err := StartProc(ctx, fmt.Sprintf("viewer-%d", rep), tilesCmd(port, s3p.URL, "256MiB", "1GiB"), url, "/_tilesieve/health", logs)
		if err != nil {
			return v, err
		}
		err = func() error {
			defer proc.Stop()
			c := HTTPClient()
			defer c.CloseIdleConnections()
			if err := s3serveControl(s3p.URL, "reset"); err != nil {
				return err
			}
			if r := workload.Run(ctx, workload.Workload{Phases: []workload.Phase{{Keys: []string{prime}, Concurrency: 1}}}, workload.HTTPFetcher(c, url)); r.Errors > 0 {
				return fmt.Errorf("prime: %s", r.FirstErr)
			}
			n, err := s3Requests(s3p.URL)
			if err != nil {
				return err
			}
			if rep == 0 {
				v.PrimeRequests = n
			}
			if err := s3serveControl(s3p.URL, "reset"); err != nil {
				return err
			}
			cold := workload.Run(ctx, w, workload.HTTPFetcher(c, url))
			if cold.Errors > 0 {
				return fmt.Errorf("cold: %d errors, first: %s", cold.Errors, cold.FirstErr)
			}
			if n, err = s3Requests(s3p.URL); err != nil {
				return err
			}
			warm := workload.Run(ctx, w, workload.HTTPFetcher(c, url))
			if warm.Errors > 0 {
				return fmt.Errorf("warm: %d errors, first: %s", warm.Errors, warm.FirstErr)
			}
			v.S3Requests = append(v.S3Requests, n)
			v.ColdTotals = append(v.ColdTotals, cold.Total)
			v.WarmTotals = append(v.WarmTotals, warm.Total)
			return nil
		}()
		if err != nil {
			return v, fmt.Errorf("viewer rep %d: %w", rep, err)
		}
	}
	per := make([]float64, len(v.S3Requests))
	for i, n := range v.S3Requests {
		per[i] = float64(n) / float64(tiles)
	}
	v.PerTile = stats.MedianFloat(per)
	v.Cold, v.Warm = stats.Median(v.ColdTotals), stats.Median(v.WarmTotals)
	return v, nil
}

func s3serveControl(base, what string) error {
	resp, err := http.Post(base+"/_s3serve/"+what, "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("s3serve %s: %s", what, resp.Status)
	}
	return nil
}

func s3Requests(base string) (int, error) {
	resp, err := http.Get(base + "/_s3serve/stats")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Requests int `json:"requests"`
	}
	return st.Requests, json.NewDecoder(resp.Body).Decode(&st)
}

// writeArchive packs the prefix/z/x/y.jpg tiles of set into path.
func writeArchive(path, prefix string, set tileset.Set) error {
	var tiles []archiveTile
	for _, t := range set {
		var z, x, y int
		if _, err := fmt.Sscanf(t.Key, prefix+"/%d/%d/%d.jpg", &z, &x, &y); err != nil {
			return fmt.Errorf("pmtiles: key %q: %w", t.Key, err)
		}
		tiles = append(tiles, archiveTile{uint8(z), uint32(x), uint32(y), t.Body})
	}
	return writePMTiles(path, tiles, pmtiles.TileTypeJPEG, prefix)
}

// pairedNote is the median over rounds of a's req/s over b's in the same
// round, which a slow patch of the machine during one round moves less than
// the ratio of the median rounds.
func pairedNote(a, b []ServerRow) string {
	rs := pairedRatios(a, b)
	if len(rs) < 2 {
		return ""
	}
	strs := make([]string, len(rs))
	for i, r := range rs {
		strs[i] = fmt.Sprintf("%.2f", r)
	}
	return "same-round ratios " + strings.Join(strs, ", ")
}

// pairedRatios are a's req/s over b's, round by round (the rounds ran
// seconds apart, so a noisy spell of the shared machine falls on both).
func pairedRatios(a, b []ServerRow) []float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		rs = append(rs, stats.Ratio(a[i].RPS, b[i].RPS))
	}
	return rs
}

func (res *ArchiveResult) targets(samples map[[2]string][]ServerRow) {
	// A ratio is the median of the rounds' ratios, as in the other sections.
	for _, tool := range []string{"ab", "wrk", "go"} {
		arc := samples[[2]string{arcSrv, tool}]
		if len(arc) == 0 {
			continue
		}
		obj, pm, mb := samples[[2]string{objSrv, tool}], samples[[2]string{pmSrv, tool}], samples[[2]string{mbSrv, tool}]
		if len(mb) > 0 {
			res.Targets = append(res.Targets,
				Target{What: "MBTiles memory hits ≥ 0.95x object memory hits (req/s, " + tool + ")", Want: 0.95, Got: stats.MedianFloat(pairedRatios(mb, obj)), Unit: "x", Higher: true,
					Reason: pairedNote(mb, obj)}.Check())
		}
		res.Targets = append(res.Targets,
			Target{What: "archive memory hits ≥ 0.95x object memory hits (req/s, " + tool + ")", Want: 0.95, Got: stats.MedianFloat(pairedRatios(arc, obj)), Unit: "x", Higher: true,
				Reason: pairedNote(arc, obj)}.Check(),
			Target{What: "archive memory hits ≥ 3x go-pmtiles serve (req/s, " + tool + ")", Want: 3, Got: stats.MedianFloat(pairedRatios(arc, pm)), Unit: "x", Higher: true,
				Reason: pairedNote(arc, pm)}.Check())
	}
	v := res.Viewer
	res.Targets = append(res.Targets,
		Target{What: fmt.Sprintf("S3 requests per cold archive tile, directories cached (%s, %d ms)", "mirador", v.LatencyMs), Want: 1.1, Got: v.PerTile, Unit: "", Higher: false}.Check(),
		Target{What: fmt.Sprintf("archive: warm ≥ 20x faster than cold at %d ms (mirador, total time)", v.LatencyMs), Want: 20, Got: stats.Ratio(float64(v.Cold), float64(v.Warm)), Unit: "x", Higher: true}.Check())
}

// renderArchive writes the archive section.
func renderArchive(b *strings.Builder, s *ArchiveResult) {
	fmt.Fprintf(b, "### 8. PMTiles archives\n\n")
	fmt.Fprintf(b, "%d JPEG tiles `{0..%d}/x/y.jpg` (%s) uploaded three times to `bench/cmd/s3serve`: as objects `osm/z/x/y.jpg`, as one PMTiles v3 archive `arc.pmtiles` of the same bytes (written with the product's writer, `shared/formats/pmtiles/pmwrite`, as `tilesieve upload` writes it) and as one MBTiles database `mb.mbtiles` (below). One `go build ./functions/tiles` process (local server mode, `MEM_CACHE_BYTES=%d`, which the three copies fill 7/8 of, no `GOMEMLIMIT` or `GOGC` set, a 1 GiB disk tier beside which the database is staged; memory hits do not touch it) serves all three, `/osm/…`, `/arc/…` and `/mb/…`; `pmtiles serve` of github.com/protomaps/go-pmtiles v1.31.2 (built from the module cache, `--cache-size=64`) serves the same archive file from local disk. Each is warmed by one pass over every tile, then loaded one at a time in %d round(s) whose order rotates; each row is the median round, and each ratio below the median of the rounds' ratios.\n\n",
		s.Tiles, s.Params.MaxZoom, mib(s.Bytes), SharedMem(s.Bytes), max(1, s.Params.Rounds))
	if len(s.Commands) == 2 {
		fmt.Fprintf(b, "Commands: `%s` and `%s`. The load generator shares the cores with the server.\n\n", s.Commands[0], s.Commands[1])
	}
	b.WriteString("| server | tool | req/s | mean | p50 | p99 | errors | note |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range s.Rows {
		fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s | %s | %d | %s |\n", r.Server, r.Tool, r.RPS, d(r.Mean), d(r.P50), d(r.P99), r.Errors, r.Note)
	}
	if s.MBBytes > 0 {
		fmt.Fprintf(b, "\n**MBTiles.** The same tiles as one MBTiles database `mb.mbtiles` (%s, written with database/sql and modernc.org/sqlite), served by the same process as the objects and the archive, staged whole beside its disk tier; its row above is memory hits like the others. First tile (`/mb/%s`) on a fresh process (`MEM_CACHE_BYTES=%d`, a 1 GiB disk tier), which probes, downloads, opens and reads the database: %s. With `STAGE_PREFIXES=mb.mbtiles` such a process stages it at start (start to health %s), and its first tile then takes %s.\n",
			mib(s.MBBytes), s.Params.ABPath, s.Params.MemBudget, d(s.MBFirstUse), d(s.MBStageStart), d(s.MBFirstStaged))
	}
	v := s.Viewer
	fmt.Fprintf(b, "\n**Cold archive tiles.** The Mirador workload of section 1 (info.json, thumbnail, 28 + 50 + 24 tiles), mapped onto one archive of the viewer image's pyramid (scale factor s → zoom %d − log₂ s; info.json → the TileJSON, the thumbnail → `0/0/0`), against s3serve with %d ms injected first-byte latency (`-latency`), in %d run(s), each on a fresh tile function process (256 MiB memory, 1 GiB disk tier). First one tile outside the workload is requested, which reads the header and root directory (%d S3 requests in the first run); then the workload cold, counting s3serve's requests (`-control` stats), then the workload again on the same process (warm).\n\n",
		len(workload.IIIFScaleFactors())-1, v.LatencyMs, len(v.S3Requests), v.PrimeRequests)
	fmt.Fprintf(b, "| tile requests | S3 requests (cold, each run) | per cold tile (median) | cold total | warm total | cold / warm |\n|---:|---|---:|---:|---:|---:|\n")
	reqs := make([]string, len(v.S3Requests))
	for i, n := range v.S3Requests {
		reqs[i] = strconv.Itoa(n)
	}
	fmt.Fprintf(b, "| %d | %s | %.3f | %s | %s | %s |\n", v.Tiles, strings.Join(reqs, ", "), v.PerTile, d(v.Cold), d(v.Warm), x(stats.Ratio(float64(v.Cold), float64(v.Warm))))
	b.WriteString("\n| target | want | got | verdict | note |\n|---|---|---|---|---|\n")
	targetRows(b, "", s.Targets)
	b.WriteString("\n")
}
