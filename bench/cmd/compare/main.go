// Command compare runs the product before a change beside the product
// after it, and writes the "Before and after a change" section of
// docs/BENCHMARKS.md (between <!-- compare:begin --> and
// <!-- compare:end -->). It is what `make bench-compare BEFORE=REV` runs:
//
//	cd bench && go run ./cmd/compare -before REV -out ../docs/BENCHMARKS.md
//
// The before tree is a `git worktree add` of REV into a temporary
// directory (removed at the end); the after tree is the working tree, or
// -after DIR. Each tree compiles its own code, inside that tree: its
// test binaries (go test -c), its tile server and its Lambda bootstrap.
// Four parts, each the measure of a section of docs/BENCHMARKS.md:
//
//   - handler: section 0's BenchmarkServe (bench/e2e), in process;
//   - invoke: the invocation section's BenchmarkInvoke* (functions/tiles),
//     in process;
//   - emulator: the invocation section's bootstraps under aws-lambda-rie,
//     sequential memory hits;
//   - storage: section 2's local tile servers over loopback, loaded with
//     ab and wrk, memory hits at two bounds and disk hits.
//
// Every measure runs in rounds; in each, the two trees run one right after
// the other, the order alternating from round to round, and the ratio of
// the two (after's speed over before's) is taken within the round. Raw
// results go to bench/results/compare.json (gitignored).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/bench/docsection"
	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/lambdarie"
	"github.com/tilesieve/tilesieve/bench/internal/sysinfo"
)

// parts are the comparison's parts, in the order they run.
var parts = []string{"handler", "invoke", "emulator", "storage"}

type options struct {
	before, after, repo, out, results, only string
	rounds                                  int
	benchtime                               string        // of each in-process benchmark
	emuInvokes                              int           // at most this many timed invocations per tile, side and round
	emuTime                                 time.Duration // at most this long per tile, side and round
	quick, render                           bool
}

// Results is what compare.json holds.
type Results struct {
	Machine    e2e.Machine            `json:"machine"`
	Command    string                 `json:"command"`
	Elapsed    time.Duration          `json:"elapsed"`
	Before     Tree                   `json:"before"`
	After      Tree                   `json:"after"`
	LoadBefore string                 `json:"load_before,omitempty"` // /proc/loadavg as the run began
	LoadAfter  string                 `json:"load_after,omitempty"`  // and as it ended
	Handler    *BenchPart             `json:"handler,omitempty"`
	Invoke     *BenchPart             `json:"invoke,omitempty"`
	Emulator   *EmuPart               `json:"emulator,omitempty"`
	Storage    *e2e.StoragePairResult `json:"storage,omitempty"`
	// StorageRounds and StorageDate go with Storage.
	StorageRounds int       `json:"storage_rounds,omitempty"`
	StorageDate   time.Time `json:"storage_date,omitzero"`
}

func main() {
	var o options
	flag.StringVar(&o.before, "before", "", "the revision before the change (required unless -render)")
	flag.StringVar(&o.after, "after", "", "the tree after the change (default: the repository's working tree, -repo)")
	flag.StringVar(&o.repo, "repo", "..", "the repository the before revision is checked out from")
	flag.StringVar(&o.out, "out", "../docs/BENCHMARKS.md", "markdown file whose compare section is (re)written")
	flag.StringVar(&o.results, "results", "results", "directory of the JSON results")
	flag.StringVar(&o.only, "only", "", "comma-separated parts to run ("+strings.Join(parts, ",")+"); the others keep their last results for the same two commits")
	flag.IntVar(&o.rounds, "rounds", 7, "rounds of every part")
	flag.StringVar(&o.benchtime, "benchtime", "300ms", "-test.benchtime of each in-process benchmark run (each runs twice a process: a warm-up, then the one reported)")
	flag.IntVar(&o.emuInvokes, "emu-invokes", 3000, "at most this many timed invocations per tile, tree and round under the emulator")
	flag.DurationVar(&o.emuTime, "emu-time", 2*time.Second, "at most this long per tile, tree and round under the emulator")
	flag.BoolVar(&o.quick, "quick", false, "tiny counts, to try the command out (its numbers mean nothing)")
	flag.BoolVar(&o.render, "render", false, "only re-render the section from the saved results")
	flag.Parse()
	if o.quick {
		o.rounds, o.benchtime, o.emuInvokes, o.emuTime = 2, "20ms", 200, 300*time.Millisecond
	}
	if err := run(o, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(o options, args []string) (err error) {
	want, err := selected(o.only)
	if err != nil {
		return err
	}
	var res Results
	if _, err := e2e.LoadJSON(o.results, "compare", &res); err != nil {
		return err
	}
	if o.render {
		return docsection.Write(o.out, "compare", Render(res))
	}
	if o.before == "" {
		return errors.New("-before REV is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	after, err := describe(ctx, cmp.Or(o.after, repo))
	if err != nil {
		return err
	}
	before, remove, err := checkout(ctx, repo, o.before)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := remove(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the before tree: %w", rerr))
		}
	}()
	logf("before: %s in %s; after: %s in %s", before.Name(), before.Dir, after.Name(), after.Dir)
	if res.Before.Commit != before.Commit || res.After.Commit != after.Commit || res.After.Dirty || after.Dirty {
		res = Results{} // saved parts of another pair of trees are not kept
	}
	res.Before, res.After = before, after
	res.Machine = e2e.ThisMachine(toolVersions())
	res.Command = "cd bench && go run ./cmd/compare " + docsection.Command(args)
	res.LoadBefore = sysinfo.LoadAvg()
	tmp, err := os.MkdirTemp("", "tilesieve-compare-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bins, err := build(ctx, map[string]Tree{e2e.Before: before, e2e.After: after}, want, tmp)
	if err != nil {
		return err
	}
	if err := runParts(ctx, &res, want, bins, tmp, o); err != nil {
		return err
	}
	res.LoadAfter = sysinfo.LoadAvg()
	res.Elapsed = time.Since(start).Round(time.Second)
	if err := e2e.SaveJSON(o.results, "compare", res); err != nil {
		return err
	}
	if err := docsection.Write(o.out, "compare", Render(res)); err != nil {
		return err
	}
	logf("wrote %s in %s", o.out, res.Elapsed)
	return nil
}

// runParts runs each wanted part in turn into res, saving the results
// after each.
func runParts(ctx context.Context, res *Results, want map[string]bool, bins binaries, tmp string, o options) error {
	steps := []struct {
		name string
		run  func() error
	}{
		{"handler", func() error {
			p, err := runBenchPart(ctx, handlerSpec, bins.tests[handlerSpec.Part], o)
			res.Handler = &p
			return err
		}},
		{"invoke", func() error {
			p, err := runBenchPart(ctx, invokeSpec, bins.tests[invokeSpec.Part], o)
			res.Invoke = &p
			return err
		}},
		{"emulator", func() error {
			p, err := runEmulator(ctx, res.After, bins.bootstrap, tmp, o)
			res.Emulator = &p
			return err
		}},
		{"storage", func() error {
			sp := e2e.DefaultStorageParams(res.After.Dir, filepath.Join(res.After.Dir, "bench"), o.quick)
			r, err := e2e.RunStoragePair(ctx, e2e.TilePool(), e2e.StoragePairParams{Storage: sp, Tiles: bins.tiles, S3Serve: bins.s3serve, Rounds: o.rounds})
			res.Storage, res.StorageRounds, res.StorageDate = &r, o.rounds, time.Now().UTC()
			return err
		}},
	}
	for _, s := range steps {
		if !want[s.name] {
			continue
		}
		t := time.Now()
		logf("%s …", s.name)
		if err := s.run(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		logf("%s done in %s", s.name, time.Since(t).Round(time.Second))
		if err := e2e.SaveJSON(o.results, "compare", *res); err != nil {
			return err
		}
	}
	return nil
}

// selected is the set of parts -only names; every part when it is empty.
func selected(only string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, p := range strings.Split(only, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(parts, p) {
			return nil, fmt.Errorf("-only: unknown part %q (want %s)", p, strings.Join(parts, ","))
		}
		want[p] = true
	}
	if len(want) == 0 {
		for _, p := range parts {
			want[p] = true
		}
	}
	return want, nil
}

// binaries are what each tree built, by part and side.
type binaries struct {
	tests     map[string]map[string]testBinary // part → side → its test binary
	tiles     map[string]string                // side → go build ./functions/tiles
	bootstrap map[string]string                // side → the Lambda bootstrap of ./functions/tiles
	s3serve   string                           // bench/cmd/s3serve of this module, shared by both
}

// build builds, inside each tree, what the wanted parts run, into tmp.
func build(ctx context.Context, trees map[string]Tree, want map[string]bool, tmp string) (binaries, error) {
	b := binaries{tests: map[string]map[string]testBinary{}, tiles: map[string]string{}, bootstrap: map[string]string{}}
	for _, side := range e2e.SidesInRound(0) {
		t := trees[side]
		for _, spec := range []benchSpec{handlerSpec, invokeSpec} {
			if !want[spec.Part] {
				continue
			}
			logf("building %s's test binary of %s", side, spec.Pkg)
			tb, err := buildTest(ctx, t, spec, filepath.Join(tmp, side, spec.Part+".test"))
			if err != nil {
				return b, fmt.Errorf("%s tree: %w", side, err)
			}
			if b.tests[spec.Part] == nil {
				b.tests[spec.Part] = map[string]testBinary{}
			}
			b.tests[spec.Part][side] = tb
		}
		if want["storage"] {
			logf("building %s's tile server", side)
			b.tiles[side] = filepath.Join(tmp, side, "tiles")
			if err := e2e.BuildAll(ctx, filepath.Join(tmp, side), e2e.Build{Dir: t.Dir, Out: "tiles", Pkg: "./functions/tiles"}); err != nil {
				return b, fmt.Errorf("%s tree: %w", side, err)
			}
		}
		if want["emulator"] {
			logf("building %s's bootstrap", side)
			b.bootstrap[side] = filepath.Join(tmp, side, "bootstrap")
			if err := lambdarie.Build(ctx, t.Dir, b.bootstrap[side], "./functions/tiles"); err != nil {
				return b, fmt.Errorf("%s tree: %w", side, err)
			}
		}
	}
	if want["storage"] {
		for _, tool := range []string{"ab", "wrk"} {
			if _, err := exec.LookPath(tool); err != nil {
				return b, fmt.Errorf("%s not found: run bench/e2e/install-tools.sh", tool)
			}
		}
		b.s3serve = filepath.Join(tmp, "s3serve")
		if err := e2e.BuildAll(ctx, tmp, e2e.Build{Dir: ".", Out: "s3serve", Pkg: "./cmd/s3serve"}); err != nil {
			return b, err
		}
	}
	return b, nil
}

// toolVersions names the outside tools the run uses.
func toolVersions() []string {
	var out []string
	for _, c := range [][]string{{"ab", "-V"}, {"wrk", "-v"}} {
		b, _ := exec.Command(c[0], c[1:]...).CombinedOutput()
		line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		if line == "" {
			line = c[0] + ": not installed"
		}
		out = append(out, strings.TrimSpace(line))
	}
	return append(out, lambdarie.Version())
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "compare: "+format+"\n", a...)
}
