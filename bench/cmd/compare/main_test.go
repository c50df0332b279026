package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

func TestUnits(t *testing.T) {
	t.Parallel()
	us := units([]string{"Serve/memory", "Serve/disk", "Plain", "Serve/static", "Odd.Name/a+b"})
	want := []unit{{"Serve", []string{"memory", "disk", "static"}}, {"Plain", nil}, {"Odd.Name", []string{"a+b"}}}
	if len(us) != len(want) {
		t.Fatalf("got %+v, want %+v", us, want)
	}
	for i := range want {
		if us[i].top != want[i].top || !slices.Equal(us[i].subs, want[i].subs) {
			t.Errorf("unit %d: got %+v, want %+v", i, us[i], want[i])
		}
	}
	for _, tt := range []struct {
		u          unit
		want       string
		match, not []string // top-level/sub names the pattern selects, and ones it does not
	}{
		{us[0], "^BenchmarkServe$/^(memory|disk|static)$", []string{"Serve/memory", "Serve/static"}, []string{"Serve/origin", "ServeX/memory", "Serve/memoryX"}},
		{us[1], "^BenchmarkPlain$", []string{"Plain"}, []string{"PlainX"}},
		{us[2], `^BenchmarkOdd\.Name$/^(a\+b)$`, []string{"Odd.Name/a+b"}, []string{"OddxName/a+b", "Odd.Name/aab"}},
	} {
		got := tt.u.pattern()
		if got != tt.want {
			t.Errorf("pattern of %+v: got %q, want %q", tt.u, got, tt.want)
		}
		// go test splits the pattern at unbracketed slashes and matches
		// each level against the same level of the name.
		levels := strings.Split(got, "/")
		matches := func(name string) bool {
			parts := strings.Split("Benchmark"+name, "/")
			for i, l := range levels {
				if i < len(parts) && !regexp.MustCompile(l).MatchString(parts[i]) {
					return false
				}
			}
			return true
		}
		for _, n := range tt.match {
			if !matches(n) {
				t.Errorf("%s does not select %s", got, n)
			}
		}
		for _, n := range tt.not {
			if matches(n) {
				t.Errorf("%s selects %s", got, n)
			}
		}
	}
}

// fakeBinary writes a shell script that answers like a test binary: on
// -test.benchtime 1x it prints every name of list, else the lines of
// the benchmarks its -test.bench pattern names, ns/op from nsPerOp, as go
// test prints them with -test.count 2: the first run's line at once, the
// second's name, then its result a moment later.
func fakeBinary(t *testing.T, dir, name string, list []string, nsPerOp map[string]string) testBinary {
	t.Helper()
	var b strings.Builder
	b.WriteString("#!/bin/sh\nbench=\"\"; time=\"\"\nwhile [ $# -gt 0 ]; do case \"$1\" in -test.bench) bench=\"$2\"; shift;; -test.benchtime) time=\"$2\"; shift;; esac; shift; done\n")
	b.WriteString("echo 'goos: linux'\n")
	b.WriteString("if [ \"$time\" = 1x ]; then\n")
	for _, n := range list {
		b.WriteString("echo 'Benchmark" + n + "-2 1 100 ns/op 8 B/op 1 allocs/op'\n")
	}
	b.WriteString("exit 0\nfi\n")
	for n, v := range nsPerOp {
		top, _, _ := strings.Cut(n, "/")
		b.WriteString("case \"$bench\" in ^Benchmark" + top + "\\$*) echo 'Benchmark" + n + "-2 1000 1 ns/op 64 B/op 2 allocs/op'; " +
			"printf 'Benchmark" + n + "-2 \\t'; sleep 0.05; echo '1000 " + v + " ns/op 64 B/op 2 allocs/op';; esac\n")
	}
	b.WriteString("echo PASS\n")
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return testBinary{path: path, dir: dir}
}

// TestRunBenchPart: the benchmarks both trees list are compared, those of
// one tree are named, skipped ones are not run, and each round adds each
// tree's ns/op and allocations.
func TestRunBenchPart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := benchSpec{Part: "p", Pattern: "^BenchmarkX", Skip: map[string]string{"XPaired": "not comparable"}, Controls: []string{"XFloor"}}
	bins := map[string]testBinary{
		e2e.Before: fakeBinary(t, dir, "before", []string{"X/a", "X/old", "XFloor/a", "XPaired/a"}, map[string]string{"X/a": "200", "X/old": "1", "XFloor/a": "50"}),
		e2e.After:  fakeBinary(t, dir, "after", []string{"X/a", "X/new", "XFloor/a", "XPaired/a"}, map[string]string{"X/a": "100", "X/new": "1", "XFloor/a": "50"}),
	}
	part, err := runBenchPart(t.Context(), spec, bins, options{rounds: 3, benchtime: "10ms"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(part.Compared, []string{"X/a", "XFloor/a"}) || !slices.Equal(part.OnlyBefore, []string{"X/old"}) || !slices.Equal(part.OnlyAfter, []string{"X/new"}) {
		t.Fatalf("compared %v, only before %v, only after %v", part.Compared, part.OnlyBefore, part.OnlyAfter)
	}
	if !slices.Equal(part.Units, []string{"^BenchmarkX$/^(a)$", "^BenchmarkXFloor$/^(a)$"}) {
		t.Errorf("units %v", part.Units)
	}
	x, floor := part.Pairs[0], part.Pairs[1]
	if x.Control || !floor.Control || !x.Cost || x.Unit != "ns/op" {
		t.Errorf("pairs %+v", part.Pairs)
	}
	if !slices.Equal(x.Values.Before, []float64{200, 200, 200}) || !slices.Equal(x.Values.After, []float64{100, 100, 100}) || x.Ratio() != 2 {
		t.Errorf("X/a: %+v, ratio %v; want 200 before, 100 after, 2x in each of 3 rounds", x.Values, x.Ratio())
	}
	if !slices.Equal(x.Allocs.After, []float64{2, 2, 2}) || !slices.Equal(x.Bytes.Before, []float64{64, 64, 64}) {
		t.Errorf("X/a allocations: %+v %+v", x.Allocs, x.Bytes)
	}
	// A shell that sleeps uses next to no CPU; what matters is that the
	// second run of each was bracketed and read.
	if len(x.CPU.Before) != 3 || len(x.CPU.After) != 3 {
		t.Errorf("X/a CPU per op: %+v, want a value a round for each tree", x.CPU)
	}
}

func TestRunBenchPartNothingInCommon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bins := map[string]testBinary{
		e2e.Before: fakeBinary(t, dir, "before", []string{"Old/a"}, nil),
		e2e.After:  fakeBinary(t, dir, "after", []string{"New/a"}, nil),
	}
	if _, err := runBenchPart(t.Context(), benchSpec{Pattern: "^Benchmark"}, bins, options{rounds: 1, benchtime: "1ms"}); err == nil || !strings.Contains(err.Error(), "in both trees") {
		t.Errorf("got %v, want an error naming what each tree has", err)
	}
}

func TestAddRoundMissing(t *testing.T) {
	t.Parallel()
	pairs := map[string]*e2e.Pair{"X/a": {Allocs: &e2e.Sides{}, Bytes: &e2e.Sides{}, CPU: &e2e.Sides{}}, "X/b": {Allocs: &e2e.Sides{}, Bytes: &e2e.Sides{}, CPU: &e2e.Sides{}}}
	lines := []stats.BenchLine{{Name: "X/a", Values: map[string]float64{"ns/op": 1}}}
	if err := addRound(pairs, unit{"X", []string{"a", "b"}}, e2e.After, lines); err == nil || !strings.Contains(err.Error(), "BenchmarkX/b") {
		t.Errorf("got %v, want an error naming BenchmarkX/b", err)
	}
}

// gitRepo makes a repository with two commits and returns it and the
// first commit.
func gitRepo(t *testing.T) (dir, first string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir = t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q")
	write("code.go", "one")
	write("docs/B.md", "doc")
	run("add", ".")
	run("commit", "-q", "-m", "the first")
	first = run("rev-parse", "HEAD")
	write("code.go", "two")
	run("commit", "-q", "-am", "the second")
	return dir, first
}

// TestCheckout: the before tree is a worktree of the revision, gone with
// its record after remove; the working tree is dirty only for changes
// outside docs/.
func TestCheckout(t *testing.T) {
	t.Parallel()
	repo, first := gitRepo(t)
	ctx := context.Background()
	tree, remove, err := checkout(ctx, repo, first[:7])
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(tree.Dir, "code.go")); err != nil || string(b) != "one" {
		t.Errorf("before tree's code.go: %q, %v; want the first commit's", b, err)
	}
	if tree.Commit != first || tree.Subject != "the first" || tree.Rev != first[:7] || tree.Dirty {
		t.Errorf("tree %+v", tree)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree.Dir); !os.IsNotExist(err) {
		t.Errorf("before tree still there: %v", err)
	}
	if list, _ := git(ctx, repo, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left: %s", list)
	}
	after, err := describe(ctx, repo)
	if err != nil || after.Subject != "the second" || after.Dirty {
		t.Fatalf("after %+v, %v", after, err)
	}
	os.WriteFile(filepath.Join(repo, "docs", "B.md"), []byte("regenerated"), 0o644)
	if after, _ := describe(ctx, repo); after.Dirty {
		t.Error("a change under docs/ made the tree dirty")
	}
	os.WriteFile(filepath.Join(repo, "code.go"), []byte("three"), 0o644)
	if after, _ := describe(ctx, repo); !after.Dirty || !strings.Contains(after.Name(), "uncommitted") {
		t.Errorf("a change to code.go: %+v, %q", after, after.Name())
	}
	if _, _, err := checkout(ctx, repo, "no-such-rev"); err == nil {
		t.Error("checkout of a revision that does not exist succeeded")
	}
}

func TestSelected(t *testing.T) {
	t.Parallel()
	all, err := selected("")
	if err != nil || len(all) != len(parts) {
		t.Errorf("empty -only: %v, %v", all, err)
	}
	some, err := selected("storage, handler")
	if err != nil || len(some) != 2 || !some["storage"] || !some["handler"] {
		t.Errorf("-only storage,handler: %v, %v", some, err)
	}
	if _, err := selected("nope"); err == nil {
		t.Error("an unknown part was accepted")
	}
}

// TestRender: each measure of the product is a target row, met at ≥ 0.95;
// controls are listed apart; a measure whose builds allocate differently
// says so.
func TestRender(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	r := Results{
		Machine: e2e.Machine{GoVersion: "go1.26.8", CPU: "cpu", NProc: 2, OS: "linux/amd64", Date: date},
		Command: "cd bench && go run ./cmd/compare -before abc", Elapsed: 12 * time.Minute,
		Before: Tree{Rev: "abc", Commit: "abcdef0123456789", Subject: "before"}, After: Tree{Commit: "0123456789abcdef", Subject: "after", Dirty: true},
		Handler: &BenchPart{Date: date, Build: "go test -c ./e2e", Module: "the bench module", Rounds: 2, Compared: []string{"Serve/memory", "Serve/static"},
			Units: []string{"^BenchmarkServe$/^(memory|static)$"}, Pairs: []e2e.Pair{
				{What: "Serve/memory", Unit: "ns/op", Cost: true, Values: e2e.Sides{Before: []float64{500, 500}, After: []float64{510, 520}},
					Allocs: &e2e.Sides{Before: []float64{0, 0}, After: []float64{0, 0}}, Bytes: &e2e.Sides{Before: []float64{2, 2}, After: []float64{2, 2}},
					CPU: &e2e.Sides{Before: []float64{480, 480}, After: []float64{480, 0}}},
				{What: "Serve/static", Unit: "ns/op", Cost: true, Control: true, Values: e2e.Sides{Before: []float64{300, 300}, After: []float64{300, 330}}},
			}},
		Invoke: &BenchPart{Date: date, Rounds: 2, Compared: []string{"InvokeBuffered/30KB"}, OnlyAfter: []string{"InvokeNew/1KB"}, Pairs: []e2e.Pair{
			{What: "InvokeBuffered/30KB", Unit: "ns/op", Cost: true, Values: e2e.Sides{Before: []float64{100, 100}, After: []float64{250, 250}},
				Allocs: &e2e.Sides{Before: []float64{40, 40}, After: []float64{93, 93}}, Bytes: &e2e.Sides{Before: []float64{1000, 1000}, After: []float64{2400, 2400}}},
		}},
		Emulator: &EmuPart{Date: date, Rounds: 2, Bootstrap: map[string]int64{e2e.Before: 10, e2e.After: 11},
			ColdStart: e2e.Sides{Before: []float64{20, 22}, After: []float64{21, 22}},
			Pairs:     []e2e.Pair{{What: "memory hit 30KB", Unit: "invocations/s", Values: e2e.Sides{Before: []float64{1000, 900}, After: []float64{990, 950}}}}},
		Storage: &e2e.StoragePairResult{Tiles: 85, Bytes: 3 << 20, Commands: []string{"ab …", "wrk …"},
			Pairs: []e2e.Pair{{What: "disk hits, wrk", Unit: "req/s", Values: e2e.Sides{Before: []float64{8000, 8000}, After: []float64{7000, 7200}},
				CPU: &e2e.Sides{Before: []float64{50e3, 50e3}, After: []float64{50e3, 52e3}}, Note: "during wrk: …"}}},
		StorageRounds: 2, StorageDate: date,
	}
	doc := Render(r)
	for _, want := range []string{
		"## Before and after a change",
		"Generated by `cd bench && go run ./cmd/compare -before abc` on 2026-12-07 10:00 UTC in 12m0s",
		"**Before**: `abc` (abcdef012345, \"before\")",
		"**After**: the working tree at 0123456789ab (\"after\") with uncommitted changes",
		"| 0 handler | Serve/memory (ns/op) | ≥ 0.95x | 0.97x | **met** | 0.98, 0.96; CPU per op 1.00x |",
		"| invocations in process | InvokeBuffered/30KB (ns/op) | ≥ 0.95x | 0.40x | **missed** | 0.40, 0.40; allocs/op before 40, after 93; B/op before 1000, after 2400 |",
		"| invocations under the emulator | memory hit 30KB (invocations/s) | ≥ 0.95x | 1.02x | **met** | 0.99, 1.06 |",
		"| 2 serving from storage | disk hits, wrk (req/s) | ≥ 0.95x | 0.89x | **missed** | 0.88, 0.90; server CPU per request 0.98x |",
		"Controls, the same code in both builds: Serve/static 0.95x (1.00, 0.91).",
		"| Serve/static (control) | 300 | 315 | 0.95x | 1.00, 0.91 | – | – | – | – | – | – |",
		"| Serve/memory | 500 | 515 | 0.97x | 0.98, 0.96 | 480 / 480 | 1.00x | 0 | 0 | 2 | 2 |",
		"only the after tree has InvokeNew/1KB",
		"before 10 bytes, after 11 bytes",
		"| 30KB | 950 | 970 | 1.02x | 0.99, 1.06 |",
		"| disk hits, wrk | 8000 | 7100 | 0.89x | 0.88, 0.90 | 50.0 µs / 51.0 µs | 0.98x | during wrk: … |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("section lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "Serve/static (ns/op) |") {
		t.Error("a control is held to a target")
	}
}

// chunks is a reader that returns one chunk per Read, calling before
// ahead of each.
type chunks struct {
	parts  []string
	before func(i int)
	i      int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.i == len(c.parts) {
		return 0, io.EOF
	}
	c.before(c.i)
	n := copy(p, c.parts[c.i])
	c.i++
	return n, nil
}

// TestWithCPU: a result line seen begin gets the process's CPU time over
// the run per op; a line read whole, or other output, is copied as it is.
func TestWithCPU(t *testing.T) {
	t.Parallel()
	var now time.Duration
	r := &chunks{parts: []string{
		"goos: linux\nBenchmarkX/a-2 \t",                         // a run begins
		"    1000\t       200 ns/op\t  64 B/op\t 2 allocs/op\n",  // and ends after 1 ms of CPU
		"BenchmarkX/b-2 \t    10\t 5 ns/op\nPASS\nok  x\t1.0s\n", // one read: never seen begin
	}, before: func(i int) { now += time.Duration(i) * time.Millisecond }}
	var out strings.Builder
	if err := withCPU(&out, r, func() (time.Duration, error) { return now, nil }); err != nil {
		t.Fatal(err)
	}
	want := "goos: linux\n" +
		"BenchmarkX/a-2 \t    1000\t       200 ns/op\t  64 B/op\t 2 allocs/op\t1000.0 cpu-ns/op\n" +
		"BenchmarkX/b-2 \t    10\t 5 ns/op\nPASS\nok  x\t1.0s\n"
	if out.String() != want {
		t.Errorf("got\n%q\nwant\n%q", out.String(), want)
	}
	lines, err := stats.ParseBench(strings.NewReader(out.String()))
	if err != nil || len(lines) != 2 || lines[0].Values[cpuUnit] != 1000 {
		t.Errorf("parsed %+v, %v", lines, err)
	}
}
