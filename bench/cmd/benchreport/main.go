// Command benchreport runs the memory-tier benchmarks, the hit-ratio
// simulation and the memory checks, and writes the cache section of
// docs/BENCHMARKS.md (between <!-- cache:begin --> and <!-- cache:end -->),
// leaving the rest of the file as it was. It is what `make bench-cache` runs:
//
//	cd bench && go run ./cmd/benchreport -out ../docs/BENCHMARKS.md
//
// Every ratio compares numbers from the same run: the median of -count runs
// of each benchmark at each -cpu value.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/cachebench"
	"github.com/tilesieve/tilesieve/bench/docsection"
	"github.com/tilesieve/tilesieve/bench/internal/sysinfo"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

type options struct {
	out       string
	count     int
	benchtime string
	bulktime  string
	cpu       string
	tags      string
	raw       string // write the raw go test output here
	input     string // parse this file instead of running go test
	skipHits  bool
	pairs     int // paired runs of tilesieve and otter per -cpu value, for the speed targets
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "../docs/BENCHMARKS.md", "markdown file whose cache section is (re)written")
	flag.IntVar(&o.count, "count", 5, "rounds of the benchmark invocations (each -count 1); the tables show the median")
	flag.StringVar(&o.benchtime, "benchtime", "400ms", "go test -benchtime for the throughput benchmarks")
	flag.StringVar(&o.bulktime, "bulktime", "64x", "go test -benchtime for BenchmarkDeletePrefixBulk (its refill is untimed, so time-based b.N would run long)")
	flag.StringVar(&o.cpu, "cpu", "1,2", "go test -cpu")
	flag.StringVar(&o.tags, "tags", "", "build tags for go test")
	flag.StringVar(&o.raw, "raw", "", "also write the raw benchmark output to this file")
	flag.StringVar(&o.input, "input", "", "parse benchmark output from this file instead of running go test")
	flag.IntVar(&o.pairs, "pairs", 6, "paired runs of tilesieve and otter (Get, GetSet7525) per -cpu value, alternating which goes first; the speed targets use them")
	flag.BoolVar(&o.skipHits, "skip-hits", false, "leave out the hit-ratio simulation (for quick checks)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("benchreport: ")
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

func run(o options) error {
	start := time.Now()
	mi := machine()
	var loads []string // the load average as the run goes, for the reader to judge its noise
	sampleLoad := func(when string) {
		if l, ok := loadAverage(); ok {
			loads = append(loads, when+" "+l)
		}
	}
	sampleLoad("start")
	cmds := benchCommands(o)

	var raw []byte
	if o.input != "" {
		b, err := os.ReadFile(o.input)
		if err != nil {
			return err
		}
		raw = b
	} else {
		for round := range o.count {
			for _, args := range cmds {
				log.Printf("round %d/%d: running %s", round+1, o.count, strings.Join(args, " "))
				out, err := runGo(args)
				if err != nil {
					return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
				}
				raw = append(raw, out...)
			}
		}
		if o.raw != "" {
			if err := os.WriteFile(o.raw, raw, 0o644); err != nil {
				return err
			}
		}
	}
	res, err := parseBench(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return errors.New("no benchmark results parsed")
	}
	sampleLoad("after the rounds")
	var pairRaw []byte
	if o.input != "" {
		// Saved paired runs sit beside the saved rounds, if they were kept.
		if b, err := os.ReadFile(o.input + ".pairs"); err == nil {
			pairRaw = b
		}
	} else if o.pairs > 0 {
		if pairRaw, err = runPairs(o); err != nil {
			return err
		}
		if o.raw != "" {
			if err := os.WriteFile(o.raw+".pairs", pairRaw, 0o644); err != nil {
				return err
			}
		}
	}
	pairs, err := parseBench(bytes.NewReader(pairRaw))
	if err != nil {
		return err
	}
	if len(pairRaw) > 0 && o.input == "" {
		sampleLoad("after the pairs")
	}

	w := cachebench.Default()
	log.Printf("measuring bookkeeping bytes per entry")
	mem := map[string]float64{}
	for _, name := range []string{"tilesieve", "otter"} {
		im, _ := cachebench.ImplByName(name)
		// Median of three: a heap delta is noisy.
		var pers []float64
		for range 3 {
			per, err := cachebench.BookkeepingPerEntry(im, w, cachebench.NumKeys)
			if err != nil {
				return err
			}
			pers = append(pers, per)
		}
		slices.Sort(pers)
		mem[name] = pers[1]
	}
	log.Printf("checking the byte bound")
	boundSeen, boundMax, boundErr := cachebench.BoundCheck(w, 0.01)

	var hits []cachebench.HitResult
	if !o.skipHits {
		for _, tr := range cachebench.HitTraces(w) {
			for _, frac := range hitFracs {
				for _, im := range cachebench.HitRatio() {
					r, err := cachebench.SimulateHits(im, w, tr, frac)
					if err != nil {
						return err
					}
					log.Printf("hit ratio %-16s %3.0f%% %-10s obj %.4f byte %.4f (%v)", tr.Name, frac*100, im.Name, r.ObjectHit, r.ByteHit, r.Elapsed.Round(time.Millisecond))
					hits = append(hits, r)
				}
			}
		}
	}

	sampleLoad("end")
	if o.input != "" {
		loads = nil // the saved runs' load is not known
	}
	rep := report{
		machine: mi, loads: loads, cmds: cmds, opts: o, res: res, pairs: pairs, hits: hits, mem: mem,
		boundSeen: boundSeen, boundMax: boundMax, boundErr: boundErr,
		w: w, took: time.Since(start),
	}
	section := rep.render()
	if err := docsection.Write(o.out, "cache", section); err != nil {
		return err
	}
	log.Printf("wrote %s in %v", o.out, time.Since(start).Round(time.Second))
	return nil
}

var hitFracs = []float64{0.05, 0.10}

func benchCommands(o options) [][]string {
	// One run per invocation; run() repeats the invocations in rounds, so the
	// runs of every implementation interleave in time and a noisy spell on a
	// shared machine hits all of them rather than one.
	common := []string{"test", "-run", "^$", "-benchmem", "-cpu", o.cpu, "-count", "1"}
	if o.tags != "" {
		common = append(common, "-tags", o.tags)
	}
	main := append(slices.Clone(common), "-bench", "^Benchmark(Get|GetSet7525|Mixed702010)$", "-benchtime", o.benchtime, "./cachebench/")
	bulk := append(slices.Clone(common), "-bench", "^BenchmarkDeletePrefixBulk$", "-benchtime", o.bulktime, "./cachebench/")
	return [][]string{main, bulk}
}

// pairBench selects the benchmarks whose targets compare tilesieve with otter.
const pairBench = "^Benchmark(Get|GetSet7525)$/^(tilesieve|otter)$"

// pairCommand is the test binary invocation of one paired run.
func pairCommand(o options, procs, first string) []string {
	return []string{"-test.run", "^$", "-test.benchmem", "-test.cpu", procs, "-test.count", "1",
		"-test.bench", pairBench, "-test.benchtime", o.benchtime, "-cachebench.first", first}
}

// runPairs runs tilesieve and otter back to back, one -cpu value per
// process, o.pairs times per value, alternating which goes first. In a round
// of the full benchmarks the two run seconds apart, with four other
// implementations between them, and on a shared machine the load can change
// in that time; here only the other's warm-up lies between them, and the
// alternation cancels an order effect. The test binary is built once.
func runPairs(o options) ([]byte, error) {
	dir, err := os.MkdirTemp("", "benchreport")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "cachebench.test")
	build := []string{"test", "-c", "-o", bin}
	if o.tags != "" {
		build = append(build, "-tags", o.tags)
	}
	if _, err := runGo(append(build, "./cachebench/")); err != nil {
		return nil, fmt.Errorf("build the benchmark binary: %w", err)
	}
	var raw []byte
	for i := range o.pairs {
		first := "tilesieve"
		if i%2 == 1 {
			first = "otter"
		}
		for _, procs := range strings.Split(o.cpu, ",") {
			args := pairCommand(o, procs, first)
			log.Printf("pair %d/%d: -cpu %s, %s first", i+1, o.pairs, procs, first)
			cmd := exec.Command(bin, args...)
			cmd.Dir = "cachebench" // where go test runs a package's tests
			var buf bytes.Buffer
			cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
			}
			raw = append(raw, buf.Bytes()...)
		}
	}
	return raw, nil
}

// runGo runs `go args...` in the bench module, echoing its output to stderr
// as it comes so a long run shows progress.
func runGo(args []string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	return buf.Bytes(), err
}

// ---- machine ----------------------------------------------------------------

type machineInfo struct{ goVersion, cpuModel, nproc, goos string }

func machine() machineInfo {
	m := machineInfo{goos: runtime.GOOS + "/" + runtime.GOARCH, nproc: strconv.Itoa(runtime.NumCPU())}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.goVersion = strings.TrimSpace(string(out))
	} else {
		m.goVersion = runtime.Version()
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		m.nproc = strings.TrimSpace(string(out))
	}
	m.cpuModel = "unknown"
	if cpu, ok := sysinfo.CPUModel(); ok {
		m.cpuModel = cpu
	}
	return m
}

// loadAverage returns the 1-minute load average (Linux), formatted.
func loadAverage() (string, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

// ---- parsing ------------------------------------------------------------------

// key identifies one benchmark result line: BenchmarkGet/otter-2 is
// {Get, otter, 2}.
type key struct {
	bench, impl string
	procs       int
}

// results holds every sample of every unit (ns/op, B/op, allocs/op, ns/key…).
type results map[key]map[string][]float64

func parseBench(r io.Reader) (results, error) {
	lines, err := stats.ParseBench(r)
	if err != nil {
		return nil, err
	}
	res := results{}
	for _, l := range lines {
		bench, impl, _ := strings.Cut(l.Name, "/")
		k := key{bench, impl, l.Procs}
		if res[k] == nil {
			res[k] = map[string][]float64{}
		}
		for unit, v := range l.Values {
			res[k][unit] = append(res[k][unit], v)
		}
	}
	return res, nil
}

// median of the samples of unit for k; ok is false if there are none.
func (r results) median(k key, unit string) (float64, bool) {
	s := r[k][unit]
	return stats.MedianFloat(s), len(s) > 0
}

// roundRatio is the median over rounds of num's unit ÷ den's, pairing the
// samples by round (each round appends one sample of every benchmark), and
// those ratios, formatted. ok is false if either has no samples or they
// differ in count (a round lost a line, so pairs cannot be trusted).
func (r results) roundRatio(num, den key, unit string) (med float64, rounds string, ok bool) {
	a, b := r[num][unit], r[den][unit]
	if len(a) == 0 || len(a) != len(b) {
		return 0, "", false
	}
	ratios := make([]float64, len(a))
	parts := make([]string, len(a))
	for i := range a {
		ratios[i] = a[i] / b[i]
		parts[i] = fmt.Sprintf("%.2f", ratios[i])
	}
	slices.Sort(ratios)
	med = ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		med = (ratios[len(ratios)/2-1] + med) / 2
	}
	return med, strings.Join(parts, ", "), true
}

// samples lists the samples of unit for k in run order, formatted.
func (r results) samples(k key, unit string) string {
	parts := make([]string, len(r[k][unit]))
	for i, v := range r[k][unit] {
		parts[i] = fmt.Sprintf("%.1f", v)
	}
	return strings.Join(parts, ", ")
}

func (r results) procs() []int {
	var ps []int
	for k := range r {
		if !slices.Contains(ps, k.procs) {
			ps = append(ps, k.procs)
		}
	}
	slices.Sort(ps)
	return ps
}

// ---- writing ------------------------------------------------------------------
