package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/lambdarie"
	"github.com/tilesieve/tilesieve/bench/internal/sysinfo"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/testkit/tilegen"
)

// EmuSizes are the tiles measured under the emulator.
var EmuSizes = []int{30 << 10, 300 << 10}

// Functions under the emulator, the one measured first.
var Functions = []string{"tilesieve", "floor"}

// EmuTile is one function × tile of one round.
type EmuTile struct {
	Size         string        `json:"size"`
	Invokes      int           `json:"invokes"`
	Elapsed      time.Duration `json:"elapsed"`
	PerSec       float64       `json:"per_sec"`
	PayloadBytes int           `json:"payload_bytes"`
}

// EmuRun is one function's process in one round.
type EmuRun struct {
	Function  string        `json:"function"`
	Round     int           `json:"round"`
	ColdStart time.Duration `json:"cold_start"` // emulator process start → first answer
	Tiles     []EmuTile     `json:"tiles"`
	// Latency is the memory hits' latency with S3 answering after
	// EmuS3Latency (the journal checks run at that latency).
	Latency *EmuLatency `json:"latency,omitempty"`
}

// EmuS3Latency is S3's first-byte latency while EmuLatency is measured.
const EmuS3Latency = 20 * time.Millisecond

// EmuLatencySize is the tile of the latency part.
const EmuLatencySize = 30 << 10

// EmuLatency is the latency of sequential memory hits, each timed alone.
type EmuLatency struct {
	Invokes int           `json:"invokes"`
	Elapsed time.Duration `json:"elapsed"`
	P50     time.Duration `json:"p50"`
	P99     time.Duration `json:"p99"`
	P999    time.Duration `json:"p999"`
	Max     time.Duration `json:"max"`
	// Slow counts the invocations that took EmuS3Latency or more: as long
	// as one S3 request, so possibly waiting for one.
	Slow int `json:"slow"`
	// MemoryDurMax is the largest Server-Timing memory;dur the function
	// reported (the tier lookup with any wait for the journal check); 0 for
	// the floor, which reports none.
	MemoryDurMax time.Duration `json:"memory_dur_max"`
}

// EmuSummary is one tile over the rounds.
type EmuSummary struct {
	Size         string    `json:"size"`
	Tilesieve    float64   `json:"tilesieve_per_sec"` // median over rounds
	Floor        float64   `json:"floor_per_sec"`
	Ratio        float64   `json:"ratio"`        // of the medians
	RoundRatios  []float64 `json:"round_ratios"` // tilesieve / floor in each round
	TSPayload    int       `json:"tilesieve_payload_bytes"`
	FloorPayload int       `json:"floor_payload_bytes"`
}

// EmulatorResult is the emulator part.
type EmulatorResult struct {
	Date       time.Time                `json:"date"`
	Rounds     int                      `json:"rounds"`
	MaxInvokes int                      `json:"max_invokes"`
	MaxTime    time.Duration            `json:"max_time"`
	LatTime    time.Duration            `json:"latency_time"` // of the latency part, per function and round
	Build      string                   `json:"build"`
	Runs       []EmuRun                 `json:"runs"`
	Summary    []EmuSummary             `json:"summary"`
	ColdStart  map[string]time.Duration `json:"cold_start"` // median over rounds
	// ColdPairs are the cold starts timed alone after the rounds.
	ColdPairs []ColdPair `json:"cold_pairs,omitempty"`
	// ColdRatios are tilesieve's cold start over the floor's in each round
	// and each cold pair (the two started one after the other); ColdRatio is
	// their median.
	ColdRatios []float64 `json:"cold_ratios"`
	ColdRatio  float64   `json:"cold_ratio"`
	// Bootstrap is each function's bootstrap size in bytes, as built here;
	// Arm64 the product's bootstraps as `make build` builds them (linux/arm64),
	// and Budgets their budgets in .ci/size-budget.
	Bootstrap map[string]int64 `json:"bootstrap_bytes"`
	Arm64     map[string]int64 `json:"arm64_bytes,omitempty"`
	Budgets   map[string]int64 `json:"budgets,omitempty"`
	// DiskRuns are the tile function's disk hits in each mode and round,
	// and DiskSummary their medians.
	DiskRuns    []EmuRun      `json:"disk_runs,omitempty"`
	DiskSummary []DiskSummary `json:"disk_summary,omitempty"`
	// HealthRuns are the cold starts to the first /_tilesieve/health answer
	// against the minimal bootstrap (bench/cmd/minlambda), and Inits the tile
	// function's package initialisers, largest first.
	HealthRuns []HealthRun `json:"health_runs,omitempty"`
	Inits      []InitPkg   `json:"inits,omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg's averages as the part
	// began and ended: the machine is shared.
	LoadBefore string       `json:"load_before,omitempty"`
	LoadAfter  string       `json:"load_after,omitempty"`
	Targets    []e2e.Target `json:"targets"`
}

func sizeName(n int) string { return strconv.Itoa(n>>10) + "KB" }

func tileKey(n int) string { return "bench/" + sizeName(n) + ".png" }

// RunEmulator runs both bootstraps under aws-lambda-rie in o.rounds rounds.
func RunEmulator(ctx context.Context, root string, o options) (EmulatorResult, error) {
	res := EmulatorResult{Rounds: o.rounds, MaxInvokes: o.invokes, MaxTime: o.perRun, LatTime: o.latTime, ColdStart: map[string]time.Duration{},
		Build: lambdarie.BuildCommand(), Bootstrap: map[string]int64{}}
	res.LoadBefore = sysinfo.LoadAvg()
	rie, err := exec.LookPath("aws-lambda-rie")
	if err != nil {
		return res, errors.New("aws-lambda-rie not on PATH: run make tools")
	}
	tmp, err := os.MkdirTemp("", "invokebench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	bins := map[string]string{"tilesieve": filepath.Join(tmp, "tiles", "bootstrap"), "floor": filepath.Join(tmp, "floor", "bootstrap"),
		"minimal": filepath.Join(tmp, "minimal", "bootstrap"), "required": filepath.Join(tmp, "required", "bootstrap")}
	logf("building the bootstraps")
	if err := lambdarie.Build(ctx, root, bins["tilesieve"], "./functions/tiles"); err != nil {
		return res, err
	}
	if err := lambdarie.Build(ctx, filepath.Join(root, "bench"), bins["floor"], "./cmd/floorlambda"); err != nil {
		return res, err
	}
	if err := lambdarie.Build(ctx, filepath.Join(root, "bench"), bins["minimal"], "./cmd/minlambda"); err != nil {
		return res, err
	}
	if err := lambdarie.Build(ctx, filepath.Join(root, "bench"), bins["required"], "./cmd/reqlambda"); err != nil {
		return res, err
	}
	if res.Arm64, res.Budgets, err = productSizes(root, tmp); err != nil {
		return res, err
	}
	for fn, bin := range bins {
		fi, err := os.Stat(bin)
		if err != nil {
			return res, err
		}
		res.Bootstrap[fn] = fi.Size()
	}

	// S3 in this process, on loopback; the floor reads the same bytes from a
	// directory.
	s3srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles"}})
	if err != nil {
		return res, err
	}
	s3URL, stopS3, err := e2e.Serve(s3srv.Handler())
	if err != nil {
		return res, err
	}
	defer stopS3()
	floorDir := filepath.Join(tmp, "floor-tiles")
	for _, n := range EmuSizes {
		body := tilegen.Incompressible(n)
		if _, err := s3local.Put(ctx, s3srv.Client(s3URL), "tiles", tileKey(n), body, "image/png", ""); err != nil {
			return res, err
		}
		p := filepath.Join(floorDir, tileKey(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return res, err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return res, err
		}
	}
	template, err := os.ReadFile(filepath.Join(root, "events", "url-get-tile.json"))
	if err != nil {
		return res, err
	}
	evs := map[int][]byte{}
	for _, n := range EmuSizes {
		if evs[n], err = lambdarie.WithPath(template, "/"+tileKey(n)); err != nil {
			return res, err
		}
	}

	// fnEnv is the environment of fn's bootstrap; the tile function's disk
	// tier is in a directory of its own, named disk, under tmp.
	fnEnv := func(fn, disk string) []string {
		if fn != "tilesieve" {
			return []string{"FLOOR_TILES_DIR=" + floorDir}
		}
		return append(e2e.S3Env(s3URL), "TILES_BUCKET=tiles", "TILES_PREFIX=",
			"DISK_CACHE_DIR="+filepath.Join(tmp, disk), "DISK_CACHE_BYTES=64MiB")
	}
	diskEv, err := lambdarie.WithPath(template, "/"+tileKey(EmuDiskSize))
	if err != nil {
		return res, err
	}
	for round := range o.rounds {
		order := slices.Clone(Functions)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, fn := range order {
			env := fnEnv(fn, fmt.Sprintf("disk-%d", round))
			logf("emulator round %d/%d: %s", round+1, o.rounds, fn)
			run, err := runFunction(ctx, rie, bins[fn], env, filepath.Join(tmp, fmt.Sprintf("%s-%d.log", fn, round)), evs, o, s3srv.Faults().SetLatency)
			if err != nil {
				return res, fmt.Errorf("%s, round %d: %w", fn, round+1, err)
			}
			run.Function, run.Round = fn, round+1
			for _, t := range run.Tiles {
				logf("  %s %s: %d invocations in %s, %.0f/s, payload %d bytes", fn, t.Size, t.Invokes, t.Elapsed.Round(time.Millisecond), t.PerSec, t.PayloadBytes)
			}
			logf("  %s cold start %s", fn, run.ColdStart.Round(100*time.Microsecond))
			if l := run.Latency; l != nil {
				logf("  %s memory hits with S3 at %v: %d, p50 %s, p99 %s, max %s, %d ≥ %v, largest memory;dur %s", fn, EmuS3Latency, l.Invokes, l.P50, l.P99, l.Max, l.Slow, EmuS3Latency, l.MemoryDurMax)
			}
			res.Runs = append(res.Runs, run)
		}
		// Disk hits, in each mode, over a memory tier whose entry limit
		// (128 KiB) is below the tile.
		for _, mode := range DiskModes {
			fn := diskFunction(mode)
			env := append(fnEnv("tilesieve", fmt.Sprintf("disk-%s-%d", mode, round)), "MEM_CACHE_BYTES=1MiB", "INVOKE_MODE="+mode)
			run, err := runDisk(ctx, rie, bins["tilesieve"], env, filepath.Join(tmp, fmt.Sprintf("disk-%s-%d.log", mode, round)), diskEv, o)
			if err != nil {
				return res, fmt.Errorf("%s, round %d: %w", fn, round+1, err)
			}
			run.Function, run.Round = fn, round+1
			logf("  %s: %d invocations in %s, %.0f/s", fn, run.Tiles[0].Invokes, run.Tiles[0].Elapsed.Round(time.Millisecond), run.Tiles[0].PerSec)
			res.DiskRuns = append(res.DiskRuns, run)
		}
	}
	// Cold starts alone, in pairs started one after the other (the order
	// alternating): each costs tens of milliseconds, so many more of them
	// than the rounds' steady the median ratio on a shared machine.
	first := evs[EmuSizes[0]]
	for pair := range o.coldPairs {
		order := slices.Clone(Functions)
		if pair%2 == 1 {
			slices.Reverse(order)
		}
		var p ColdPair
		for _, fn := range order {
			env := fnEnv(fn, fmt.Sprintf("cold-disk-%d", pair))
			emu, cold, err := lambdarie.Start(ctx, rie, bins[fn], env, filepath.Join(tmp, fmt.Sprintf("%s-cold-%d.log", fn, pair)), first)
			if err != nil {
				return res, fmt.Errorf("%s, cold pair %d: %w", fn, pair+1, err)
			}
			emu.Stop()
			if fn == "tilesieve" {
				p.Tilesieve = cold
			} else {
				p.Floor = cold
			}
		}
		res.ColdPairs = append(res.ColdPairs, p)
	}
	logf("  %d more paired cold starts", len(res.ColdPairs))
	health, err := os.ReadFile(filepath.Join(root, "events", "url-health.json"))
	if err != nil {
		return res, err
	}
	tilesEnv := func(disk string) []string { return fnEnv("tilesieve", disk) }
	if res.HealthRuns, res.Inits, err = runHealth(ctx, rie, healthBins{bins["tilesieve"], bins["minimal"], bins["required"]}, tilesEnv, health, tmp, o); err != nil {
		return res, err
	}
	res.LoadAfter = sysinfo.LoadAvg()
	res.summarize()
	return res, nil
}

// ColdPair is one paired cold start outside the rounds.
type ColdPair struct {
	Tilesieve time.Duration `json:"tilesieve"`
	Floor     time.Duration `json:"floor"`
}

// runFunction starts the emulator over bootstrap, times the first answer,
// then times sequential invocations of each tile after one warming one.
func runFunction(ctx context.Context, rie, bootstrap string, env []string, logPath string, evs map[int][]byte, o options, setLatency func(time.Duration)) (EmuRun, error) {
	var run EmuRun
	emu, cold, err := lambdarie.Start(ctx, rie, bootstrap, env, logPath, evs[EmuSizes[0]])
	if err != nil {
		return run, err
	}
	defer emu.Stop()
	run.ColdStart = cold
	for _, n := range EmuSizes {
		h, err := emu.TimeHits(ctx, evs[n], n, o.invokes, o.perRun)
		if err != nil {
			return run, fmt.Errorf("%s: %w", sizeName(n), err)
		}
		run.Tiles = append(run.Tiles, EmuTile{Size: sizeName(n), Invokes: h.Invokes, Elapsed: h.Elapsed, PerSec: h.PerSec, PayloadBytes: h.PayloadBytes})
	}
	if o.latTime > 0 {
		setLatency(EmuS3Latency)
		defer setLatency(0)
		l, err := measureLatency(ctx, emu, evs[EmuLatencySize], EmuLatencySize, o)
		if err != nil {
			return run, emu.WithLog(err)
		}
		run.Latency = &l
	}
	return run, nil
}

// measureLatency times sequential memory hits of the n-byte tile one by
// one, for o.latTime or o.invokes of them, whichever ends first.
func measureLatency(ctx context.Context, c *lambdarie.Emulator, ev []byte, n int, o options) (EmuLatency, error) {
	var l EmuLatency
	var lats []time.Duration
	t0 := time.Now()
	for len(lats) < o.invokes && time.Since(t0) < o.latTime {
		s := time.Now()
		p, err := c.Invoke(ctx, ev)
		d := time.Since(s)
		if err != nil {
			return l, err
		}
		if err := lambdarie.CheckMemoryHit(p, n); err != nil {
			return l, err
		}
		lats = append(lats, d)
		l.MemoryDurMax = max(l.MemoryDurMax, memoryDur(p))
	}
	l.Elapsed = time.Since(t0)
	l.Invokes = len(lats)
	slices.Sort(lats)
	q := func(f float64) time.Duration { return lats[min(len(lats)-1, int(f*float64(len(lats))))] }
	l.P50, l.P99, l.P999, l.Max = q(0.5), q(0.99), q(0.999), lats[len(lats)-1]
	for _, d := range lats {
		if d >= EmuS3Latency {
			l.Slow++
		}
	}
	return l, nil
}

// memoryDur is the memory;dur of the payload's Server-Timing header (its
// milliseconds), 0 when it has none.
func memoryDur(payload []byte) time.Duration {
	const mark = "memory;dur="
	i := bytes.Index(payload, []byte(mark))
	if i < 0 {
		return 0
	}
	rest := payload[i+len(mark):]
	j := bytes.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if j < 0 {
		j = len(rest)
	}
	ms, err := strconv.ParseFloat(string(rest[:j]), 64)
	if err != nil {
		return 0
	}
	return time.Duration(ms * float64(time.Millisecond))
}

func (r *EmulatorResult) summarize() {
	r.Summary = nil
	r.Targets = nil
	for _, n := range EmuSizes {
		s := EmuSummary{Size: sizeName(n)}
		per := map[string][]float64{}
		byRound := map[int]map[string]float64{}
		for _, run := range r.Runs {
			for _, t := range run.Tiles {
				if t.Size != s.Size {
					continue
				}
				per[run.Function] = append(per[run.Function], t.PerSec)
				if byRound[run.Round] == nil {
					byRound[run.Round] = map[string]float64{}
				}
				byRound[run.Round][run.Function] = t.PerSec
				if run.Function == "tilesieve" {
					s.TSPayload = t.PayloadBytes
				} else {
					s.FloorPayload = t.PayloadBytes
				}
			}
		}
		s.Tilesieve, s.Floor = median(per["tilesieve"]), median(per["floor"])
		if s.Floor > 0 {
			s.Ratio = s.Tilesieve / s.Floor
		}
		for round := 1; round <= r.Rounds; round++ {
			if f := byRound[round]["floor"]; f > 0 {
				s.RoundRatios = append(s.RoundRatios, byRound[round]["tilesieve"]/f)
			}
		}
		r.Summary = append(r.Summary, s)
		r.Targets = append(r.Targets, e2e.Target{What: "under the emulator, " + s.Size + " memory hit: invocations/s vs the encode-once floor bootstrap", Want: 0.95, Got: s.Ratio, Unit: "x", Higher: true}.Check())
	}
	for _, fn := range Functions {
		var cs []float64
		for _, run := range r.Runs {
			if run.Function == fn {
				cs = append(cs, float64(run.ColdStart))
			}
		}
		r.ColdStart[fn] = time.Duration(median(cs))
	}
	// Paired by round: the two processes started one after the other, so a
	// round's ratio cancels most of the shared machine's drift.
	r.ColdRatios = nil
	for round := 1; round <= r.Rounds; round++ {
		var ts, fl time.Duration
		for _, run := range r.Runs {
			if run.Round != round {
				continue
			}
			if run.Function == "tilesieve" {
				ts = run.ColdStart
			} else {
				fl = run.ColdStart
			}
		}
		if ts > 0 && fl > 0 {
			r.ColdRatios = append(r.ColdRatios, float64(ts)/float64(fl))
		}
	}
	for _, p := range r.ColdPairs {
		if p.Tilesieve > 0 && p.Floor > 0 {
			r.ColdRatios = append(r.ColdRatios, float64(p.Tilesieve)/float64(p.Floor))
		}
	}
	r.ColdRatio = median(r.ColdRatios)
	if ls := r.latencies("tilesieve"); len(ls) > 0 {
		var p50, p99, dur []float64
		for _, l := range ls {
			p50 = append(p50, float64(l.P50))
			p99 = append(p99, float64(l.P99))
			dur = append(dur, float64(l.MemoryDurMax))
		}
		spread := e2e.Target{What: fmt.Sprintf("under the emulator, %s memory hits with S3 at %v: p99 vs p50 (medians over the rounds)", sizeName(EmuLatencySize), EmuS3Latency),
			Want: 1.5, Got: median(p99) / median(p50), Unit: "x"}.Check()
		var floorP50, floorP99 []float64
		for _, l := range r.latencies("floor") {
			floorP50 = append(floorP50, float64(l.P50))
			floorP99 = append(floorP99, float64(l.P99))
		}
		if !spread.Met && len(floorP99) > 0 {
			spread.Reason = fmt.Sprintf("the floor, which reads no journal, shows %.2fx in the same rounds: the emulator's and the machine's spread; see the next row", median(floorP99)/median(floorP50))
		}
		r.Targets = append(r.Targets, spread)
		if ratios := r.sameRound(func(l EmuLatency) float64 { return float64(l.P99) }); len(ratios) > 0 {
			r.Targets = append(r.Targets, e2e.Target{What: fmt.Sprintf("under the emulator, %s memory hits with S3 at %v: p99 vs the floor's p99 (median of the rounds' ratios; the journal check adds no tail of its own)", sizeName(EmuLatencySize), EmuS3Latency),
				Want: 1.1, Got: median(ratios), Unit: "x", Reason: "rounds " + ratioList(ratios)}.Check())
		}
		r.Targets = append(r.Targets,
			e2e.Target{What: fmt.Sprintf("under the emulator, %s memory hits with S3 at %v: largest Server-Timing memory;dur (no hit waits for the journal check)", sizeName(EmuLatencySize), EmuS3Latency),
				Want: float64(EmuS3Latency) / 1e6, Got: slices.Max(dur) / 1e6, Unit: "ms"}.Check())
	}
	r.Targets = append(r.Targets, e2e.Target{What: fmt.Sprintf("under the emulator, cold start vs the floor bootstrap (median of %d paired starts' ratios)", len(r.ColdRatios)),
		Want: 1.1, Got: r.ColdRatio, Unit: "x"}.Check())
	r.summarizeDisk()
	r.Targets = append(r.Targets, healthTargets(r.HealthRuns)...)
}

// productSizes builds the product's bootstraps as `make build` does
// (linux/arm64) and reads their budgets from .ci/size-budget.
func productSizes(root, tmp string) (sizes, budgets map[string]int64, err error) {
	sizes, budgets = map[string]int64{}, map[string]int64{}
	for name, pkg := range map[string]string{"tiles": "./functions/tiles", "worker": "./worker"} {
		out := filepath.Join(tmp, "arm64", name, "bootstrap")
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc,envcreds", "-ldflags=-s -w", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("build %s for arm64: %w\n%s", pkg, err, b)
		}
		fi, err := os.Stat(out)
		if err != nil {
			return nil, nil, err
		}
		sizes[name] = fi.Size()
	}
	b, err := os.ReadFile(filepath.Join(root, ".ci", "size-budget"))
	if err != nil {
		return sizes, budgets, nil // a checkout without the budgets: sizes alone
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && !strings.HasPrefix(l, "#") {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				budgets[f[0]] = n
			}
		}
	}
	return sizes, budgets, nil
}

// sameRound is, for each round where both functions measured latency,
// tilesieve's value of v over the floor's.
func (r *EmulatorResult) sameRound(v func(EmuLatency) float64) []float64 {
	byRound := map[int]map[string]float64{}
	var rounds []int
	for _, run := range r.Runs {
		if run.Latency == nil {
			continue
		}
		if byRound[run.Round] == nil {
			byRound[run.Round] = map[string]float64{}
			rounds = append(rounds, run.Round)
		}
		byRound[run.Round][run.Function] = v(*run.Latency)
	}
	slices.Sort(rounds)
	var out []float64
	for _, round := range rounds {
		if ts, fl := byRound[round]["tilesieve"], byRound[round]["floor"]; ts > 0 && fl > 0 {
			out = append(out, ts/fl)
		}
	}
	return out
}

// latencies are fn's latency parts, by round.
func (r *EmulatorResult) latencies(fn string) []EmuLatency {
	var out []EmuLatency
	for _, run := range r.Runs {
		if run.Function == fn && run.Latency != nil {
			out = append(out, *run.Latency)
		}
	}
	return out
}
