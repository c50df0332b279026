// Command invokebench measures what Lambda runs, one whole function-URL
// invocation, and writes the invoke section of docs/BENCHMARKS.md (between
// <!-- invoke:begin --> and <!-- invoke:end -->). It is what
// `make bench-invoke` runs:
//
//	cd bench && go run ./cmd/invokebench -out ../docs/BENCHMARKS.md
//
// Two parts, each beside its floor in the same run:
//
//   - micro: the product's BenchmarkInvoke* (functions/tiles), event bytes in,
//     payload bytes out through aws-lambda-go's own handler, run -count 1 in
//     rounds so that the tile function's runs and the floor's interleave;
//     the tables show the median of the rounds.
//   - emulator: the real bootstrap (built as Lambda builds it) under the
//     Lambda Runtime Interface Emulator, with S3 in this process on
//     loopback, against bench/cmd/floorlambda (the same tile's answer
//     encoded once at start), sequential invocations bounded in count and
//     time, in interleaved rounds, and the cold start of each.
//
// Raw results go to bench/results/invoke.json (gitignored); a run of one
// part (-only) keeps the other's last results.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/bench/docsection"
	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/lambdarie"
)

type options struct {
	out, root, results, only string
	count                    int
	benchtime                string
	input                    string // parse saved go test output instead of running it
	rounds                   int
	coldPairs                int // cold starts alone, paired, after the rounds
	healthRuns, healthPairs  int // runs of paired cold starts to the health check against the minimal bootstrap
	invokes                  int
	perRun                   time.Duration
	latTime                  time.Duration // of the latency part with S3 at EmuS3Latency; 0 skips it
	render                   bool
}

// Results is what invoke.json holds.
type Results struct {
	Machine  e2e.Machine     `json:"machine"`
	Command  string          `json:"command"`
	Micro    *MicroResult    `json:"micro,omitempty"`
	Emulator *EmulatorResult `json:"emulator,omitempty"`
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "../docs/BENCHMARKS.md", "markdown file whose invoke section is (re)written")
	flag.StringVar(&o.root, "root", "..", "the product module's root (where go test runs)")
	flag.StringVar(&o.results, "results", "results", "directory of the JSON results")
	flag.StringVar(&o.only, "only", "", "run one part: micro or emulator (empty: both)")
	flag.IntVar(&o.count, "count", 15, "rounds of the in-process benchmarks (each go test -count 1)")
	flag.StringVar(&o.benchtime, "benchtime", "300ms", "go test -benchtime of the in-process benchmarks")
	flag.StringVar(&o.input, "input", "", "parse in-process benchmark output from this file instead of running go test")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved rounds under the emulator")
	flag.IntVar(&o.coldPairs, "cold-pairs", 25, "paired cold starts under the emulator after the rounds (each bootstrap started, answering its first invocation, stopped)")
	flag.IntVar(&o.healthRuns, "health-runs", 3, "runs of paired cold starts to /_tilesieve/health against a bootstrap linking only aws-lambda-go")
	flag.IntVar(&o.healthPairs, "health-pairs", 9, "paired cold starts in each health run")
	flag.IntVar(&o.invokes, "invokes", 3000, "at most this many timed invocations per function, tile and round")
	flag.DurationVar(&o.perRun, "time", 4*time.Second, "at most this long per function, tile and round")
	flag.DurationVar(&o.latTime, "latency-time", 6*time.Second, "per function and round, memory hits timed one by one with S3 at 20 ms (0 skips)")
	flag.BoolVar(&o.render, "render", false, "only re-render the section from the saved results")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "invokebench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch o.only {
	case "", "micro", "emulator":
	default:
		return fmt.Errorf("-only %q: want micro or emulator", o.only)
	}
	runs := func(part string) bool { return !o.render && (o.only == "" || o.only == part) }
	var res Results
	if _, err := e2e.LoadJSON(o.results, "invoke", &res); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	start := time.Now()
	if !o.render {
		res.Machine = e2e.ThisMachine([]string{lambdarie.Version()})
		res.Command = "cd bench && go run ./cmd/invokebench -out ../docs/BENCHMARKS.md"
	}
	if runs("micro") {
		r, err := RunMicro(ctx, root, o)
		if err != nil {
			return fmt.Errorf("micro: %w", err)
		}
		r.Date = time.Now().UTC()
		res.Micro = &r
		if err := e2e.SaveJSON(o.results, "invoke", res); err != nil {
			return err
		}
	}
	if runs("emulator") {
		r, err := RunEmulator(ctx, root, o)
		if err != nil {
			return fmt.Errorf("emulator: %w", err)
		}
		r.Date = time.Now().UTC()
		res.Emulator = &r
		if err := e2e.SaveJSON(o.results, "invoke", res); err != nil {
			return err
		}
	}
	if o.render && res.Emulator != nil {
		res.Emulator.summarize() // the targets as this code states them
	}
	if err := docsection.Write(o.out, "invoke", Render(res)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "invokebench: wrote %s in %s\n", o.out, time.Since(start).Round(time.Second))
	return nil
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "invokebench: "+format+"\n", a...)
}
