package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/bench/e2e"
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
	{"InvokeBufferedOrigin", "buffered, origin fetch"},
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
	Command string                       `json:"command"`
	Rounds  int                          `json:"rounds"`
	Samples map[string]map[string]Sample `json:"samples"` // bench → size → median
	Targets []e2e.Target                 `json:"targets"`
}

// MicroArgs is the go test command line of one round.
func MicroArgs(benchtime string) []string {
	return []string{"test", "-run", "^$", "-bench", "^BenchmarkInvoke", "-benchmem", "-count", "1", "-benchtime", benchtime, "./functions/tiles/"}
}

// RunMicro runs the product's invocation benchmarks o.count times in root
// and takes the median of each.
func RunMicro(ctx context.Context, root string, o options) (MicroResult, error) {
	args := MicroArgs(o.benchtime)
	var raw []byte
	if o.input != "" {
		b, err := os.ReadFile(o.input)
		if err != nil {
			return MicroResult{}, err
		}
		raw = b
	} else {
		for i := range o.count {
			logf("micro round %d/%d: go %s", i+1, o.count, shellQuote(args))
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = root
			var buf bytes.Buffer
			cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return MicroResult{}, fmt.Errorf("go %s: %w", shellQuote(args), err)
			}
			raw = append(raw, buf.Bytes()...)
		}
		if err := os.MkdirAll(o.results, 0o755); err == nil {
			os.WriteFile(o.results+"/invoke-micro.txt", raw, 0o644)
		}
	}
	parsed, err := ParseBench(bytes.NewReader(raw))
	if err != nil {
		return MicroResult{}, err
	}
	r := MicroResult{Command: "go " + shellQuote(args), Rounds: o.count, Samples: map[string]map[string]Sample{}}
	for _, m := range Modes {
		for _, size := range Sizes {
			units := parsed[m.Bench+"/"+size]
			if len(units["ns/op"]) == 0 {
				return r, fmt.Errorf("no results for Benchmark%s/%s", m.Bench, size)
			}
			if r.Samples[m.Bench] == nil {
				r.Samples[m.Bench] = map[string]Sample{}
			}
			r.Samples[m.Bench][size] = Sample{NsPerOp: median(units["ns/op"]), AllocsPerOp: median(units["allocs/op"]),
				BytesPerOp: median(units["B/op"]), Runs: len(units["ns/op"])}
		}
	}
	r.Targets = r.targets()
	return r, nil
}

// Ratio is bench's ns/op over floor's at size.
func (r MicroResult) Ratio(bench, floor, size string) float64 {
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
	ts = append(ts,
		e2e.Target{What: "buffered memory hit: allocs/op of the whole invocation (largest over sizes)", Want: 10, Got: whole, Unit: "allocs",
			Reason: fmt.Sprintf("aws-lambda-go's event decoding and payload handling alone cost the floor %.0f or more", minFloor)}.Check(),
		e2e.Target{What: "buffered memory hit: allocs/op tilesieve adds to the floor's (largest over sizes)", Want: 10, Got: added, Unit: "allocs"}.Check())
	return ts
}

// ParseBench reads go test -bench output into name (without the -procs
// suffix) → unit → samples.
func ParseBench(r io.Reader) (map[string]map[string][]float64, error) {
	res := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if res[name] == nil {
			res[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("parse %q: %w", sc.Text(), err)
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res, sc.Err()
}

func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	s = slices.Clone(s)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
