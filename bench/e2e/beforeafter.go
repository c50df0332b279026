package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/bench/e2e/loadtool"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/admin"
)

// Before and After name the two builds of a before-and-after comparison:
// the product before a change and after it.
const (
	Before = "before"
	After  = "after"
)

// SidesInRound is the order in which the two builds run in round: before
// first in even rounds, after first in odd ones, so that neither always
// runs on a machine the other has just warmed or left busy.
func SidesInRound(round int) [2]string {
	if round%2 == 1 {
		return [2]string{After, Before}
	}
	return [2]string{Before, After}
}

// Sides holds one value of each build per round, in round order.
type Sides struct {
	Before []float64 `json:"before"`
	After  []float64 `json:"after"`
}

// Add appends one round's value of side.
func (s *Sides) Add(side string, v float64) {
	if side == Before {
		s.Before = append(s.Before, v)
	} else {
		s.After = append(s.After, v)
	}
}

// Pair is one measure of both builds over the rounds of a comparison.
type Pair struct {
	What string `json:"what"`
	Unit string `json:"unit"` // of Values: "ns/op", "req/s", "invocations/s"
	Cost bool   `json:"cost"` // Values are a cost (ns/op): lower is faster
	// Control marks a measure of code that is the same in both builds (a
	// floor): its ratios show the comparison's own noise, and it is held
	// to no target.
	Control bool   `json:"control,omitempty"`
	Values  Sides  `json:"values"`
	Allocs  *Sides `json:"allocs,omitempty"` // allocs/op, where the measure is a Go benchmark
	Bytes   *Sides `json:"bytes,omitempty"`  // B/op, likewise
	// CPU is a server's CPU time per request answered (ns), where the
	// measure is a server's req/s: the work behind each answer, which a
	// busy machine slows less than it slows req/s.
	CPU  *Sides `json:"cpu_ns,omitempty"`
	Note string `json:"note,omitempty"`
}

// Ratios is each round's speed after the change over its speed before:
// after ÷ before for a rate, before ÷ after for a cost. A round where a
// side measured nothing (0) has none.
func (p Pair) Ratios() []float64 {
	n := min(len(p.Values.Before), len(p.Values.After))
	rs := make([]float64, 0, n)
	for i := range n {
		b, a := p.Values.Before[i], p.Values.After[i]
		if a == 0 || b == 0 {
			continue
		}
		if p.Cost {
			a, b = b, a
		}
		rs = append(rs, a/b)
	}
	return rs
}

// Ratio is the median of Ratios: the same-round speed ratio, after over
// before.
func (p Pair) Ratio() float64 { return stats.MedianFloat(p.Ratios()) }

// StoragePairParams sizes the before-and-after comparison of section 2's
// tile servers: Storage's tiles, load and memory bound, each build's tile
// server, and the S3 endpoint both read.
type StoragePairParams struct {
	Storage StorageParams     // its Equal and Rounds are not used
	Tiles   map[string]string // Before and After → that build's binary of `go build ./functions/tiles`
	S3Serve string            // the binary of bench/cmd/s3serve
	Rounds  int
}

// StoragePairResult is the comparison of section 2's tile servers.
type StoragePairResult struct {
	Tiles    int      `json:"tiles"`
	Bytes    int64    `json:"bytes"`
	Configs  []string `json:"configs"` // each configuration's environment, as the section names it
	Commands []string `json:"commands"`
	Pairs    []Pair   `json:"pairs"`
}

// pairConfig is one configuration of section 2's tile server in the
// comparison.
type pairConfig struct {
	name, env string
	cfg       tilesConfig
	ab        bool // one URL: a memory hit in this configuration
}

// storagePairConfigs are section 2's tile server configurations, in the
// order each round loads them: memory hits at the default bound and at
// memBudget, and disk hits.
func storagePairConfigs(memBudget int64) []pairConfig {
	return []pairConfig{
		{name: "memory hits, default bound", env: "MEM_CACHE_BYTES unset, DISK_CACHE_BYTES=0", cfg: defaultBoundConfig, ab: true},
		{name: "memory hits, MEM_CACHE_BYTES=" + mib(memBudget), env: "MEM_CACHE_BYTES=" + strconv.FormatInt(memBudget, 10) + ", DISK_CACHE_BYTES=0", cfg: memBoundConfig(memBudget), ab: true},
		{name: "disk hits", env: strings.Join(append([]string{"MEM_CACHE_BYTES=" + diskHitsConfig.mem, "DISK_CACHE_BYTES=" + diskHitsConfig.disk}, diskHitsConfig.extra...), ", "), cfg: diskHitsConfig},
	}
}

// pairServer is one build's tile server in one configuration.
type pairServer struct {
	proc  *Proc
	url   string
	delta admin.HandlerStats // its counters summed over its wrk runs
}

// RunStoragePair serves section 2's tiles from both builds' tile servers in
// each configuration, every process started and warmed first over one
// shared S3 endpoint, then loads them with ab (one URL, memory hits only)
// and wrk (cycling through every tile) in p.Rounds rounds: each round runs
// every configuration and tool once per build, the two builds one right
// after the other, in the order SidesInRound gives.
func RunStoragePair(ctx context.Context, pool tileset.Pool, p StoragePairParams) (StoragePairResult, error) {
	sp := p.Storage
	set := tileset.Build(tileset.XYZ("osm", "jpg", 0, sp.MaxZoom), pool)
	res := StoragePairResult{Tiles: len(set), Bytes: set.Bytes(), Commands: []string{
		fmt.Sprintf("ab -k -n %d -c %d http://127.0.0.1:PORT%s", sp.ABN, sp.ABC, sp.ABPath),
		fmt.Sprintf("wrk -t %d -c %d -d %ds -s <cycle %d paths>.lua http://127.0.0.1:PORT", sp.WrkThread, sp.WrkConns, int(sp.WrkDur.Seconds()), len(set)),
	}}
	tmp, err := TempDir("compare-storage")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	www, logs := filepath.Join(tmp, "www"), filepath.Join(tmp, "logs")
	if err := mkdirs(www, logs); err != nil {
		return res, err
	}
	if err := tileset.WriteDir(www, set); err != nil {
		return res, err
	}
	s3p, err := StartS3Serve(ctx, p.S3Serve, www, logs)
	if err != nil {
		return res, err
	}
	defer s3p.Stop()
	keys := set.Keys()
	paths := make([]string, len(keys))
	for i, k := range keys {
		paths[i] = "/" + k
	}
	configs := storagePairConfigs(sp.fullBudget(set.Bytes()))
	for _, c := range configs {
		res.Configs = append(res.Configs, c.name+": "+c.env)
	}
	servers, err := startPairServers(ctx, configs, p.Tiles, keys, tmp, s3p.URL, logs)
	defer func() {
		for _, s := range servers {
			s.proc.Stop()
		}
	}()
	if err != nil {
		return res, err
	}
	pairs := map[[2]string]*Pair{} // config name, tool
	var order [][2]string
	for round := range max(1, p.Rounds) {
		for _, c := range configs {
			tools := []string{"wrk"}
			if c.ab {
				tools = []string{"ab", "wrk"}
			}
			for _, tool := range tools {
				k := [2]string{c.name, tool}
				if pairs[k] == nil {
					pairs[k] = &Pair{What: c.name + ", " + tool, Unit: "req/s", CPU: &Sides{}}
					order = append(order, k)
				}
				for _, side := range SidesInRound(round) {
					run, err := servers[[2]string{c.name, side}].load(ctx, tool, sp, paths, tmp)
					if err != nil {
						return res, fmt.Errorf("%s, %s, %s: %w", side, c.name, tool, err)
					}
					pairs[k].Values.Add(side, run.rps)
					pairs[k].CPU.Add(side, run.cpu)
					if run.problem != "" {
						pairs[k].Note = joinNote(pairs[k].Note, fmt.Sprintf("%s in round %d: %s", side, round+1, run.problem))
					}
				}
			}
		}
	}
	for _, k := range order {
		pr := pairs[k]
		if k[1] == "wrk" {
			pr.Note = joinNote(pr.Note, "during wrk: "+tierShare(Before, servers[[2]string{k[0], Before}].delta)+"; "+tierShare(After, servers[[2]string{k[0], After}].delta))
		}
		res.Pairs = append(res.Pairs, *pr)
	}
	return res, nil
}

// startPairServers starts each build's tile server (bins, by side) in each
// configuration, and warms each with one pass over every tile, as section
// 2 does. The servers started are returned with any error, for the caller
// to stop.
func startPairServers(ctx context.Context, configs []pairConfig, bins map[string]string, keys []string, tmp, s3URL, logs string) (map[[2]string]*pairServer, error) {
	servers := map[[2]string]*pairServer{} // config name, side
	client := HTTPClient()
	for _, c := range configs {
		for _, side := range SidesInRound(0) {
			s, err := startPairServer(ctx, bins[side], c, side, tmp, s3URL, logs)
			if err != nil {
				return servers, fmt.Errorf("%s, %s: %w", side, c.name, err)
			}
			servers[[2]string{c.name, side}] = s
			w := workload.Workload{Phases: []workload.Phase{{Keys: keys, Concurrency: 8}}}
			if r := workload.Run(ctx, w, workload.HTTPFetcher(client, s.url)); r.Errors > 0 {
				return servers, fmt.Errorf("%s, %s: warm-up: %d errors, first: %s", side, c.name, r.Errors, r.FirstErr)
			}
			client.CloseIdleConnections()
		}
	}
	return servers, nil
}

// startPairServer starts bin in configuration c on a free loopback port.
func startPairServer(ctx context.Context, bin string, c pairConfig, side, tmp, s3URL, logs string) (*pairServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	proc, err := StartProc(ctx, side+"-"+strconv.Itoa(port), c.cfg.command(bin, tmp, s3URL, port), url, healthPath, logs)
	if err != nil {
		return nil, err
	}
	return &pairServer{proc: proc, url: url}, nil
}

// loadRun is what one load of a server measured.
type loadRun struct {
	rps float64
	cpu float64 // the server's CPU time per request answered, ns
	// problem says, when any answer failed or was not 2xx, how many.
	problem string
}

// load runs tool once against s. A wrk run adds the server's tier
// counters over the run to s.delta.
func (s *pairServer) load(ctx context.Context, tool string, p StorageParams, paths []string, tmp string) (loadRun, error) {
	var run loadRun
	cpu0, err := ProcessCPU(s.proc.Cmd.Process.Pid)
	if err != nil {
		return run, err
	}
	var n int
	if tool == "ab" {
		r, err := loadtool.RunAB(ctx, s.url+p.ABPath, p.ABN, p.ABC, tmp)
		if err != nil {
			return run, err
		}
		if e := r.Failed + r.Non2xx; e > 0 {
			run.problem = fmt.Sprintf("%d failed or non-2xx answers", e)
		}
		run.rps, n = r.RPS, r.Complete
	} else {
		before, err := tilesStats(s.url)
		if err != nil {
			return run, err
		}
		r, err := loadtool.RunWrk(ctx, s.url, paths, p.WrkDur, p.WrkConns, p.WrkThread, tmp)
		if err != nil {
			return run, err
		}
		if r.Non2xx > 0 {
			run.problem = fmt.Sprintf("%d non-2xx answers", r.Non2xx)
		}
		if r.SocketErrors != "" {
			run.problem = joinNote(run.problem, "socket errors: "+r.SocketErrors)
		}
		run.rps, n = r.RPS, r.Requests
		if err := s.addTiers(before); err != nil {
			return run, err
		}
	}
	cpu1, err := ProcessCPU(s.proc.Cmd.Process.Pid)
	if err != nil {
		return run, err
	}
	run.cpu = float64((cpu1 - cpu0).Nanoseconds()) / float64(max(n, 1))
	return run, nil
}

// addTiers adds the server's tier counters since before to s.delta.
func (s *pairServer) addTiers(before admin.Stats) error {
	after, err := tilesStats(s.url)
	if err != nil {
		return err
	}
	a, b := after.Handler, before.Handler
	s.delta.Requests += a.Requests - b.Requests
	s.delta.MemoryHits += a.MemoryHits - b.MemoryHits
	s.delta.DiskHits += a.DiskHits - b.DiskHits
	s.delta.Misses += a.Misses - b.Misses
	return nil
}

// tierShare names the share of side's answers each tier gave.
func tierShare(side string, d admin.HandlerStats) string {
	return fmt.Sprintf("%s %.1f%% memory hits, %.1f%% disk hits, %.1f%% S3", side,
		pct(d.MemoryHits, d.Requests), pct(d.DiskHits, d.Requests), pct(d.Misses, d.Requests))
}
