package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e"
	"github.com/tilesieve/tilesieve/bench/e2e/lambdarie"
)

// HealthPair is one round of cold starts to a health answer: the tile
// function's bootstrap (to /_tilesieve/health), the minimal one and the
// required-packages one (to their fixed answers), started one after the
// other, each with GODEBUG=inittrace=1. It is named for the pair the
// targets compare.
type HealthPair struct {
	Tilesieve time.Duration `json:"tilesieve"` // the emulator's process start → the first answer
	Minimal   time.Duration `json:"minimal"`
	Required  time.Duration `json:"required,omitempty"`
	// TilesieveInit, MinimalInit and RequiredInit are the summed clock of
	// their package initialisers (inittrace).
	TilesieveInit time.Duration `json:"tilesieve_init"`
	MinimalInit   time.Duration `json:"minimal_init"`
	RequiredInit  time.Duration `json:"required_init,omitempty"`
}

// HealthRun is one run of paired cold starts.
type HealthRun struct {
	Pairs     []HealthPair `json:"pairs"`
	Ratio     float64      `json:"ratio"`      // median of the pairs' cold start ratios, tilesieve over minimal
	InitRatio float64      `json:"init_ratio"` // median of the pairs' package init ratios, tilesieve over minimal
	// ReqRatio and ReqInitRatio are the same medians for the
	// required-packages bootstrap over the minimal one: the least any
	// function linking the S3 client scores.
	ReqRatio     float64 `json:"req_ratio,omitempty"`
	ReqInitRatio float64 `json:"req_init_ratio,omitempty"`
}

// InitPkg is one package initialiser of the tile function's bootstrap: the
// median of its clock over every start, and what it allocates.
type InitPkg struct {
	Pkg    string        `json:"pkg"`
	Clock  time.Duration `json:"clock"`
	Bytes  int64         `json:"bytes"`
	Allocs int64         `json:"allocs"`
	Ours   bool          `json:"ours"` // a package of this module
	InMin  bool          `json:"in_minimal"`
	InReq  bool          `json:"in_required,omitempty"`
}

// healthBins are the bootstraps runHealth starts, by name.
type healthBins struct{ tiles, minimal, required string }

// runHealth starts the three bootstraps o.healthPairs times in each of
// o.healthRuns runs, the order rotating, and times each to its first
// health answer.
func runHealth(ctx context.Context, rie string, bins healthBins, tilesEnv func(disk string) []string, health []byte, tmp string, o options) ([]HealthRun, []InitPkg, error) {
	var runs []HealthRun
	tsInits, minInits, reqInits := map[string][]initLine{}, map[string]bool{}, map[string]bool{}
	for run := range o.healthRuns {
		var hr HealthRun
		var ratios, initRatios, reqRatios, reqInitRatios []float64
		for pair := range o.healthPairs {
			order := []string{"tilesieve", "minimal", "required"}
			order = append(order[pair%3:], order[:pair%3]...)
			if pair%2 == 1 {
				slices.Reverse(order)
			}
			var p HealthPair
			for _, fn := range order {
				log := filepath.Join(tmp, fmt.Sprintf("health-%s-%d-%d.log", fn, run, pair))
				// Where this bootstrap's start, package init and initialisers go.
				bin, env, seen := bins.minimal, []string{"GODEBUG=inittrace=1"}, minInits
				coldTo, initTo := &p.Minimal, &p.MinimalInit
				switch fn {
				case "tilesieve":
					bin, env = bins.tiles, append(tilesEnv(fmt.Sprintf("health-disk-%d-%d", run, pair)), "GODEBUG=inittrace=1")
					coldTo, initTo = &p.Tilesieve, &p.TilesieveInit
				case "required":
					bin, seen = bins.required, reqInits
					coldTo, initTo = &p.Required, &p.RequiredInit
				}
				emu, cold, err := lambdarie.Start(ctx, rie, bin, env, log, health)
				if err != nil {
					return nil, nil, fmt.Errorf("%s, health run %d pair %d: %w", fn, run+1, pair+1, err)
				}
				emu.Stop()
				lines, err := readInit(log)
				if err != nil {
					return nil, nil, err
				}
				var sum time.Duration
				for _, l := range lines {
					sum += l.clock
					if fn == "tilesieve" {
						tsInits[l.pkg] = append(tsInits[l.pkg], l)
					} else {
						seen[l.pkg] = true
					}
				}
				*coldTo, *initTo = cold, sum
			}
			hr.Pairs = append(hr.Pairs, p)
			ratios = append(ratios, float64(p.Tilesieve)/float64(p.Minimal))
			reqRatios = append(reqRatios, float64(p.Required)/float64(p.Minimal))
			if p.MinimalInit > 0 {
				initRatios = append(initRatios, float64(p.TilesieveInit)/float64(p.MinimalInit))
				reqInitRatios = append(reqInitRatios, float64(p.RequiredInit)/float64(p.MinimalInit))
			}
		}
		hr.Ratio, hr.InitRatio = median(ratios), median(initRatios)
		hr.ReqRatio, hr.ReqInitRatio = median(reqRatios), median(reqInitRatios)
		logf("  health run %d/%d: cold start %.2fx the minimal bootstrap's, package init %.2fx; the required packages' %.2fx and %.2fx (medians of %d)",
			run+1, o.healthRuns, hr.Ratio, hr.InitRatio, hr.ReqRatio, hr.ReqInitRatio, len(hr.Pairs))
		runs = append(runs, hr)
	}
	var pkgs []InitPkg
	for pkg, ls := range tsInits {
		var clocks []float64
		for _, l := range ls {
			clocks = append(clocks, float64(l.clock))
		}
		last := ls[len(ls)-1]
		pkgs = append(pkgs, InitPkg{Pkg: pkg, Clock: time.Duration(median(clocks)), Bytes: last.bytes, Allocs: last.allocs,
			Ours: strings.HasPrefix(pkg, "github.com/tilesieve/"), InMin: minInits[pkg], InReq: reqInits[pkg]})
	}
	slices.SortFunc(pkgs, func(a, b InitPkg) int { return int(b.Clock - a.Clock) })
	return runs, pkgs, nil
}

// initLine is one line of GODEBUG=inittrace=1:
//
//	init net/http @2.5 ms, 0.023 ms clock, 4712 bytes, 49 allocs
type initLine struct {
	pkg           string
	clock         time.Duration
	bytes, allocs int64
}

// readInit reads the bootstrap's inittrace lines from an emulator's log:
// those after the emulator's line that execs the bootstrap (the emulator,
// a Go program too, writes its own before it).
func readInit(path string) ([]initLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []initLine
	execd := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if !execd {
			execd = strings.Contains(sc.Text(), "(rapid) exec '")
			continue
		}
		if l, ok := parseInit(sc.Text()); ok {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

func parseInit(s string) (initLine, bool) {
	f := strings.Fields(s)
	if len(f) < 11 || f[0] != "init" || f[6] != "clock," {
		return initLine{}, false
	}
	ms, err1 := strconv.ParseFloat(f[4], 64)
	b, err2 := strconv.ParseInt(f[7], 10, 64)
	a, err3 := strconv.ParseInt(f[9], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return initLine{}, false
	}
	return initLine{pkg: f[1], clock: time.Duration(ms * float64(time.Millisecond)), bytes: b, allocs: a}, true
}

// healthTargets are the cold start targets: each run's median ratio to the
// minimal bootstrap.
func healthTargets(runs []HealthRun) []e2e.Target {
	var ts []e2e.Target
	for i, r := range runs {
		ts = append(ts,
			e2e.Target{What: fmt.Sprintf("under the emulator, run %d: cold start to the first /_tilesieve/health answer vs a bootstrap linking only aws-lambda-go (median of %d pairs)", i+1, len(r.Pairs)),
				Want: 1.1, Got: r.Ratio, Unit: "x"}.Check(),
			e2e.Target{What: fmt.Sprintf("under the emulator, run %d: package init (GODEBUG=inittrace=1, summed clock) vs the minimal bootstrap's (median of %d pairs)", i+1, len(r.Pairs)),
				Want: 1.5, Got: r.InitRatio, Unit: "x"}.Check())
		if r.ReqInitRatio > 0 {
			const floor = "a bootstrap linking aws-lambda-go and the S3 client alone (bench/cmd/reqlambda): %.2fx"
			n := len(ts) - 2
			ts[n].Reason, ts[n+1].Reason = fmt.Sprintf(floor, r.ReqRatio), fmt.Sprintf(floor, r.ReqInitRatio)
		}
	}
	return ts
}
