package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/docsection"
	"github.com/tilesieve/tilesieve/bench/e2e"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

// Sizes are the tile sizes of BenchmarkInvoke*, as its sub-benchmarks name them.
var Sizes = []string{"1KB", "30KB", "300KB"}

// Modes are the benchmarks of the micro part, by what they measure.
var Modes = []struct{ Bench, What string }{
	{"InvokeBuffered", "buffered, memory hit"},
	{"InvokeBufferedFloor", "buffered floor"},
	{"InvokeStreaming", "streaming, memory hit"},
	{"InvokeStreamingFloor", "streaming floor"},
	{"InvokeBufferedDisk", "buffered, disk hit"},
	{"InvokeStreamingDisk", "streaming, disk hit"},
	{"InvokeBufferedOrigin", "buffered, origin fetch"},
	{"InvokeBufferedMetrics", "buffered, memory hit, metrics on"},
}

// Sample is the median of one benchmark's rounds.
type Sample struct {
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	Runs        int     `json:"runs"`
}

// MicroResult is the in-process part.
type MicroResult struct {
	Command string                        `json:"command"`
	Date    time.Time                     `json:"date"`
	Rounds  int                           `json:"rounds"`
	Samples map[string]map[string]Sample  `json:"samples"` // bench → size → median
	Ratios  map[string]map[string]float64 `json:"ratios"`  // bench → size → median of the rounds' ratios to its floor
	Metrics map[string][]float64          `json:"metrics"` // size → the rounds' on/off ratios of BenchmarkInvokeMetricsPaired
	Targets []e2e.Target                  `json:"targets"`
}

// MicroArgs is the go test command the micro part amounts to.
func MicroArgs(benchtime string) []string {
	return []string{"test", "-run", "^$", "-bench", "^BenchmarkInvoke", "-benchmem", "-count", "1", "-benchtime", benchtime, "./functions/tiles/"}
}

// pairs are run one after the other, in an order that alternates from round
// to round; each pair's ratio is taken within a round, where the two ran
// seconds apart, so a noisy spell on a shared machine falls on both.
var pairs = [][2]string{{"InvokeBuffered", "InvokeBufferedFloor"}, {"InvokeStreaming", "InvokeStreamingFloor"}, {"InvokeBufferedDisk", "InvokeBufferedOrigin"},
	{"InvokeBufferedMetrics", "InvokeBuffered"}, {"InvokeStreamingDisk", "InvokeStreamingFloor"}}

// ratioPairs are the pairs whose ratio is a result: a memory hit to its
// floor, and metrics on to metrics off.
var ratioPairs = [][2]string{pairs[0], pairs[1], pairs[3]}

// paired is the benchmark that runs metrics off and on in one process,
// invocation by invocation, and reports their ratio (on/off): the ratio of
// the metrics pair is its median over the rounds, not the ratio of two
// processes' runs.
const paired = "InvokeMetricsPaired"

// RunMicro builds the product's test binary once (go test -c) and runs each
// invocation benchmark at each size o.count times, one benchmark a process,
// each beside its floor; the cells are the medians of the rounds and the
// ratios the medians of the rounds' ratios.
func RunMicro(ctx context.Context, root string, o options) (MicroResult, error) {
	var raw []byte
	if o.input != "" {
		b, err := os.ReadFile(o.input)
		if err != nil {
			return MicroResult{}, err
		}
		raw = b
	} else {
		tmp, err := os.MkdirTemp("", "invokebench-")
		if err != nil {
			return MicroResult{}, err
		}
		defer os.RemoveAll(tmp)
		bin := filepath.Join(tmp, "tiles.test")
		logf("building the product's test binary")
		build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./functions/tiles/")
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			return MicroResult{}, fmt.Errorf("go test -c: %w\n%s", err, b)
		}
		for round := range o.count {
			logf("micro round %d/%d", round+1, o.count)
			for _, size := range Sizes {
				for _, pr := range pairs {
					order := pr[:]
					if round%2 == 1 {
						order = []string{pr[1], pr[0]}
					}
					if pr[0] == "InvokeBufferedMetrics" {
						order = append(order, paired)
					}
					for _, bench := range order {
						cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", "^Benchmark"+bench+"$/^"+size+"$",
							"-test.benchmem", "-test.count", "1", "-test.benchtime", o.benchtime)
						cmd.Dir = filepath.Join(root, "functions", "tiles")
						cmd.Stderr = os.Stderr
						out, err := cmd.Output()
						if err != nil {
							return MicroResult{}, fmt.Errorf("run Benchmark%s/%s: %w\n%s", bench, size, err, out)
						}
						raw = append(raw, fmt.Sprintf("round %d\n", round+1)...)
						raw = append(raw, out...)
					}
				}
			}
		}
		if err := os.MkdirAll(o.results, 0o755); err == nil {
			os.WriteFile(filepath.Join(o.results, "invoke-micro.txt"), raw, 0o644)
		}
	}
	rounds, err := ParseRounds(bytes.NewReader(raw))
	if err != nil {
		return MicroResult{}, err
	}
	r := MicroResult{Command: "go " + docsection.Command(MicroArgs(o.benchtime)), Rounds: len(rounds), Samples: map[string]map[string]Sample{},
		Ratios: map[string]map[string]float64{}, Metrics: map[string][]float64{}}
	for _, m := range Modes {
		r.Samples[m.Bench] = map[string]Sample{}
		for _, size := range Sizes {
			var ns, allocs, bs []float64
			for _, rd := range rounds {
				u := rd[m.Bench+"/"+size]
				if len(u["ns/op"]) == 0 {
					continue
				}
				ns, allocs, bs = append(ns, u["ns/op"]...), append(allocs, u["allocs/op"]...), append(bs, u["B/op"]...)
			}
			if len(ns) == 0 {
				return r, fmt.Errorf("no results for Benchmark%s/%s", m.Bench, size)
			}
			r.Samples[m.Bench][size] = Sample{NsPerOp: median(ns), AllocsPerOp: median(allocs), BytesPerOp: median(bs), Runs: len(ns)}
		}
	}
	for _, pr := range ratioPairs {
		r.Ratios[pr[0]] = map[string]float64{}
		for _, size := range Sizes {
			var rs []float64
			for _, rd := range rounds {
				if pr[0] == "InvokeBufferedMetrics" {
					rs = append(rs, rd[paired+"/"+size]["on/off"]...)
					r.Metrics[size] = rs
					continue
				}
				a, b := rd[pr[0]+"/"+size]["ns/op"], rd[pr[1]+"/"+size]["ns/op"]
				if len(a) > 0 && len(b) > 0 && b[0] > 0 {
					rs = append(rs, a[0]/b[0])
				}
			}
			r.Ratios[pr[0]][size] = median(rs)
		}
	}
	r.Targets = r.targets()
	return r, nil
}

// ParseRounds parses output whose parts are headed by "round N" lines into
// one result per round, in round order; output with no such line is one
// round.
func ParseRounds(rd io.Reader) ([]map[string]map[string][]float64, error) {
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	byRound := map[int]*strings.Builder{}
	var order []int
	cur := 0
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "round "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				cur = v
				continue
			}
		}
		if byRound[cur] == nil {
			byRound[cur] = &strings.Builder{}
			order = append(order, cur)
		}
		byRound[cur].WriteString(line)
	}
	slices.Sort(order)
	var out []map[string]map[string][]float64
	for _, n := range order {
		m, err := ParseBench(strings.NewReader(byRound[n].String()))
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
	return out, nil
}

// Ratio is bench's ns/op over floor's at size: the median of the rounds'
// ratios where the two ran as a pair, else the ratio of the medians.
func (r MicroResult) Ratio(bench, floor, size string) float64 {
	if v, ok := r.Ratios[bench][size]; ok && pairOf(bench) == floor {
		return v
	}
	f := r.Samples[floor][size].NsPerOp
	if f == 0 {
		return 0
	}
	return r.Samples[bench][size].NsPerOp / f
}

func (r MicroResult) targets() []e2e.Target {
	var ts []e2e.Target
	for _, size := range Sizes {
		ts = append(ts, e2e.Target{What: "buffered memory hit " + size + ": ns/op vs floor", Want: 1.5, Got: r.Ratio("InvokeBuffered", "InvokeBufferedFloor", size), Unit: "x"}.Check())
	}
	for _, size := range Sizes {
		ts = append(ts, e2e.Target{What: "streaming memory hit " + size + ": ns/op vs floor", Want: 1.5, Got: r.Ratio("InvokeStreaming", "InvokeStreamingFloor", size), Unit: "x"}.Check())
	}
	var whole, added float64
	for _, size := range Sizes {
		b, f := r.Samples["InvokeBuffered"][size], r.Samples["InvokeBufferedFloor"][size]
		whole = max(whole, b.AllocsPerOp)
		added = max(added, b.AllocsPerOp-f.AllocsPerOp)
	}
	minFloor := r.Samples["InvokeBufferedFloor"][Sizes[0]].AllocsPerOp
	for _, size := range Sizes {
		minFloor = min(minFloor, r.Samples["InvokeBufferedFloor"][size].AllocsPerOp)
	}
	for _, size := range Sizes {
		ts = append(ts, e2e.Target{What: "buffered memory hit " + size + ": metrics on vs off (ns/op)", Want: 1.05,
			Got: r.Ratio("InvokeBufferedMetrics", "InvokeBuffered", size), Unit: "x"}.Check())
	}
	ts = append(ts,
		e2e.Target{What: "buffered memory hit: allocs/op of the whole invocation (largest over sizes)", Want: 10, Got: whole, Unit: "allocs",
			Reason: fmt.Sprintf("aws-lambda-go's event decoding and payload handling alone cost the floor %.0f or more", minFloor)}.Check(),
		e2e.Target{What: "buffered memory hit: allocs/op tilesieve adds to the floor's (largest over sizes)", Want: 10, Got: added, Unit: "allocs"}.Check())
	return ts
}

// ParseBench reads go test -bench output into name (without the -procs
// suffix) → unit → samples.
func ParseBench(r io.Reader) (map[string]map[string][]float64, error) {
	lines, err := stats.ParseBench(r)
	if err != nil {
		return nil, err
	}
	res := map[string]map[string][]float64{}
	for _, l := range lines {
		if res[l.Name] == nil {
			res[l.Name] = map[string][]float64{}
		}
		for unit, v := range l.Values {
			res[l.Name][unit] = append(res[l.Name][unit], v)
		}
	}
	return res, nil
}

func median(s []float64) float64 { return stats.MedianFloat(s) }

// pairOf is the floor bench runs beside.
func pairOf(bench string) string {
	for _, pr := range ratioPairs {
		if pr[0] == bench {
			return pr[1]
		}
	}
	return ""
}
