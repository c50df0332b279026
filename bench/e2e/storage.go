package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/loadtool"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/admin"
)

// StorageParams sizes section 2.
type StorageParams struct {
	RepoRoot  string // the checkout (functions/tiles is built from it)
	BenchDir  string // the bench module
	MaxZoom   int    // tiles osm/0..MaxZoom/x/y.jpg
	ABN, ABC  int
	WrkDur    time.Duration
	WrkConns  int
	WrkThread int
	// FullShare is the share of MEM_CACHE_BYTES the set's bytes fill in the
	// memory-hit run (7/8: a full tier); Roomy is how many times the set
	// MEM_CACHE_BYTES is in the roomy memory-hit run (4).
	FullShare float64
	Roomy     int
	MemBudget int64 // MEM_CACHE_BYTES of the memory-hit run: the set's bytes over FullShare (set by RunStorage)
	ABPath    string
	Rounds    int // each server × tool is run this many times, interleaved; the median round is reported
	// Equal sizes the comparison with the equal-header floor (no runs
	// when Equal.Rounds is 0).
	Equal EqualParams
}

// DefaultStorageParams are the section's sizes (quick: tiny ones).
func DefaultStorageParams(repoRoot, benchDir string, quick bool) StorageParams {
	p := StorageParams{RepoRoot: repoRoot, BenchDir: benchDir, MaxZoom: 5, ABN: 20000, ABC: 20,
		WrkDur: 5 * time.Second, WrkConns: 20, WrkThread: 2, FullShare: 7.0 / 8, Roomy: 4, ABPath: "/osm/5/10/12.jpg", Rounds: 5,
		Equal: EqualParams{Bytes: 12 << 10, Conns: []int{1, 20}, ABN: 8000, WrkDur: time.Second, Rounds: 15}}
	if quick {
		p.MaxZoom, p.ABN, p.WrkDur, p.ABPath, p.Rounds = 3, 2000, 2*time.Second, "/osm/3/2/2.jpg", 2
		p.Equal.ABN, p.Equal.WrkDur, p.Equal.Rounds = 2000, time.Second, 2
	}
	return p
}

// fullBudget is MEM_CACHE_BYTES of the memory-hit run over a set of
// setBytes: the set fills FullShare of it.
func (p StorageParams) fullBudget(setBytes int64) int64 {
	return int64(math.Ceil(float64(setBytes) / p.FullShare))
}

// ServerRow is one server × load tool.
type ServerRow struct {
	Server string        `json:"server"`
	Tool   string        `json:"tool"`
	RPS    float64       `json:"rps"`
	Mean   time.Duration `json:"mean"`
	P50    time.Duration `json:"p50"`
	P99    time.Duration `json:"p99"`
	Errors int           `json:"errors"` // failed + non-2xx
	// GCPer100k is, for tilesieve's wrk rows, the collections per 100,000
	// requests during the wrk runs (GODEBUG=gctrace=1), and RoundsGC each
	// round's.
	GCPer100k float64   `json:"gc_per_100k,omitempty"`
	RoundsGC  []float64 `json:"rounds_gc,omitempty"`
	// CPUPerReq is, for wrk rows, the server's CPU time per request (its
	// threads' and its children's, /proc/PID/task/*/schedstat) in the median
	// round, and RoundsCPU each round's.
	CPUPerReq time.Duration   `json:"cpu_per_req,omitempty"`
	RoundsCPU []time.Duration `json:"rounds_cpu,omitempty"`
	VsFloor   float64         `json:"vs_floor"`
	VsPMTiles float64         `json:"vs_pmtiles"`
	VsNginx   float64         `json:"vs_nginx"`
	Note      string          `json:"note,omitempty"`
	RoundsRPS []float64       `json:"rounds_rps,omitempty"` // req/s of every round, in run order
}

// MemRow is section 6: one tile server process's peak RSS vs its budget.
type MemRow struct {
	Config    string `json:"config"`
	Budget    int64  `json:"budget"`
	VmHWM     int64  `json:"vm_hwm"`
	VmRSS     int64  `json:"vm_rss"`
	Requests  int64  `json:"requests"`
	MemHits   int64  `json:"memory_hits"`
	DiskHits  int64  `json:"disk_hits"`
	Misses    int64  `json:"misses"`
	CacheUsed int64  `json:"cache_bytes"`
}

// StorageResult is sections 2 and 6.
type StorageResult struct {
	Tiles      int           `json:"tiles"`
	Bytes      int64         `json:"bytes"`
	ABPath     string        `json:"ab_path"`
	ABBytes    int           `json:"ab_bytes"`
	Params     StorageParams `json:"params"`
	Rows       []ServerRow   `json:"rows"`
	Memory     []MemRow      `json:"memory"`
	Targets    []Target      `json:"targets"`
	MemTargets []Target      `json:"mem_targets"`
	Commands   []string      `json:"commands"`
	Equal      *EqualResult  `json:"equal,omitempty"`
}

const adminToken = "e2e-bench-token"

// RunStorage serves the same XYZ tiles from tilesieve (memory hits; disk
// hits), the Go floor, `pmtiles serve` and nginx, each its own process on a
// loopback port, and loads each with ab and wrk.
func RunStorage(ctx context.Context, pool tileset.Pool, p StorageParams) (StorageResult, error) {
	set := tileset.Build(tileset.XYZ("osm", "jpg", 0, p.MaxZoom), pool)
	p.MemBudget = p.fullBudget(set.Bytes())
	roomy := int64(p.Roomy) * set.Bytes()
	res := StorageResult{Tiles: len(set), Bytes: set.Bytes(), Params: p, ABPath: p.ABPath}
	for _, t := range set {
		if t.Key == strings.TrimPrefix(p.ABPath, "/") {
			res.ABBytes = len(t.Body)
		}
	}
	tmp, err := TempDir("storage")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	// nginx's workers run as an unprivileged user when started as root: they
	// must be able to walk to the files.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return res, err
	}
	www, bin, logs := filepath.Join(tmp, "www"), filepath.Join(tmp, "bin"), filepath.Join(tmp, "logs")
	if err := mkdirs(www, bin, logs, filepath.Join(tmp, "pm"), filepath.Join(tmp, "nginx")); err != nil {
		return res, err
	}
	if err := tileset.WriteDir(www, set); err != nil {
		return res, err
	}
	if err := writeArchive(filepath.Join(tmp, "pm", "osm.pmtiles"), "osm", set); err != nil {
		return res, err
	}
	s3p, err := buildAndServe(ctx, p.RepoRoot, p.BenchDir, bin, www, logs, nil,
		Build{p.BenchDir, "floorserve", "./cmd/floorserve"},
		Build{p.BenchDir, "pmtiles", "github.com/protomaps/go-pmtiles"})
	if err != nil {
		return res, err
	}
	defer s3p.Stop()

	keys := set.Keys()
	paths := make([]string, len(keys))
	for i, k := range keys {
		paths[i] = "/" + k
	}
	tiles := func(c tilesConfig) func(port int) (*exec.Cmd, string) {
		return func(port int) (*exec.Cmd, string) {
			return c.command(filepath.Join(bin, "tiles"), tmp, s3p.URL, port), healthPath
		}
	}
	servers := []storageServer{
		{name: memHits, ab: true, tilesieve: true, budget: p.MemBudget, start: tiles(memBoundConfig(p.MemBudget))},
		{name: memHitsRoomy, ab: true, tilesieve: true, budget: roomy, start: tiles(memBoundConfig(roomy))},
		{name: diskHits, tilesieve: true, budget: 1 << 20, start: tiles(diskHitsConfig)},
		{name: equalDefault, equalOnly: true, start: tiles(defaultBoundConfig)},
		{name: equalTimeouts, equalOnly: true, start: func(port int) (*exec.Cmd, string) {
			return exec.Command(filepath.Join(bin, "floorserve"), "-dir", www, "-addr", "127.0.0.1:"+strconv.Itoa(port), "-timeouts"), p.ABPath
		}},
		{name: goFloor, ab: true, start: func(port int) (*exec.Cmd, string) {
			return exec.Command(filepath.Join(bin, "floorserve"), "-dir", www, "-addr", "127.0.0.1:"+strconv.Itoa(port)), p.ABPath
		}},
		{name: "go-pmtiles serve", ab: true, start: func(port int) (*exec.Cmd, string) {
			return exec.Command(filepath.Join(bin, "pmtiles"), "serve", filepath.Join(tmp, "pm"), "--interface=127.0.0.1",
				"--port="+strconv.Itoa(port), "--cache-size=64", "--quiet"), p.ABPath
		}},
		{name: "nginx sendfile", ab: true, start: func(port int) (*exec.Cmd, string) {
			dir := filepath.Join(tmp, "nginx")
			conf := filepath.Join(dir, "nginx.conf")
			os.WriteFile(conf, []byte(NginxConf(dir, www, port)), 0o644)
			return exec.Command("nginx", "-p", dir+"/", "-e", filepath.Join(dir, "error.log"), "-c", conf), p.ABPath
		}},
	}
	res.Commands = []string{
		fmt.Sprintf("ab -k -n %d -c %d -e <csv> http://127.0.0.1:PORT%s", p.ABN, p.ABC, p.ABPath),
		fmt.Sprintf("wrk -t %d -c %d -d %ds --latency -s <cycle %d paths>.lua http://127.0.0.1:PORT", p.WrkThread, p.WrkConns, int(p.WrkDur.Seconds()), len(paths)),
	}
	// Every server is started and warmed first, then each is loaded in turn
	// in p.Rounds rounds, the order rotating each round, so that a slow
	// patch of this shared machine lands on all of them rather than on one.
	client := HTTPClient()
	var runs []*running
	defer func() {
		for _, r := range runs {
			r.proc.Stop()
		}
	}()
	for _, s := range servers {
		port, err := FreePort()
		if err != nil {
			return res, err
		}
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		cmd, probe := s.start(port)
		proc, err := StartProc(ctx, strings.Fields(s.name)[0]+"-"+strconv.Itoa(port), cmd, url, probe, logs)
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.name, err)
		}
		runs = append(runs, &running{storageServer: s, proc: proc, url: url})
		// Warm: one pass over every tile (fills tilesieve's memory tier,
		// nginx's page cache, pmtiles' directory cache).
		w := workload.Workload{Phases: []workload.Phase{{Keys: keys, Concurrency: 8}}}
		if r := workload.Run(ctx, w, workload.HTTPFetcher(client, url)); r.Errors > 0 {
			return res, fmt.Errorf("%s: warm-up: %d errors, first: %s", s.name, r.Errors, r.FirstErr)
		}
		client.CloseIdleConnections()
	}
	rounds := max(1, p.Rounds)
	samples := map[[2]string][]ServerRow{}
	var main []*running
	for _, rs := range runs {
		if !rs.equalOnly {
			main = append(main, rs)
		}
	}
	for round := range rounds {
		for _, rs := range roundOrder(main, round) {
			if err := rs.loadOnce(ctx, p, paths, tmp, samples); err != nil {
				return res, fmt.Errorf("%s: %w", rs.name, err)
			}
		}
	}
	if p.Equal.Rounds > 0 {
		key, size := nearestTile(set, p.Equal.Bytes)
		byName := map[string]*running{}
		for _, rs := range runs {
			byName[rs.name] = rs
		}
		eqs := func(name string, rs *running, target bool) equalServer {
			return equalServer{name: name, url: rs.url, pid: rs.proc.Cmd.Process.Pid, target: target}
		}
		eq, err := runEqual(ctx, p.Equal, "/"+key, size, []equalServer{
			eqs(equalDefault, byName[equalDefault], true),
			eqs(fmt.Sprintf("tilesieve memory hits, MEM_CACHE_BYTES=%s", mib(p.MemBudget)), byName[memHits], false),
			eqs(equalTimeouts, byName[equalTimeouts], false),
			eqs("Go floor (equal headers)", byName[goFloor], false),
		}, tmp)
		if err != nil {
			return res, fmt.Errorf("equal-header floor: %w", err)
		}
		res.Equal = &eq
	}
	for _, rs := range main {
		for _, tool := range []string{"ab", "wrk"} {
			got := samples[[2]string{rs.name, tool}]
			if len(got) == 0 {
				continue
			}
			row := medianRow(got)
			if rs.tilesieve && tool == "wrk" {
				d := rs.delta
				row.Note = joinNote(row.Note, fmt.Sprintf("during wrk: %.1f%% memory hits, %.1f%% disk hits, %.1f%% S3",
					pct(d.MemoryHits, d.Requests), pct(d.DiskHits, d.Requests), pct(d.Misses, d.Requests)))
				if d.Requests > 0 {
					row.GCPer100k, row.RoundsGC = 1e5*float64(rs.gcs)/float64(d.Requests), rs.roundsGC
					row.Note = joinNote(row.Note, fmt.Sprintf("%.0f collections per 100,000 requests (rounds: %s)", row.GCPer100k, numList(rs.roundsGC, 0)))
				}
			}
			res.Rows = append(res.Rows, row)
		}
		if rs.tilesieve {
			after, err := tilesStats(rs.url)
			if err != nil {
				return res, err
			}
			pm, err := ReadProcMemory(rs.proc.Cmd.Process.Pid)
			if err != nil {
				return res, err
			}
			h := after.Handler
			res.Memory = append(res.Memory, MemRow{Config: rs.name, Budget: rs.budget, VmHWM: pm.VmHWM, VmRSS: pm.VmRSS,
				Requests: h.Requests, MemHits: h.MemoryHits, DiskHits: h.DiskHits, Misses: h.Misses, CacheUsed: after.Memory.Bytes})
		}
	}
	res.Rows = append(res.Rows, ServerRow{Server: diskHits, Tool: "ab",
		Note: "not run: ab requests one URL, which any memory tier (≥ 1 MiB, the smallest allowed) holds after the first request, so it would measure memory hits; wrk cycles through every tile"})
	res.ratios()
	return res, nil
}

// equalDefault is the tilesieve server of the comparison with the
// equal-header floor: memory hits with the default memory bound.
const equalDefault = "tilesieve memory hits, default bounds"

// memHitsRoomy and diskHits are section 2's other tilesieve servers: memory
// hits with a tier Roomy times the set, and disk hits.
const (
	memHitsRoomy = "tilesieve memory hits, roomy tier"
	diskHits     = "tilesieve disk hits"
)

// equalTimeouts is the equal-header floor with the local tile server's
// http.Server timeouts (floorserve -timeouts).
const equalTimeouts = "Go floor, the local server's timeouts"

// tilesConfig is how section 2 runs the tile function as a local server:
// its memory bound ("" for the default), its disk tier's bound ("0" turns
// the tier off) and any further environment. It sets no GOMEMLIMIT or GOGC:
// the product's own.
type tilesConfig struct {
	mem, disk string
	extra     []string
}

// memBoundConfig is memory hits under a bound of n bytes, disk tier off.
func memBoundConfig(n int64) tilesConfig {
	return tilesConfig{mem: strconv.FormatInt(n, 10), disk: "0"}
}

// defaultBoundConfig is memory hits under the default bound, disk tier off.
var defaultBoundConfig = tilesConfig{disk: "0"}

// diskHitsConfig is disk hits: a memory tier too small to hold the set and
// the disk tier staged from S3 at start.
var diskHitsConfig = tilesConfig{mem: "1MiB", disk: "1GiB", extra: []string{"STAGE_PREFIXES=osm/", "STAGE_BUDGET=60s"}}

// healthPath answers 200 once the tile function's local server is up.
const healthPath = "/_tilesieve/health"

// command runs the tile server binary bin in configuration c on
// 127.0.0.1:port, over the S3 endpoint at s3URL, its home and disk tier
// under tmp. The server counts its collections (GODEBUG=gctrace=1, one
// line each in its log).
func (c tilesConfig) command(bin, tmp, s3URL string, port int) *exec.Cmd {
	env := tilesEnv(tmp, s3URL, port, "DISK_CACHE_DIR="+filepath.Join(tmp, "disk-"+strconv.Itoa(port)), "DISK_CACHE_BYTES="+c.disk,
		"GODEBUG=gctrace=1")
	if c.mem != "" {
		env = append(env, "MEM_CACHE_BYTES="+c.mem)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(env, c.extra...)
	return cmd
}

// nearestTile is the key of set whose body size is nearest n (the first in
// key order among equals), and that size.
func nearestTile(set tileset.Set, n int) (string, int) {
	key, size := "", -1
	for _, t := range set {
		d, best := abs(len(t.Body)-n), abs(size-n)
		if size < 0 || d < best || (d == best && t.Key < key) {
			key, size = t.Key, len(t.Body)
		}
	}
	return key, size
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// storageServer is one server of section 2 and how to start it.
type storageServer struct {
	name      string
	start     func(port int) (*exec.Cmd, string) // the command and the path that answers once it is up
	ab        bool                               // loaded with ab too (one URL)
	equalOnly bool                               // loaded only in the comparison with the equal-header floor
	tilesieve bool                               // has tilesieve's admin stats
	budget    int64                              // MEM_CACHE_BYTES, for section 6
}

// running is a started storageServer.
type running struct {
	storageServer
	proc  *Proc
	url   string
	delta admin.HandlerStats // tilesieve's counters summed over its wrk runs
	// gcs are the collections during its wrk runs (gctrace lines in its
	// log), and roundsGC each round's per 100,000 requests.
	gcs      int64
	roundsGC []float64
}

// loadOnce runs one round against rs: ab (for servers that take it), then
// wrk, appending a row per tool to samples.
func (rs *running) loadOnce(ctx context.Context, p StorageParams, paths []string, tmp string, samples map[[2]string][]ServerRow) error {
	if rs.ab {
		r, err := loadtool.RunAB(ctx, rs.url+p.ABPath, p.ABN, p.ABC, tmp)
		if err != nil {
			return err
		}
		k := [2]string{rs.name, "ab"}
		samples[k] = append(samples[k], ServerRow{Server: rs.name, Tool: "ab", RPS: r.RPS, Mean: r.Mean, P50: r.P50, P99: r.P99, Errors: r.Failed + r.Non2xx})
	}
	var before admin.Stats
	var gcBefore int64
	if rs.tilesieve {
		var err error
		if before, err = tilesStats(rs.url); err != nil {
			return err
		}
		gcBefore = countGC(rs.proc.Log)
	}
	cpu0, cpuErr := TreeCPU(rs.proc.Cmd.Process.Pid)
	r, err := loadtool.RunWrk(ctx, rs.url, paths, p.WrkDur, p.WrkConns, p.WrkThread, tmp)
	if err != nil {
		return err
	}
	row := ServerRow{Server: rs.name, Tool: "wrk", RPS: r.RPS, Mean: r.Mean, P50: r.P50, P99: r.P99, Errors: r.Non2xx}
	if cpu1, err := TreeCPU(rs.proc.Cmd.Process.Pid); err == nil && cpuErr == nil && r.Requests > 0 {
		row.CPUPerReq = (cpu1 - cpu0) / time.Duration(r.Requests)
	}
	if r.SocketErrors != "" {
		row.Note = "socket errors: " + r.SocketErrors
	}
	if rs.tilesieve {
		after, err := tilesStats(rs.url)
		if err != nil {
			return err
		}
		a, b := after.Handler, before.Handler
		gcs := countGC(rs.proc.Log) - gcBefore
		rs.gcs += gcs
		if n := a.Requests - b.Requests; n > 0 {
			rs.roundsGC = append(rs.roundsGC, 1e5*float64(gcs)/float64(n))
		}
		rs.delta.Requests += a.Requests - b.Requests
		rs.delta.MemoryHits += a.MemoryHits - b.MemoryHits
		rs.delta.DiskHits += a.DiskHits - b.DiskHits
		rs.delta.Misses += a.Misses - b.Misses
	}
	k := [2]string{rs.name, "wrk"}
	samples[k] = append(samples[k], row)
	return nil
}

// roundOrder is the order the servers are loaded in one round: the order
// rotates from round to round, and tilesieve's memory hits (a full tier and
// a roomy one) run right beside the Go floor (before it in even rounds,
// after it in odd ones), so that their same-round ratios, the ones the
// targets take, compare runs seconds apart.
func roundOrder(main []*running, round int) []*running {
	var pair []*running // the memory hits and the floor, as one unit
	units := [][]*running{nil}
	for _, rs := range main {
		if rs.name == memHits || rs.name == memHitsRoomy || rs.name == goFloor {
			pair = append(pair, rs)
		} else {
			units = append(units, []*running{rs})
		}
	}
	if round%2 == 1 {
		slices.Reverse(pair)
	}
	units[0] = pair
	if len(pair) == 0 {
		units = units[1:]
	}
	var order []*running
	for i := range units {
		order = append(order, units[(i+round)%len(units)]...)
	}
	return order
}

// medianRow returns the round with the median req/s (the lower middle for an
// even count), carrying every round's req/s and, with more than one round,
// their range in its note.
func medianRow(rounds []ServerRow) ServerRow {
	byRPS := slices.Clone(rounds)
	slices.SortFunc(byRPS, func(a, b ServerRow) int { return cmp.Compare(a.RPS, b.RPS) })
	row := byRPS[(len(byRPS)-1)/2]
	row.Errors = 0
	var cpus []float64
	for _, r := range rounds {
		row.RoundsRPS = append(row.RoundsRPS, r.RPS)
		row.Errors += r.Errors
		if r.CPUPerReq > 0 {
			row.RoundsCPU = append(row.RoundsCPU, r.CPUPerReq)
			cpus = append(cpus, float64(r.CPUPerReq))
		}
	}
	if len(cpus) > 0 {
		row.CPUPerReq = time.Duration(stats.MedianFloat(cpus))
	}
	if len(rounds) > 1 {
		row.Note = joinNote(fmt.Sprintf("median of %d rounds, %.0f–%.0f req/s", len(rounds), byRPS[0].RPS, byRPS[len(byRPS)-1].RPS), row.Note)
	}
	return row
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func pct(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// memHits and goFloor are the servers of section 2's targets against the
// floor.
const (
	memHits = "tilesieve memory hits"
	goFloor = "Go floor (map)"
)

// sameRound is the median over the rounds of a's req/s over b's in the
// same round, and the rounds' ratios; the ratio of their median rounds when
// the rounds do not line up (a row from an older result).
func sameRound(a, b *ServerRow) (float64, []float64) {
	if len(a.RoundsRPS) < 2 || len(a.RoundsRPS) != len(b.RoundsRPS) {
		return stats.Ratio(a.RPS, b.RPS), nil
	}
	rs := make([]float64, len(a.RoundsRPS))
	for i := range rs {
		rs[i] = stats.Ratio(a.RoundsRPS[i], b.RoundsRPS[i])
	}
	return stats.MedianFloat(rs), rs
}

// ratios fills the Vs* columns (each the median of the same-round ratios)
// and the targets.
func (res *StorageResult) ratios() {
	find := func(server, tool string) *ServerRow {
		for i := range res.Rows {
			if res.Rows[i].Server == server && res.Rows[i].Tool == tool && res.Rows[i].RPS > 0 {
				return &res.Rows[i]
			}
		}
		return nil
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		if f := find(goFloor, r.Tool); f != nil {
			r.VsFloor, _ = sameRound(r, f)
		}
		if f := find("go-pmtiles serve", r.Tool); f != nil {
			r.VsPMTiles, _ = sameRound(r, f)
		}
		if f := find("nginx sendfile", r.Tool); f != nil {
			r.VsNginx, _ = sameRound(r, f)
		}
	}
	for _, tool := range []string{"ab", "wrk"} {
		for _, name := range []string{memHits, memHitsRoomy} {
			m := find(name, tool)
			if m == nil {
				continue
			}
			what := "memory hits, the set filling 7/8 of MEM_CACHE_BYTES,"
			if name == memHitsRoomy {
				what = fmt.Sprintf("memory hits, a tier %d times the set,", res.Params.Roomy)
			}
			vsFloor := Target{What: what + " ≥ 0.9x the Go floor (req/s, " + tool + ")", Want: 0.9, Got: m.VsFloor, Unit: "x", Higher: true}.Check()
			if f := find(goFloor, tool); f != nil {
				if _, rs := sameRound(m, f); rs != nil {
					vsFloor.Reason = "same-round ratios " + ratioList(rs)
				}
			}
			if !vsFloor.Met {
				vsFloor.Reason = joinNote(vsFloor.Reason, "per request tilesieve also sets the connection deadlines of its server timeouts, and does more than the floor in the handler (section 0); with the load generator on the same two cores, server CPU is throughput")
			}
			res.Targets = append(res.Targets, vsFloor)
			if name == memHits {
				res.Targets = append(res.Targets, Target{What: "memory hits ≥ 1.0x go-pmtiles (req/s, " + tool + ")", Want: 1.0, Got: m.VsPMTiles, Unit: "x", Higher: true}.Check())
			}
		}
	}
	if full, roomy := find(memHits, "wrk"), find(memHitsRoomy, "wrk"); full != nil && roomy != nil {
		r, rs := sameRound(full, roomy)
		t := Target{What: fmt.Sprintf("memory hits, the set filling 7/8 of MEM_CACHE_BYTES, ≥ 0.95x a tier %d times the set (req/s, wrk)", res.Params.Roomy),
			Want: 0.95, Got: r, Unit: "x", Higher: true}.Check()
		if rs != nil {
			t.Reason = "same-round ratios " + ratioList(rs)
		}
		res.Targets = append(res.Targets, t)
		if roomy.GCPer100k > 0 {
			res.Targets = append(res.Targets, Target{What: fmt.Sprintf("collections per 100,000 requests, the full tier's over a tier %d times the set's (wrk, GODEBUG=gctrace=1)", res.Params.Roomy),
				Want: 2, Got: full.GCPer100k / roomy.GCPer100k, Unit: "x",
				Reason: fmt.Sprintf("%.0f against %.0f", full.GCPer100k, roomy.GCPer100k)}.Check())
		}
	}
	if d, n := find(diskHits, "wrk"), find("nginx sendfile", "wrk"); d != nil && n != nil {
		t := Target{What: "disk hits ≥ 0.6x nginx with sendfile on the same files (req/s, wrk)", Want: 0.6, Got: d.VsNginx, Unit: "x", Higher: true}.Check()
		if _, rs := sameRound(d, n); rs != nil {
			t.Reason = "same-round ratios " + ratioList(rs)
		}
		if f := find(goFloor, "wrk"); !t.Met && f != nil {
			t.Reason = joinNote(t.Reason, "a disk hit is net/http's request and answer, which the Go floor alone serves at "+x(f.VsNginx)+
				" nginx from a map, plus an open, a read of the file's header, sendfile and a close, and the collector's share of their garbage: see the notes below the table")
		}
		res.Targets = append(res.Targets, t)
	}
	for _, m := range res.Memory {
		res.MemTargets = append(res.MemTargets, Target{
			What: fmt.Sprintf("%s: peak RSS ≤ MEM_CACHE_BYTES (%d MiB) + 64 MiB", m.Config, m.Budget>>20),
			Want: float64(m.Budget+64<<20) / (1 << 20), Got: float64(m.VmHWM) / (1 << 20), Unit: "MiB",
		}.Check())
	}
}

func tilesStats(url string) (admin.Stats, error) {
	req, _ := http.NewRequest(http.MethodGet, url+"/_tilesieve/stats", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return admin.Stats{}, err
	}
	defer resp.Body.Close()
	var st admin.Stats
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("stats: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// NginxConf is a minimal nginx.conf serving root from disk with sendfile on
// 127.0.0.1:port, everything it writes under prefix, in the foreground.
func NginxConf(prefix, root string, port int) string {
	return nginxHead(prefix) + fmt.Sprintf(`    server {
        listen 127.0.0.1:%[2]d;
        root %[1]s;
        location / {
            add_header Cache-Control "public, max-age=86400, stale-while-revalidate=60, stale-if-error=86400";
        }
    }
}
`, root, port)
}

// nginxHead is the start of the benchmarks' nginx.conf, up to its servers:
// in the foreground, every file it writes under prefix, sendfile on, kept
// connections, JPEG, PNG and JSON types.
func nginxHead(prefix string) string {
	return fmt.Sprintf(`daemon off;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 65;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    types { image/jpeg jpg; image/png png; application/json json; }
    default_type application/octet-stream;
`, prefix)
}

func withReason(t Target, reason string) Target {
	if !t.Met {
		t.Reason = reason
	}
	return t
}

// countGC counts the collections a process logged (GODEBUG=gctrace=1 writes
// one line, "gc N @…", per collection) in its log so far.
func countGC(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("gc ")) {
			n++
		}
	}
	return n
}

// numList is xs with prec decimals, comma-separated.
func numList(xs []float64, prec int) string {
	out := make([]string, len(xs))
	for i, v := range xs {
		out[i] = strconv.FormatFloat(v, 'f', prec, 64)
	}
	return strings.Join(out, ", ")
}
