package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e"
)

// Render writes the invoke section.
func Render(r Results) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m := r.Machine
	p("## Invocations (what Lambda runs)\n\n")
	p("Regenerate with `make bench-invoke`, which runs `%s` (`-only micro` or `-only emulator` runs one part and keeps the other's last results). ", r.Command)
	p("Machine: %s, %s, `nproc` = %d, %s (kernel %s); %s. ", m.GoVersion, m.CPU, m.NProc, m.OS, m.Kernel, strings.Join(m.Tools, "; "))
	p("Everything runs on this one machine on 127.0.0.1, sharing its cores; every comparison is a ratio of runs made side by side in the same run.\n\n")

	var ts []e2e.Target
	if r.Micro != nil {
		ts = append(ts, r.Micro.Targets...)
	}
	if r.Emulator != nil {
		ts = append(ts, r.Emulator.Targets...)
	}
	if len(ts) > 0 {
		p("### Targets\n\n| target | want | got | verdict | note |\n|---|---|---|---|---|\n")
		for _, t := range ts {
			op := "≤"
			if t.Higher {
				op = "≥"
			}
			verdict := "**missed**"
			if t.Met {
				verdict = "**met**"
			}
			unit := t.Unit
			if unit != "x" {
				unit = " " + unit
			}
			p("| %s | %s %s%s | %s%s | %s | %s |\n", t.What, op, num(t.Want), unit, num(t.Got), unit, verdict, t.Reason)
		}
		p("\n")
	}
	if r.Micro != nil {
		renderMicro(p, *r.Micro)
	}
	if r.Emulator != nil {
		renderEmulator(p, *r.Emulator)
		renderDisk(p, *r.Emulator, r.Micro)
		renderHealth(p, *r.Emulator)
	}
	return b.String()
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.2f", v)
}

func renderMicro(p func(string, ...any), r MicroResult) {
	p("### One invocation in process\n\n")
	if !r.Date.IsZero() {
		p("Measured %s. ", r.Date.Format("2006-01-02 15:04 MST"))
	}
	p("The benchmarks of `%s` (functions/tiles/invoke_bench_test.go), from the repository root: the test binary is built once (`go test -c`) and each benchmark runs at each size in a process of its own, "+
		"right after or before its floor (the order alternating from round to round), %d rounds. Each cell is the median of the rounds; "+
		"a memory hit's ratio to its floor is the median of the rounds' ratios, each taken between runs seconds apart, so a noisy spell on this shared machine falls on both. ", r.Command, r.Rounds)
	p("One op is one whole invocation through aws-lambda-go's own handler " +
		"(`lambda.NewHandler(...).Invoke`): the event's JSON bytes in (a function-URL event as CloudFront forwards it), the payload's bytes out. " +
		"The buffered floor decodes only `rawPath` and returns the same tile's answer, encoded once at start, as an `io.Reader`; " +
		"the streaming floor is `lambdaurl.Wrap` over a handler that writes prebuilt headers and the bytes. " +
		"Disk hits and origin fetches run with a memory tier that admits nothing (S3 in process on loopback).\n\n")
	p("| tile | mode | ns/op | allocs/op | B/op | vs floor (ns/op) | allocs over the floor's |\n|---|---|---:|---:|---:|---:|---:|\n")
	floorOf := map[string]string{"InvokeBuffered": "InvokeBufferedFloor", "InvokeStreaming": "InvokeStreamingFloor",
		"InvokeBufferedDisk": "InvokeBufferedFloor", "InvokeBufferedOrigin": "InvokeBufferedFloor", "InvokeStreamingDisk": "InvokeStreamingFloor",
		"InvokeBufferedMetrics": "InvokeBuffered"}
	for _, size := range Sizes {
		for _, m := range Modes {
			s := r.Samples[m.Bench][size]
			ratio, over := "", ""
			if f, ok := floorOf[m.Bench]; ok {
				ratio = fmt.Sprintf("%.2fx", r.Ratio(m.Bench, f, size))
				over = fmt.Sprintf("%+.0f", s.AllocsPerOp-r.Samples[f][size].AllocsPerOp)
			}
			p("| %s | %s | %s | %.0f | %s | %s | %s |\n", size, m.What, nsStr(s.NsPerOp), s.AllocsPerOp, bytesStr(s.BytesPerOp), ratio, over)
		}
	}
	p("\nThe metrics-on row (what the tile function records per request: requests by tier and tileset, bytes, latency, and the flush check) is timed in a process of its own, like the others; its ratio, and the metrics targets, come from `BenchmarkInvokeMetricsPaired` instead: " +
		"metrics off and on as two tile functions in one process, invoked in turn, each invocation timed on its own, and the ratio of their totals (on/off); the median over the rounds. " +
		"Two processes' runs of the same invocation differ here by more than metrics cost (by a third at 300 KB). Its rounds' ratios:")
	var per []string
	for _, size := range Sizes {
		var rs []string
		for _, v := range r.Metrics[size] {
			rs = append(rs, fmt.Sprintf("%.2f", v))
		}
		per = append(per, size+" "+strings.Join(rs, ", "))
	}
	p(" %s. ", strings.Join(per, "; "))
	p("Disk hits are compared with the floor of their mode and origin fetches with the buffered floor (memory-hit floors), to show what leaving memory costs. " +
		"The allocations the floor makes are aws-lambda-go's (decoding the event into the handler's argument, copying the returned reader into the payload) " +
		"and are paid by every Go function; the last column is what tilesieve adds to them. " +
		"Where a memory hit's ratio misses, look at a CPU profile of the pair " +
		"(`go test -run '^$' -bench 'BenchmarkInvokeBuffered(Floor)?$/^30KB$' -cpuprofile cpu.out ./functions/tiles/`, one benchmark at a time): " +
		"most of both is aws-lambda-go's `io.ReadAll` of the returned reader (growslice and memclr; in process only, since the real runtime streams the reader to the Runtime API), " +
		"its event decoding (`encoding/json`) and GC, and the loopback timings swing by 2x from round to round on this shared machine, " +
		"which is why the emulator's whole-process numbers below are the ones to judge by.\n\n")
}

func renderEmulator(p func(string, ...any), r EmulatorResult) {
	p("### Under the Lambda Runtime Interface Emulator\n\n")
	if !r.Date.IsZero() {
		p("Measured %s. ", r.Date.Format("2006-01-02 15:04 MST"))
	}
	p("The tile function's real `bootstrap` and the floor's (`bench/cmd/floorlambda`: a minimal Go Lambda that, at start, encodes each tile's buffered answer once and returns it as an `io.Reader`), "+
		"both built as Lambda builds them (`%s`), each run under `aws-lambda-rie` on 127.0.0.1 with S3 in the benchmark's process on loopback. "+
		"A Go client posts the event to the emulator's invoke endpoint, one invocation at a time over one kept-alive connection, "+
		"after one warming invocation per tile: at most %d invocations or %s per function, tile and round, whichever ends first; "+
		"%d rounds, the order of the two functions alternating from round to round. The tile function runs in BUFFERED mode with its defaults "+
		"(its journal check once per SYNC_INTERVAL included); every timed answer is checked to be the memory hit's payload.\n\n",
		r.Build, r.MaxInvokes, r.MaxTime, r.Rounds)
	p("| tile | tilesieve invocations/s | floor invocations/s | ratio (of the medians) | ratio in each round | payload bytes (tilesieve / floor) |\n|---|---:|---:|---:|---|---|\n")
	for _, s := range r.Summary {
		var rr []string
		for _, x := range s.RoundRatios {
			rr = append(rr, fmt.Sprintf("%.2fx", x))
		}
		p("| %s | %.0f | %.0f | %.2fx | %s | %d / %d |\n", s.Size, s.Tilesieve, s.Floor, s.Ratio, strings.Join(rr, ", "), s.TSPayload, s.FloorPayload)
	}
	p("\nCold start, from starting the emulator's process to the first answer (the emulator's own start, the bootstrap's start and init, and the first invocation; "+
		"for the tile function that first answer is a miss fetched from S3, with the journal read beside init and that miss, as its tiers start empty), median of the rounds: "+
		"tilesieve %s, floor %s. Tilesieve over the floor in each round and then in %d pairs started alone after the rounds (each bootstrap started, answering its first invocation and stopped; the two one after the other, the order alternating): %s; median %.2fx.\n\n",
		durStr(r.ColdStart["tilesieve"]), durStr(r.ColdStart["floor"]), len(r.ColdPairs), ratioList(r.ColdRatios), r.ColdRatio)
	if len(r.Bootstrap) > 0 {
		arch := "this machine's architecture"
		if _, a, ok := strings.Cut(r.Build, "GOARCH="); ok {
			arch = "linux/" + strings.Fields(a)[0]
		}
		p("Bootstrap sizes as built for this run (%s): tilesieve %d bytes, floor %d bytes, minimal (`bench/cmd/minlambda`, aws-lambda-go alone) %d bytes, S3 client only (`bench/cmd/reqlambda`) %d bytes.",
			arch, r.Bootstrap["tilesieve"], r.Bootstrap["floor"], r.Bootstrap["minimal"], r.Bootstrap["required"])
		if len(r.Arm64) > 0 {
			p(" As `make build` builds them (linux/arm64), against their budgets in .ci/size-budget (`make size-check` fails past 5%% over): tiles %s, worker %s.",
				sizeVsBudget(r.Arm64["tiles"], r.Budgets["tiles"]), sizeVsBudget(r.Arm64["worker"], r.Budgets["worker"]))
		}
		p("\n\n")
	}
	if ts, fl := r.latencies("tilesieve"), r.latencies("floor"); len(ts) > 0 {
		p("Memory hits with S3 at %v (s3local's first-byte latency, `Faults().SetLatency`, set after the invocations above, in the same processes): the %s tile, "+
			"invocations one at a time, each timed alone from the client, for %s per function and round (at most %d); the tile function's journal check reads S3 at that latency once per SYNC_INTERVAL (1 s), "+
			"started ahead of its due time beside the answer, so no hit whose copy is still vouched for waits for it. "+
			"**memory;dur** is the tile function's own Server-Timing for the tier lookup, which would include a wait for the check; "+
			"**≥ %v** counts invocations as long as one S3 request.\n\n",
			EmuS3Latency, sizeName(EmuLatencySize), r.LatTime, r.MaxInvokes, EmuS3Latency)
		p("| function | round | invocations | p50 | p99 | p99.9 | max | ≥ %v | largest memory;dur |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", EmuS3Latency)
		for _, run := range r.Runs {
			if l := run.Latency; l != nil {
				md := "–"
				if run.Function == "tilesieve" {
					md = nsStr(float64(l.MemoryDurMax))
				}
				p("| %s | %d | %d | %s | %s | %s | %s | %d | %s |\n", run.Function, run.Round, l.Invokes, nsStr(float64(l.P50)), nsStr(float64(l.P99)), nsStr(float64(l.P999)), nsStr(float64(l.Max)), l.Slow, md)
			}
		}
		med := func(ls []EmuLatency, f func(EmuLatency) time.Duration) time.Duration {
			var xs []float64
			for _, l := range ls {
				xs = append(xs, float64(f(l)))
			}
			return time.Duration(median(xs))
		}
		p50 := func(l EmuLatency) time.Duration { return l.P50 }
		p99 := func(l EmuLatency) time.Duration { return l.P99 }
		p("\nMedians over the rounds: tilesieve p50 %s, p99 %s (%.2fx its p50)", nsStr(float64(med(ts, p50))), nsStr(float64(med(ts, p99))), float64(med(ts, p99))/float64(med(ts, p50)))
		if len(fl) > 0 {
			p("; floor p50 %s, p99 %s (%.2fx its p50): the emulator's and the machine's own spread, in the same run", nsStr(float64(med(fl, p50))), nsStr(float64(med(fl, p99))), float64(med(fl, p99))/float64(med(fl, p50)))
		}
		p(".\n\n")
		var waited bool
		for _, l := range ts {
			waited = waited || l.MemoryDurMax >= EmuS3Latency
		}
		if waited {
			p("A memory;dur of S3's latency or more is a hit that waited for the journal check: a check due runs beside every answer the last good check still vouches for, " +
				"so only a request past that window (SYNC_INTERVAL + SYNC_TIMEOUT without a good check) waits for it (fail closed). " +
				"`go test -run '^$' -bench BenchmarkMemoryHitJournal20ms ./shared/tiers/` measures the same in process.\n\n")
		}
	}
	if r.LoadBefore != "" {
		p("Load average (1, 5, 15 min; /proc/loadavg) as the emulator part began: %s; as it ended: %s.\n\n", r.LoadBefore, r.LoadAfter)
	}
	p("| function | round | cold start |")
	for _, s := range r.Summary {
		p(" %s invocations/s |", s.Size)
	}
	p("\n|---|---:|---:|")
	for range r.Summary {
		p("---:|")
	}
	p("\n")
	for _, run := range r.Runs {
		p("| %s | %d | %s |", run.Function, run.Round, durStr(run.ColdStart))
		for _, t := range run.Tiles {
			p(" %.0f |", t.PerSec)
		}
		p("\n")
	}
	p("\n")
}

func ratioList(rs []float64) string {
	var out []string
	for _, x := range rs {
		out = append(out, fmt.Sprintf("%.2fx", x))
	}
	return strings.Join(out, ", ")
}

func nsStr(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func bytesStr(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func durStr(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// sizeVsBudget is "n bytes (budget b, +x%)".
func sizeVsBudget(n, budget int64) string {
	if budget == 0 {
		return fmt.Sprintf("%d bytes (no budget)", n)
	}
	return fmt.Sprintf("%d bytes (budget %d, %+.1f%%)", n, budget, 100*float64(n-budget)/float64(budget))
}

// renderDisk is the disk hits under the emulator, with the allocations of
// the same invocations in process.
func renderDisk(p func(string, ...any), r EmulatorResult, m *MicroResult) {
	if len(r.DiskRuns) == 0 {
		return
	}
	p("#### Disk hits under the emulator\n\n")
	p("The same bootstrap with `MEM_CACHE_BYTES=1MiB` (its memory tier admits no entry over 128 KiB) answering the %s tile from its disk tier, "+
		"in each invoke mode, one process per mode and round (after the floor of the round above), after the miss that fills the disk tier and one warming hit; "+
		"invocations as above. A buffered disk hit reads its body and builds its payload in pooled buffers (the runtime's Close gives them back); "+
		"a streamed one is copied to the runtime's stream through a pooled buffer. The floor is the encode-once floor's memory hit of the same tile: what leaving memory costs. "+
		"Allocations per invocation are the in-process benchmarks' of the same invocation (`BenchmarkInvokeBufferedDisk`, `BenchmarkInvokeStreamingDisk`, above), "+
		"aws-lambda-go's own included.\n\n", sizeName(EmuDiskSize))
	p("| mode | invocations/s (median) | vs floor | each round | allocs per invocation (in process) | B per invocation |\n|---|---:|---:|---|---:|---:|\n")
	for _, s := range r.DiskSummary {
		var rounds []string
		for _, run := range r.DiskRuns {
			if run.Function == diskFunction(s.Mode) && len(run.Tiles) > 0 {
				rounds = append(rounds, fmt.Sprintf("%.0f", run.Tiles[0].PerSec))
			}
		}
		allocs, bytes := "–", "–"
		bench := "InvokeBufferedDisk"
		if s.Mode == "RESPONSE_STREAM" {
			bench = "InvokeStreamingDisk"
		}
		if m != nil {
			if x, ok := m.Samples[bench][sizeName(EmuDiskSize)]; ok {
				allocs, bytes = fmt.Sprintf("%.0f", x.AllocsPerOp), bytesStr(x.BytesPerOp)
			}
		}
		p("| %s | %.0f | %.2fx | %s | %s | %s |\n", s.Mode, s.PerSec, s.VsFloor, strings.Join(rounds, ", "), allocs, bytes)
	}
	p("\n")
}

// renderHealth is the cold starts to the health check against the minimal
// bootstrap, and the tile function's package initialisers.
func renderHealth(p func(string, ...any), r EmulatorResult) {
	if len(r.HealthRuns) == 0 {
		return
	}
	p("#### Cold start to the health check, against a bootstrap linking only aws-lambda-go\n\n")
	p("%d runs of %d rounds: the tile function's bootstrap (as above, with empty tiers, S3 on loopback), `bench/cmd/minlambda` (aws-lambda-go and a fixed 200) "+
		"and `bench/cmd/reqlambda` (the same with the S3 client of aws-sdk-go-v2 built at start: the packages every function of the project must link), "+
		"each started under `aws-lambda-rie` with `GODEBUG=inittrace=1` and timed from the emulator's process start to the first answer of `/_tilesieve/health` "+
		"(`events/url-health.json`; the other two answer any event), one after the other, the order rotating. "+
		"Package init is the summed clock of the `init` lines the bootstrap wrote. Ratios are the medians of the rounds' ratios to the minimal bootstrap.\n\n", len(r.HealthRuns), len(r.HealthRuns[0].Pairs))
	p("| run | cold start, tilesieve (median) | minimal (median) | S3 client only (median) | tilesieve vs minimal | rounds' ratios | S3 client only vs minimal | package init, tilesieve | minimal | S3 client only | tilesieve vs minimal | S3 client only vs minimal |\n|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for i, run := range r.HealthRuns {
		var ts, mn, rq, ti, mi, ri []float64
		var rs []string
		for _, pr := range run.Pairs {
			ts, mn, rq = append(ts, float64(pr.Tilesieve)), append(mn, float64(pr.Minimal)), append(rq, float64(pr.Required))
			ti, mi, ri = append(ti, float64(pr.TilesieveInit)), append(mi, float64(pr.MinimalInit)), append(ri, float64(pr.RequiredInit))
			rs = append(rs, fmt.Sprintf("%.2f", float64(pr.Tilesieve)/float64(pr.Minimal)))
		}
		p("| %d | %s | %s | %s | %.2fx | %s | %.2fx | %s | %s | %s | %.2fx | %.2fx |\n", i+1, durStr(time.Duration(median(ts))), durStr(time.Duration(median(mn))),
			durStr(time.Duration(median(rq))), run.Ratio, strings.Join(rs, ", "), run.ReqRatio,
			nsStr(median(ti)), nsStr(median(mi)), nsStr(median(ri)), run.InitRatio, run.ReqInitRatio)
	}
	p("\nThe tile function's package initialisers, largest first (median clock over every start; ours marked, and those the minimal or the S3-client-only bootstrap runs too):\n\n")
	p("| package | clock | bytes | allocs | |\n|---|---:|---:|---:|---|\n")
	for i, pkg := range r.Inits {
		if i == 15 {
			break
		}
		note := ""
		switch {
		case pkg.Ours:
			note = "this module"
		case pkg.InMin:
			note = "also the minimal bootstrap's"
		case pkg.InReq:
			note = "also the S3-client-only bootstrap's"
		}
		p("| `%s` | %s | %d | %d | %s |\n", pkg.Pkg, nsStr(float64(pkg.Clock)), pkg.Bytes, pkg.Allocs, note)
	}
	p("\n")
}
