package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/loadtool"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// COGParams sizes the COG section.
type COGParams struct {
	RepoRoot  string `json:"-"`
	BenchDir  string `json:"-"`
	Side      int    // pixels a side of the source image, a multiple of 256
	Tiles     int    // tiles of each run, from each tileset
	Conc      int    // concurrency of the cold and warm runs: a browser's connections to one host
	Latencies []time.Duration
	ColdReps  int // fresh processes per tileset and latency
	WrkDur    time.Duration
	WrkConns  int
	WrkThread int
	Rounds    int   // rounds of the warm throughput runs
	MemBytes  int64 // MEM_CACHE_BYTES of every process: room for every tile of the section
}

// DefaultCOGParams are the section's sizes (quick: tiny ones).
func DefaultCOGParams(repoRoot, benchDir string, quick bool) COGParams {
	p := COGParams{RepoRoot: repoRoot, BenchDir: benchDir, Side: 6144, Tiles: 500, Conc: 6,
		Latencies: []time.Duration{0, 20 * time.Millisecond}, ColdReps: 3,
		WrkDur: 3 * time.Second, WrkConns: 20, WrkThread: 2, Rounds: 9, MemBytes: 256 << 20}
	if quick {
		p.Side, p.Tiles, p.ColdReps, p.WrkDur, p.Rounds = 2048, 24, 1, 2*time.Second, 1
	}
	return p
}

// The tilesets of the section, by their names in the bucket.
const (
	cogPass = "cog" // GoogleMapsCompatible COG: stored tiles passed through
	cogArc  = "arc" // PMTiles archive of the same tiles
	cogUTM  = "utm" // UTM COG: tiles resampled
)

// cogTileset is one tileset of the section: its name in the bucket, its
// labels in a table and on a plot's axis, and its file.
type cogTileset struct{ name, label, short, file string }

// cogSets are the tilesets, in the order of the tables.
var cogSets = []cogTileset{
	{cogPass, "COG, stored tiles (GoogleMapsCompatible)", "COG stored", "cog.tif"},
	{cogArc, "PMTiles archive of the same tiles", "PMTiles", "arc.pmtiles"},
	{cogUTM, "COG in UTM 33N, resampled", "UTM resampled", "utm.tif"},
}

// cogNames are the tilesets' names, in cogSets' order.
func cogNames() []string {
	var n []string
	for _, s := range cogSets {
		n = append(n, s.name)
	}
	return n
}

// cogSet is the tileset named name.
func cogSet(name string) cogTileset {
	for _, s := range cogSets {
		if s.name == name {
			return s
		}
	}
	return cogTileset{name: name, label: name, short: name}
}

// COGRun is one tileset's cold and warm runs at one S3 latency, each on a
// fresh tile function process.
type COGRun struct {
	Set       string `json:"set"`
	LatencyMs int    `json:"latency_ms"`
	Tiles     int    `json:"tiles"`
	// OpenRequests are s3serve's count for the first tile (outside the
	// runs), which opens the file; S3Requests its count over each cold run
	// after that; CostRequests and CostBytes the sums of the cold answers'
	// X-Tilesieve-S3.
	OpenRequests []int           `json:"open_requests"`
	S3Requests   []int           `json:"s3_requests"`
	CostRequests []int           `json:"cost_requests"`
	CostBytes    []int64         `json:"cost_bytes"`
	WarmRequests []int           `json:"warm_requests"` // s3serve's count over each warm run: none, if memory hits are
	ColdTotals   []time.Duration `json:"cold_totals"`
	WarmTotals   []time.Duration `json:"warm_totals"`
	// Cold and Warm summarise every tile request of every run.
	Cold stats.Summary `json:"cold"`
	Warm stats.Summary `json:"warm"`
}

// perTile is the most S3 requests per cold tile over the runs, from
// s3serve's count, and from the answers' cost header.
func (r COGRun) perTile() (counted, header float64) {
	for i := range r.S3Requests {
		counted = max(counted, float64(r.S3Requests[i])/float64(r.Tiles))
		header = max(header, float64(r.CostRequests[i])/float64(r.Tiles))
	}
	return counted, header
}

// COGResult is the COG section.
type COGResult struct {
	Params    COGParams              `json:"params"`
	GDAL      string                 `json:"gdal"`
	Commands  []string               `json:"commands"`
	Made      time.Duration          `json:"made"`
	Bytes     map[string]int64       `json:"bytes"`      // file sizes
	Zoom      int                    `json:"zoom"`       // the stored tiles' zoom
	UTMZoom   int                    `json:"utm_zoom"`   // the UTM COG's maxzoom, where its tiles are requested
	TileBytes map[string]float64     `json:"tile_bytes"` // mean answer per tileset
	Stored    int                    `json:"stored"`     // full-resolution tiles in cog.tif
	Rows      []ServerRow            `json:"rows"`       // warm throughput, the median round of each tileset
	Samples   map[string][]ServerRow `json:"samples"`    // every round, in order
	// CPU is the server's CPU time per request of every round: the work
	// of an answer, which a busy machine slows but adds nothing to, where
	// req/s also counts the waits for a core.
	CPU     map[string][]time.Duration `json:"cpu"`
	Runs    []COGRun                   `json:"runs"`
	Targets []Target                   `json:"targets"`
	// WrkRequests is s3serve's count over every wrk round: none, if the
	// rounds were memory hits.
	WrkRequests int    `json:"wrk_requests"`
	Wrk         string `json:"wrk"` // the throughput command
}

// RunCOG serves the same tiles from a GoogleMapsCompatible JPEG COG
// (stored tiles passed through) and from a PMTiles archive of them, and
// tiles resampled from the same pixels in a UTM zone, from tile function
// processes against s3serve: warm throughput with wrk, in rounds, on one
// process holding every tile in memory; then, per tileset and S3 latency,
// fresh processes that open the file with one tile outside the run, serve
// the run cold (counting S3 requests) and again warm.
func RunCOG(ctx context.Context, p COGParams) (COGResult, error) {
	res := COGResult{Params: p, TileBytes: map[string]float64{}, Samples: map[string][]ServerRow{}, CPU: map[string][]time.Duration{}}
	for _, tool := range []string{"gdal_translate", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return res, fmt.Errorf("%s not found: apt-get install gdal-bin (GDAL) and run bench/e2e/install-tools.sh (wrk)", tool)
		}
	}
	if b, err := exec.Command("gdal_translate", "--version").Output(); err == nil {
		res.GDAL = strings.TrimSpace(string(b))
	}
	tmp, err := TempDir("cog")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	www, bin, logs := filepath.Join(tmp, "www"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "logs")
	if err := mkdirs(www, bin, logs); err != nil {
		return res, err
	}
	img, err := makeCOGImagery(ctx, p, tmp, www)
	res.Commands, res.Made, res.Bytes, res.Zoom, res.Stored = img.Commands, img.Made, img.Bytes, img.Zoom, len(img.Stored)
	if err != nil {
		return res, err
	}
	s3p, err := buildAndServe(ctx, p.RepoRoot, p.BenchDir, bin, www, logs, []string{"-control"})
	if err != nil {
		return res, err
	}
	defer s3p.Stop()
	env := cogEnv{p: p, tmp: tmp, bin: bin, logs: logs}
	keys, err := env.warm(ctx, &res, s3p.URL, img)
	if err != nil {
		return res, err
	}
	for _, lat := range p.Latencies {
		s3url, stop := s3p.URL, func() {}
		if lat > 0 {
			lp, err := StartS3Serve(ctx, filepath.Join(bin, "s3serve"), www, logs, "-latency", lat.String(), "-control")
			if err != nil {
				return res, err
			}
			s3url, stop = lp.URL, lp.Stop
		}
		runs, err := env.cold(ctx, s3url, lat, keys)
		stop()
		res.Runs = append(res.Runs, runs...)
		if err != nil {
			return res, err
		}
	}
	res.targets()
	return res, nil
}

// cogKeys are the tiles of each tileset's runs, and the one that opens it.
type cogKeys map[string]struct {
	keys  []string
	prime string
}

// cogEnv starts the section's tile function processes.
type cogEnv struct {
	p              COGParams
	tmp, bin, logs string
	started        int
}

// start starts a tile function process against s3url, with its own
// (empty) disk tier, as section 8 runs them.
func (e *cogEnv) start(ctx context.Context, s3url string) (*Proc, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	e.started++
	name := fmt.Sprintf("tiles-cog-%d", e.started)
	c := exec.Command(filepath.Join(e.bin, "tiles"))
	c.Env = tilesEnv(e.tmp, s3url, port, "MEM_CACHE_BYTES="+strconv.FormatInt(e.p.MemBytes, 10),
		"DISK_CACHE_DIR="+filepath.Join(e.tmp, "disk", name), "DISK_CACHE_BYTES="+strconv.Itoa(1<<30),
		"SYNC_INTERVAL=1h") // the journal check is section 5's cost, not this one's
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	return StartProc(ctx, name, c, url, "/_tilesieve/health", e.logs)
}

// warm starts one process, picks the tiles of every run (pickKeys),
// requests each once (warmUp), then loads each tileset with wrk in rounds
// whose order rotates, counting the S3 requests of all the rounds.
func (e *cogEnv) warm(ctx context.Context, res *COGResult, s3url string, img cogImagery) (cogKeys, error) {
	proc, err := e.start(ctx, s3url)
	if err != nil {
		return nil, err
	}
	defer proc.Stop()
	c := HTTPClient()
	defer c.CloseIdleConnections()
	keys, err := pickKeys(ctx, c, proc.URL, res, img, e.p.Tiles)
	if err != nil {
		return nil, err
	}
	sets := cogNames()
	paths := map[string][]string{}
	for _, set := range sets {
		if paths[set], err = warmUp(ctx, c, proc.URL, res, img, set, keys[set].keys); err != nil {
			return nil, err
		}
	}
	if err := s3serveControl(s3url, "reset"); err != nil {
		return nil, err
	}
	for round := range max(1, e.p.Rounds) {
		for i := range sets {
			set := sets[(i+round)%len(sets)]
			before, err := ProcCPU(proc.Cmd.Process.Pid)
			if err != nil {
				return nil, err
			}
			r, err := loadtool.RunWrk(ctx, proc.URL, paths[set], e.p.WrkDur, e.p.WrkConns, e.p.WrkThread, e.tmp)
			if err != nil {
				return nil, fmt.Errorf("%s: wrk: %w", set, err)
			}
			after, err := ProcCPU(proc.Cmd.Process.Pid)
			if err != nil {
				return nil, err
			}
			row := ServerRow{Server: cogSet(set).label, Tool: "wrk", RPS: r.RPS, Mean: r.Mean, P50: r.P50, P99: r.P99, Errors: r.Non2xx}
			if r.SocketErrors != "" {
				row.Note = "socket errors: " + r.SocketErrors
			}
			res.Samples[set] = append(res.Samples[set], row)
			res.CPU[set] = append(res.CPU[set], (after-before)/time.Duration(max(1, r.Requests)))
		}
	}
	if res.WrkRequests, err = s3Requests(s3url); err != nil {
		return nil, err
	}
	for _, set := range sets {
		res.Rows = append(res.Rows, medianRow(res.Samples[set]))
	}
	res.Wrk = fmt.Sprintf("wrk -t %d -c %d -d %ds --latency -s <cycle %d paths>.lua http://127.0.0.1:PORT", e.p.WrkThread, e.p.WrkConns, int(e.p.WrkDur.Seconds()), e.p.Tiles)
	return keys, nil
}

// pickKeys reads both COGs' TileJSON from the server at base (cog.json
// must name the stored tiles' zoom and format) and picks the tiles of the
// runs: the stored tiles img chose for the COG and the archive, n UTM
// tiles inside utm.json's bounds at its maxzoom.
func pickKeys(ctx context.Context, c *http.Client, base string, res *COGResult, img cogImagery, n int) (cogKeys, error) {
	var tj struct {
		Tiles   []string  `json:"tiles"`
		MaxZoom int       `json:"maxzoom"`
		Bounds  []float64 `json:"bounds"`
	}
	if err := getJSON(ctx, c, base+"/cog.json", &tj); err != nil {
		return nil, err
	}
	if tj.MaxZoom != img.Zoom || len(tj.Tiles) == 0 || !strings.HasSuffix(tj.Tiles[0], "/cog/{z}/{x}/{y}.jpg") {
		return nil, fmt.Errorf("cog.json: maxzoom %d, tiles %q; want %d and the stored JPEGs", tj.MaxZoom, tj.Tiles, img.Zoom)
	}
	if err := getJSON(ctx, c, base+"/utm.json", &tj); err != nil {
		return nil, err
	}
	res.UTMZoom = tj.MaxZoom
	utm, utmPrime, err := utmKeys(tj.MaxZoom, tj.Bounds, n)
	if err != nil {
		return nil, err
	}
	return cogKeys{
		cogPass: {img.Keys, img.Prime},
		cogArc:  {img.Keys, img.Prime},
		cogUTM:  {utm, utmPrime},
	}, nil
}

// warmUp requests every tile of set once from the server at base, each a
// JPEG and, but for the resampled set, the very bytes cog.tif stores; then
// the first again, which must be a memory hit. It returns the tiles' paths
// and records their mean size.
func warmUp(ctx context.Context, c *http.Client, base string, res *COGResult, img cogImagery, set string, keys []string) ([]string, error) {
	var sum int64
	var paths []string
	for _, k := range keys {
		b, h, err := getTile(ctx, c, base+"/"+set+"/"+k)
		if err != nil {
			return nil, err
		}
		if ct := h.Get("Content-Type"); ct != "image/jpeg" {
			return nil, fmt.Errorf("%s/%s: Content-Type %q", set, k, ct)
		}
		if set != cogUTM && !bytes.Equal(b, img.Stored[k]) {
			return nil, fmt.Errorf("%s/%s: %d bytes, not the %d stored in cog.tif", set, k, len(b), len(img.Stored[k]))
		}
		sum += int64(len(b))
		paths = append(paths, "/"+set+"/"+k)
	}
	res.TileBytes[set] = float64(sum) / float64(len(keys))
	if _, h, err := getTile(ctx, c, base+paths[0]); err != nil || h.Get("X-Cache") != "HIT-MEMORY" {
		return nil, fmt.Errorf("%s: a second request was not a memory hit (%v, X-Cache %q)", set, err, h.Get("X-Cache"))
	}
	return paths, nil
}

// cold runs every tileset ColdReps times at one latency, each run on a
// fresh process: the tile that opens the file, the run cold, the run warm.
func (e *cogEnv) cold(ctx context.Context, s3url string, lat time.Duration, keys cogKeys) ([]COGRun, error) {
	sets := cogNames()
	runs := make([]COGRun, len(sets))
	cold, warm := make([][]time.Duration, len(sets)), make([][]time.Duration, len(sets))
	for rep := range max(1, e.p.ColdReps) {
		for i := range sets {
			k := (i + rep) % len(sets)
			set := sets[k]
			r := &runs[k]
			r.Set, r.LatencyMs, r.Tiles = set, int(lat/time.Millisecond), len(keys[set].keys)
			o, err := e.once(ctx, s3url, set, keys[set].keys, keys[set].prime)
			if err != nil {
				return runs, fmt.Errorf("%s at %s, run %d: %w", set, lat, rep, err)
			}
			r.OpenRequests = append(r.OpenRequests, o.open)
			r.S3Requests = append(r.S3Requests, o.s3)
			r.CostRequests = append(r.CostRequests, o.cold.costRequests)
			r.CostBytes = append(r.CostBytes, o.cold.costBytes)
			r.WarmRequests = append(r.WarmRequests, o.warmS3)
			r.ColdTotals = append(r.ColdTotals, o.cold.Total)
			r.WarmTotals = append(r.WarmTotals, o.warm.Total)
			cold[k] = append(cold[k], o.cold.Latencies...)
			warm[k] = append(warm[k], o.warm.Latencies...)
		}
	}
	for k := range runs {
		runs[k].Cold, runs[k].Warm = stats.Summarize(cold[k]), stats.Summarize(warm[k])
	}
	return runs, nil
}

// onceResult is one fresh process's runs.
type onceResult struct {
	open, s3, warmS3 int
	cold, warm       tileRun
}

func (e *cogEnv) once(ctx context.Context, s3url, set string, keys []string, prime string) (onceResult, error) {
	var o onceResult
	proc, err := e.start(ctx, s3url)
	if err != nil {
		return o, err
	}
	defer proc.Stop()
	c := HTTPClient()
	defer c.CloseIdleConnections()
	if err := s3serveControl(s3url, "reset"); err != nil {
		return o, err
	}
	if _, _, err := getTile(ctx, c, proc.URL+"/"+set+"/"+prime); err != nil {
		return o, fmt.Errorf("opening tile: %w", err)
	}
	if o.open, err = s3Requests(s3url); err != nil {
		return o, err
	}
	if err := s3serveControl(s3url, "reset"); err != nil {
		return o, err
	}
	if o.cold, err = runTiles(ctx, c, proc.URL+"/"+set, keys, e.p.Conc, "MISS"); err != nil {
		return o, fmt.Errorf("cold: %w", err)
	}
	if o.s3, err = s3Requests(s3url); err != nil {
		return o, err
	}
	if o.warm, err = runTiles(ctx, c, proc.URL+"/"+set, keys, e.p.Conc, "HIT-MEMORY"); err != nil {
		return o, fmt.Errorf("warm: %w", err)
	}
	n, err := s3Requests(s3url)
	o.warmS3 = n - o.s3
	return o, err
}

// tileRun is a run of tile requests and what their answers said they cost.
type tileRun struct {
	workload.Result
	costRequests int
	costBytes    int64
}

// runTiles requests keys under base at concurrency conc, each a JPEG 200
// whose X-Cache is xcache, and sums their X-Tilesieve-S3.
func runTiles(ctx context.Context, c *http.Client, base string, keys []string, conc int, xcache string) (tileRun, error) {
	var r tileRun
	var mu sync.Mutex // guards r's cost sums
	fetch := func(ctx context.Context, key string) error {
		_, h, err := getTile(ctx, c, base+"/"+key)
		if err != nil {
			return err
		}
		if got := h.Get("X-Cache"); got != xcache {
			return fmt.Errorf("%s: X-Cache %q, want %q", key, got, xcache)
		}
		n, b, err := parseCost(h.Get(tileserver.CostHeader))
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		mu.Lock()
		r.costRequests += n
		r.costBytes += b
		mu.Unlock()
		return nil
	}
	r.Result = workload.Run(ctx, workload.Workload{Phases: []workload.Phase{{Keys: keys, Concurrency: conc}}}, fetch)
	if r.Errors > 0 {
		return r, fmt.Errorf("%d of %d requests failed, first: %s", r.Errors, len(keys), r.FirstErr)
	}
	return r, nil
}

// parseCost reads "requests=N; bytes=M"; an empty value costs nothing.
func parseCost(v string) (requests int, read int64, err error) {
	if v == "" {
		return 0, 0, nil
	}
	for part := range strings.SplitSeq(v, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return 0, 0, fmt.Errorf("%s %q: no key=value", tileserver.CostHeader, v)
		}
		n, perr := strconv.ParseInt(val, 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("%s %q: %w", tileserver.CostHeader, v, perr)
		}
		switch k {
		case "requests":
			requests = int(n)
		case "bytes":
			read = n
		}
	}
	return requests, read, nil
}

// getTile GETs url and wants a 200.
func getTile(ctx context.Context, c *http.Client, url string) ([]byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return b, resp.Header, err
}

func getJSON(ctx context.Context, c *http.Client, url string, v any) error {
	b, _, err := getTile(ctx, c, url)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}

func (res *COGResult) targets() {
	pass, arc, utm := res.Samples[cogPass], res.Samples[cogArc], res.Samples[cogUTM]
	res.Targets = append(res.Targets,
		Target{What: "warm COG stored tiles ≥ 0.95x the PMTiles archive of the same tiles (req/s, wrk)", Want: 0.95,
			Got: stats.MedianFloat(pairedRatios(pass, arc)), Unit: "x", Higher: true, Reason: joinNote(pairedNote(pass, arc), res.cpuNote(cogArc, cogPass))}.Check())
	for _, r := range res.Runs {
		if r.Set != cogPass {
			continue
		}
		counted, header := r.perTile()
		res.Targets = append(res.Targets, Target{
			What: fmt.Sprintf("cold COG stored tiles: S3 requests per tile once the header is read (%d ms)", r.LatencyMs),
			Want: 1, Got: counted, Higher: false,
			Reason: fmt.Sprintf("the most of %d runs by s3serve's count, %d tiles each; by the answers' %s: %.3f; the first tile, which opens the file: %s requests",
				len(r.S3Requests), r.Tiles, tileserver.CostHeader, header, intList(r.OpenRequests)),
		}.Check())
	}
	res.Targets = append(res.Targets,
		Target{What: "warm resampled UTM tiles ≥ 0.95x the stored tiles' warm rate (req/s, wrk)", Want: 0.95,
			Got: stats.MedianFloat(pairedRatios(utm, pass)), Unit: "x", Higher: true, Reason: joinNote(pairedNote(utm, pass), res.cpuNote(cogPass, cogUTM))}.Check())
}

// cpuNote is the median over rounds of the server's CPU per request of
// tileset a over b's in the same round (above 1: b costs less), with the
// medians: where the machine is busy, what the answers cost apart from
// waiting for a core.
func (res *COGResult) cpuNote(a, b string) string {
	ca, cb := res.CPU[a], res.CPU[b]
	var rs []float64
	for i := range min(len(ca), len(cb)) {
		rs = append(rs, stats.Ratio(float64(ca[i]), float64(cb[i])))
	}
	if len(rs) == 0 {
		return ""
	}
	return fmt.Sprintf("server CPU per request %s %.1f µs, %s %.1f µs: %s's ÷ %s's %.2fx (median of the same-round ratios)",
		cogSet(a).short, us(stats.Median(ca)), cogSet(b).short, us(stats.Median(cb)), cogSet(a).short, cogSet(b).short, stats.MedianFloat(rs))
}

func intList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
