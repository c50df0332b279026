package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/docsection"
	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

// benchSpec is a Go benchmark compared in process: each tree's own test
// binary of the package, built inside that tree.
type benchSpec struct {
	Part    string // the results' key
	Module  string // the module's folder in a tree: "bench", "."
	Pkg     string // the package, relative to the module
	Pattern string // the -test.bench that selects the benchmarks
	// Skip names top-level benchmarks (as go test prints them, without
	// "Benchmark") that are not compared, and why.
	Skip map[string]string
	// Controls are benchmarks (a top-level name, or top-level/sub) that
	// run none of the product's code: floors.
	Controls []string
}

// handlerSpec is section 0: BenchmarkServe of bench/e2e.
var handlerSpec = benchSpec{Part: "handler", Module: "bench", Pkg: "./e2e", Pattern: "^BenchmarkServe$", Controls: []string{"Serve/static"}}

// invokeSpec is the invocation section's in-process part: BenchmarkInvoke*
// of functions/tiles.
var invokeSpec = benchSpec{Part: "invoke", Module: ".", Pkg: "./functions/tiles", Pattern: "^BenchmarkInvoke",
	Skip: map[string]string{"InvokeMetricsPaired": "its op is one invocation of each of two functions in one process, metrics off and on; " +
		"BenchmarkInvokeBuffered and BenchmarkInvokeBufferedMetrics time each"},
	Controls: []string{"InvokeBufferedFloor", "InvokeStreamingFloor"}}

func (s benchSpec) control(name string) bool {
	return slices.ContainsFunc(s.Controls, func(c string) bool { return name == c || strings.HasPrefix(name, c+"/") })
}

// BenchPart is one in-process benchmark compared.
type BenchPart struct {
	Date      time.Time `json:"date"`
	Build     string    `json:"build"`  // the go test -c command
	Module    string    `json:"module"` // where it runs in each tree
	Run       string    `json:"run"`    // one process's command line, <pattern> standing for its benchmarks
	Units     []string  `json:"units"`  // the -test.bench of each process of a round
	Rounds    int       `json:"rounds"`
	Benchtime string    `json:"benchtime"`
	// Compared are the benchmarks both trees have (go test's names without
	// "Benchmark"); OnlyBefore and OnlyAfter those only one has.
	Compared   []string          `json:"compared"`
	OnlyBefore []string          `json:"only_before,omitempty"`
	OnlyAfter  []string          `json:"only_after,omitempty"`
	Skipped    map[string]string `json:"skipped,omitempty"`
	Pairs      []e2e.Pair        `json:"pairs"`
}

// testBinary is one tree's test binary of a package, and the package's
// folder, where go test would run it.
type testBinary struct{ path, dir string }

// buildTest builds spec's package in tree t into out with go test -c, run
// in the tree's module so that it compiles that tree's code.
func buildTest(ctx context.Context, t Tree, spec benchSpec, out string) (testBinary, error) {
	mod := filepath.Join(t.Dir, spec.Module)
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", out, spec.Pkg)
	cmd.Dir = mod
	if b, err := cmd.CombinedOutput(); err != nil {
		return testBinary{}, fmt.Errorf("go test -c %s in %s: %w\n%s", spec.Pkg, mod, err, b)
	}
	return testBinary{path: out, dir: filepath.Join(mod, spec.Pkg)}, nil
}

// benchArgs are the flags of a process that runs the benchmarks bench
// selects count times each.
func benchArgs(bench, benchtime string, count int) []string {
	return []string{"-test.run", "^$", "-test.bench", bench, "-test.benchmem", "-test.count", strconv.Itoa(count), "-test.benchtime", benchtime}
}

// runsPerProcess is how many times a process of the rounds runs each of
// its benchmarks: the first run warms the process (its code, heap and
// caches) and is dropped; the second, which go test brackets with the
// benchmark's name and its result line, is the one reported, with the CPU
// time the process spent over it.
const runsPerProcess = 2

// run runs the benchmarks bench selects count times each, for benchtime,
// in a process of its own. Each result line that the process was seen to
// begin carries the process's CPU time per op over that run (withCPU).
func (b testBinary) run(ctx context.Context, bench, benchtime string, count int) ([]stats.BenchLine, error) {
	cmd := exec.CommandContext(ctx, b.path, benchArgs(bench, benchtime, count)...)
	cmd.Dir = b.dir
	var out, stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	rerr := withCPU(&out, stdout, func() (time.Duration, error) { return e2e.ProcessCPU(pid) })
	if err := errors.Join(rerr, cmd.Wait()); err != nil {
		return nil, fmt.Errorf("%s -test.bench %s: %w\n%s%s", b.path, bench, err, out.Bytes(), stderr.Bytes())
	}
	return stats.ParseBench(&out)
}

// cpuUnit is the value withCPU adds to a result line.
const cpuUnit = "cpu-ns/op"

// withCPU copies a test binary's output from r to w as it is written. go
// test prints a benchmark's name before each of its runs but the first,
// and the result at the end of the same line: for a line seen begin, it
// reads the process's CPU time (cpu) there and at the line's end, and adds
// that time per op to the result as a cpuUnit value. A line whose CPU time
// cannot be read is copied as it is.
func withCPU(w io.Writer, r io.Reader, cpu func() (time.Duration, error)) error {
	buf := make([]byte, 4096)
	var line []byte
	var start time.Duration
	began := false
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			if c != '\n' {
				line = append(line, c)
				continue
			}
			if ops := resultOps(line); began && ops > 0 {
				if end, err := cpu(); err == nil {
					line = fmt.Appendf(line, "\t%.1f %s", float64((end-start).Nanoseconds())/float64(ops), cpuUnit)
				}
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
			line, began = line[:0], false
		}
		// A name and a tab with no result yet: a run is under way.
		if !began && bytes.HasPrefix(line, []byte("Benchmark")) && bytes.IndexByte(line, '\t') > 0 {
			if t, err := cpu(); err == nil {
				start, began = t, true
			}
		}
		if err == io.EOF {
			_, err = w.Write(line)
			return err
		}
		if err != nil {
			return err
		}
	}
}

// resultOps is the iteration count of a benchmark result line, 0 for any
// other line.
func resultOps(line []byte) int {
	f := bytes.Fields(line)
	if len(f) < 4 || !bytes.HasPrefix(f[0], []byte("Benchmark")) {
		return 0
	}
	n, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0
	}
	return n
}

// names are the benchmarks of lines, in order, without the skipped ones.
func names(lines []stats.BenchLine, skip map[string]string) []string {
	var out []string
	for _, l := range lines {
		top, _, _ := strings.Cut(l.Name, "/")
		if _, ok := skip[top]; !ok && !slices.Contains(out, l.Name) {
			out = append(out, l.Name)
		}
	}
	return out
}

// unit is the benchmarks one process runs: a top-level benchmark and those
// of its sub-benchmarks that both trees have.
type unit struct {
	top  string
	subs []string
}

// pattern is the -test.bench that selects exactly u's benchmarks.
func (u unit) pattern() string {
	p := "^Benchmark" + regexp.QuoteMeta(u.top) + "$"
	if len(u.subs) == 0 {
		return p
	}
	q := make([]string, len(u.subs))
	for i, s := range u.subs {
		q[i] = regexp.QuoteMeta(s)
	}
	return p + "/^(" + strings.Join(q, "|") + ")$"
}

// units groups names (top-level or top-level/sub) by top-level benchmark,
// in the order they first appear.
func units(names []string) []unit {
	var us []unit
	for _, n := range names {
		top, sub, _ := strings.Cut(n, "/")
		i := slices.IndexFunc(us, func(u unit) bool { return u.top == top })
		if i < 0 {
			us = append(us, unit{top: top})
			i = len(us) - 1
		}
		if sub != "" {
			us[i].subs = append(us[i].subs, sub)
		}
	}
	return us
}

// runBenchPart compares spec's benchmarks: a first run of each tree's
// binary, one iteration each, lists the benchmarks it has; then each
// top-level benchmark runs in o.rounds rounds, once per tree in a process
// of its own, the trees one right after the other in the order
// e2e.SidesInRound gives.
func runBenchPart(ctx context.Context, spec benchSpec, bins map[string]testBinary, o options) (BenchPart, error) {
	part := BenchPart{Build: "go test -c " + spec.Pkg, Module: moduleName(spec.Module),
		Run: "<test binary> " + docsection.Command(benchArgs("<pattern>", o.benchtime, runsPerProcess)), Rounds: o.rounds, Benchtime: o.benchtime, Skipped: spec.Skip}
	listed := map[string][]string{}
	for _, side := range e2e.SidesInRound(0) {
		lines, err := bins[side].run(ctx, spec.Pattern, "1x", 1)
		if err != nil {
			return part, fmt.Errorf("%s tree: %w", side, err)
		}
		listed[side] = names(lines, spec.Skip)
	}
	for _, n := range listed[e2e.After] {
		if slices.Contains(listed[e2e.Before], n) {
			part.Compared = append(part.Compared, n)
		} else {
			part.OnlyAfter = append(part.OnlyAfter, n)
		}
	}
	for _, n := range listed[e2e.Before] {
		if !slices.Contains(listed[e2e.After], n) {
			part.OnlyBefore = append(part.OnlyBefore, n)
		}
	}
	if len(part.Compared) == 0 {
		return part, fmt.Errorf("no benchmark matching %s in both trees (before: %v, after: %v)", spec.Pattern, listed[e2e.Before], listed[e2e.After])
	}
	pairs := map[string]*e2e.Pair{}
	for _, n := range part.Compared {
		pairs[n] = &e2e.Pair{What: n, Unit: "ns/op", Cost: true, Control: spec.control(n), Allocs: &e2e.Sides{}, Bytes: &e2e.Sides{}, CPU: &e2e.Sides{}}
	}
	us := units(part.Compared)
	for _, u := range us {
		part.Units = append(part.Units, u.pattern())
	}
	for round := range o.rounds {
		logf("%s round %d/%d", spec.Part, round+1, o.rounds)
		for _, u := range us {
			for _, side := range e2e.SidesInRound(round) {
				lines, err := bins[side].run(ctx, u.pattern(), o.benchtime, runsPerProcess)
				if err != nil {
					return part, fmt.Errorf("%s tree: %w", side, err)
				}
				if err := addRound(pairs, u, side, lines); err != nil {
					return part, err
				}
			}
		}
	}
	for _, n := range part.Compared {
		part.Pairs = append(part.Pairs, *pairs[n])
	}
	part.Date = time.Now().UTC()
	return part, nil
}

// addRound adds side's results of u's benchmarks to their pairs: of each,
// the process's last run.
func addRound(pairs map[string]*e2e.Pair, u unit, side string, lines []stats.BenchLine) error {
	want := []string{u.top}
	if len(u.subs) > 0 {
		want = want[:0]
		for _, s := range u.subs {
			want = append(want, u.top+"/"+s)
		}
	}
	for _, n := range want {
		i := lastIndex(lines, n)
		if i < 0 {
			return fmt.Errorf("%s tree: no result for Benchmark%s", side, n)
		}
		v := lines[i].Values // a missing cpuUnit is 0: no CPU ratio that round
		pairs[n].Values.Add(side, v["ns/op"])
		pairs[n].Allocs.Add(side, v["allocs/op"])
		pairs[n].Bytes.Add(side, v["B/op"])
		pairs[n].CPU.Add(side, v[cpuUnit])
	}
	return nil
}

// lastIndex is the index of the last of lines named name, -1 for none.
func lastIndex(lines []stats.BenchLine, name string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Name == name {
			return i
		}
	}
	return -1
}

// moduleName names a module folder of a tree.
func moduleName(dir string) string {
	if dir == "." {
		return "the root module"
	}
	return "the " + dir + " module"
}
