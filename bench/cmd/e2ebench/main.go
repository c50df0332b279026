// Command e2ebench runs tilesieve's end-to-end benchmarks (bench/e2e) and
// writes their section of docs/BENCHMARKS.md, between the e2e markers, with
// the plots under docs/bench/. Raw results go to bench/results/e2e.json
// (gitignored); a run of some sections (-only) keeps the others' last results,
// or, without them, the others' text in -out.
//
//	cd bench && go run ./cmd/e2ebench -out ../docs/BENCHMARKS.md
//	cd bench && go run ./cmd/e2ebench -only iiif,purge -quick
//
// Sections: handler (0), iiif (1), storage (2, and 6: memory), disk (3),
// stage (4), purge (5), rss (6: peak RSS under a 404 flood, a big tile and
// an S3 hang), cost (7), archive (8: PMTiles archives). storage needs ab, wrk and nginx
// (e2e/install-tools.sh installs them).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
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
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

var sections = []string{"handler", "iiif", "disk", "stage", "purge", "storage", "rss", "cost", "archive"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2ebench:", err)
		os.Exit(1)
	}
}

func run() error {
	only := flag.String("only", "", "comma-separated sections to run ("+strings.Join(sections, ",")+"; memory = storage); empty runs all")
	out := flag.String("out", "../docs/BENCHMARKS.md", "markdown file to update between the e2e markers")
	plots := flag.String("plots", "", "directory of the PNG plots (default: bench/ beside -out)")
	results := flag.String("results", "results", "directory of the JSON results")
	quick := flag.Bool("quick", false, "tiny counts, for development")
	render := flag.Bool("render", false, "only re-render the markdown and plots from the saved results")
	flag.Parse()
	if *plots == "" {
		*plots = filepath.Join(filepath.Dir(*out), "bench")
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if s == "memory" {
			s = "storage"
		}
		if s != "" {
			want[s] = true
		}
	}
	for s := range want {
		if !slices.Contains(sections, s) {
			return fmt.Errorf("unknown section %q", s)
		}
	}
	runs := func(s string) bool { return !*render && (len(want) == 0 || want[s]) }

	var all e2e.All
	if _, err := e2e.LoadJSON(*results, "e2e", &all); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	step := func(name string, f func() error) error {
		if !runs(name) {
			return nil
		}
		t := time.Now()
		fmt.Fprintf(os.Stderr, "e2ebench: %s …\n", name)
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "e2ebench: %s done in %s\n", name, time.Since(t).Round(time.Millisecond))
		return e2e.SaveJSON(*results, "e2e", all)
	}
	pool := func() tileset.Pool { return tileset.NewPool(24, 320, 10_000, 60_000, 1) }
	if !*render {
		all.Machine = e2e.ThisMachine(toolVersions())
		all.Command = "cd bench && go run ./cmd/e2ebench -out ../docs/BENCHMARKS.md"
		if *quick {
			all.Command += " -quick"
		}
		if *only != "" {
			all.Command += " -only " + *only
		}
	}
	var p tileset.Pool
	if !*render {
		p = pool()
	}
	// handler, iiif and disk repeat their measurement reps times.
	reps := 5
	if *quick {
		reps = 1
	}
	err := func() error {
		for _, s := range []struct {
			name string
			run  func() error
		}{
			{"handler", func() error {
				set := tileset.Build(e2e.IIIFKeys("bench"), p)
				r, err := e2e.RunHandler(ctx, set, reps)
				all.Handler = &r
				return err
			}},
			{"iiif", func() error {
				r, err := e2e.RunIIIF(ctx, p, reps)
				all.IIIF = &r
				return err
			}},
			{"disk", func() error {
				r, err := e2e.RunDisk(ctx, p, reps, 6)
				all.Disk = &r
				return err
			}},
			{"stage", func() error {
				n, big := 10_000, int64(256<<20)
				if *quick {
					n, big = 500, 16<<20
				}
				r, err := e2e.RunStaging(ctx, n, big, []time.Duration{0, 5 * time.Millisecond})
				all.Staging = &r
				return err
			}},
			{"purge", func() error {
				const poll = 20 * time.Millisecond
				plan := []e2e.PurgeSpec{
					{Name: "steady", SyncInterval: 250 * time.Millisecond, Trials: 200},
					{Name: "steady", SyncInterval: time.Second, Trials: 40},
					{Name: "backlog", SyncInterval: time.Second, Trials: 12, Backlog: 1000},
					{Name: "journal +300 ms", SyncInterval: time.Second, Trials: 20, HeadDelay: 300 * time.Millisecond},
					{Name: "journal +300 ms, SYNC_TIMEOUT 200ms", SyncInterval: time.Second, SyncTimeout: 200 * time.Millisecond, Trials: 20, HeadDelay: 300 * time.Millisecond},
				}
				backlogs, checkReps := []int{1, 10, 100, 1000}, 5
				if *quick {
					for i := range plan {
						plan[i].Trials = 3
					}
					plan[2].Backlog, backlogs, checkReps = 100, []int{1, 10, 100}, 2
				}
				r := e2e.PurgeResult{Instances: 4}
				for _, sp := range plan {
					sp.Instances, sp.Poll = r.Instances, poll
					if sp.Backlog > 0 {
						sp.Name = fmt.Sprintf("backlog %d", sp.Backlog)
					}
					run, err := e2e.RunPurgeSpec(ctx, sp)
					if err != nil {
						return fmt.Errorf("%s: %w", sp.Name, err)
					}
					r.Runs = append(r.Runs, run)
					r.Targets = append(r.Targets, e2e.PurgeTargets(run)...)
				}
				c, err := e2e.RunCheckCost(ctx, 250*time.Millisecond, backlogs, checkReps)
				if err != nil {
					return fmt.Errorf("checks: %w", err)
				}
				r.Checks = &c
				r.Targets = append(r.Targets, e2e.CheckTargets(c)...)
				all.Purge = &r
				return nil
			}},
			{"storage", func() error {
				wd, _ := os.Getwd()
				sp := e2e.StorageParams{RepoRoot: filepath.Dir(wd), BenchDir: wd, MaxZoom: 5, ABN: 20000, ABC: 20,
					WrkDur: 5 * time.Second, WrkConns: 20, WrkThread: 2, FullShare: 7.0 / 8, Roomy: 4, ABPath: "/osm/5/10/12.jpg", Rounds: 5,
					Equal: e2e.EqualParams{Bytes: 12 << 10, Conns: []int{1, 20}, ABN: 8000, WrkDur: time.Second, Rounds: 15}}
				if *quick {
					sp.MaxZoom, sp.ABN, sp.WrkDur, sp.ABPath, sp.Rounds = 3, 2000, 2*time.Second, "/osm/3/2/2.jpg", 2
					sp.Equal.ABN, sp.Equal.WrkDur, sp.Equal.Rounds = 2000, time.Second, 2
				}
				for _, tool := range []string{"ab", "wrk", "nginx"} {
					if _, err := exec.LookPath(tool); err != nil {
						return fmt.Errorf("%s not found: run bench/e2e/install-tools.sh", tool)
					}
				}
				r, err := e2e.RunStorage(ctx, p, sp)
				all.Storage = &r
				return err
			}},
			{"rss", func() error {
				wd, _ := os.Getwd()
				r, err := e2e.RunRSS(ctx, e2e.DefaultRSSParams(filepath.Dir(wd), wd, *quick))
				all.RSS = &r
				return err
			}},
			{"archive", func() error {
				wd, _ := os.Getwd()
				r, err := e2e.RunArchive(ctx, p, e2e.DefaultArchiveParams(filepath.Dir(wd), wd, *quick))
				all.Archive = &r
				return err
			}},
			{"cost", func() error {
				cp := e2e.CostParams{Catalog: 1_000_000, ZipfS: 1.0, ViewerRates: []float64{10, 100, 1_000, 10_000}, Window: time.Hour, CDNHitRatio: 0.9,
					MemBytes: 512 << 20, TilesieveMemGB: 1.0, NoCacheMemGB: 0.5, HitMs: 1, MissMs: 25, SyncInterval: time.Second, MaxSimulated: 1_000_000}
				if *quick {
					cp.Catalog, cp.MaxSimulated = 100_000, 100_000
				}
				hit, miss := "assumed: section 0 is not in these results", "assumed: section 3 is not in these results"
				if all.Handler != nil && len(all.Handler.Modes) > 0 {
					cp.HitMs = math.Max(1, math.Ceil(all.Handler.Modes[0].NsPerOp/1e6))
					hit = "measured: section 0's memory hit, rounded up"
				}
				if all.Disk != nil {
					for _, row := range all.Disk.Rows {
						if row.Tier == "origin fetch" && row.LatencyMs == 20 {
							cp.MissMs = math.Ceil(float64(row.Mean) / float64(time.Millisecond))
							miss = "measured: section 3's origin fetch mean at 20 ms injected S3 latency, rounded up"
						}
					}
				}
				cp.DurationsFrom = "hit " + hit + "; fetch " + miss
				r, err := e2e.RunCost(cp, e2e.DefaultPrices)
				all.Cost = &r
				return err
			}},
		} {
			if err := step(s.name, s.run); err != nil {
				return err
			}
		}
		return nil
	}()
	if !*render {
		all.Elapsed = time.Since(start)
	}
	if serr := e2e.SaveJSON(*results, "e2e", all); serr != nil && err == nil {
		err = serr
	}
	section, rerr := e2e.Render(all, *plots, "bench")
	if *only != "" || *render {
		// Subsections whose results are not saved here keep their text.
		if b, err := os.ReadFile(*out); err == nil {
			begin, end := docsection.Markers("e2e")
			doc := string(b)
			if i, j := strings.Index(doc, begin), strings.Index(doc, end); i >= 0 && j > i {
				section, _ = e2e.Merge(strings.TrimPrefix(doc[i+len(begin):j], "\n"), section)
			}
		}
	}
	if werr := docsection.Write(*out, "e2e", section); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2ebench: wrote %s and %s/*.png in %s\n", *out, *plots, time.Since(start).Round(time.Second))
	return rerr
}

// toolVersions names the outside tools the run used.
func toolVersions() []string {
	var out []string
	for _, c := range [][]string{{"ab", "-V"}, {"wrk", "-v"}, {"nginx", "-v"}} {
		b, _ := exec.Command(c[0], c[1:]...).CombinedOutput()
		line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		if line == "" {
			line = c[0] + ": not installed"
		}
		out = append(out, strings.TrimSpace(line))
	}
	return append(out, "go-pmtiles v1.31.2", "gonum.org/v1/plot v0.17.0")
}
