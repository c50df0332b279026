package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// round is one go test run's output for every mode and size, with
// tilesieve's buffered ns/op scaled by k.
func round(k float64) string {
	var b strings.Builder
	b.WriteString("goos: linux\npkg: github.com/tilesieve/tilesieve/functions/tiles\n")
	for _, m := range Modes {
		for i, size := range Sizes {
			ns, allocs := float64(1000*(i+1)), 30
			if m.Bench == "InvokeBuffered" {
				ns, allocs = ns*k, 38
			}
			fmt.Fprintf(&b, "Benchmark%s/%s-2 \t 1000\t %s ns/op\t 1.00 MB/s\t 2048 B/op\t %d allocs/op\n",
				m.Bench, size, strconv.FormatFloat(ns, 'f', -1, 64), allocs)
		}
	}
	return b.String() + "PASS\nok  \tgithub.com/tilesieve/tilesieve/functions/tiles\t9.9s\n"
}

func TestMicroFromOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "out.txt")
	// Three rounds: the median of 1.2, 1.4 and 3.0 is 1.4.
	if err := os.WriteFile(in, []byte("round 1\n"+round(1.2)+"round 2\n"+round(3.0)+"round 3\n"+round(1.4)), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := RunMicro(t.Context(), dir, options{input: in, count: 3, benchtime: "1x", results: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Samples["InvokeBuffered"]["30KB"]; got.NsPerOp != 2800 || got.Runs != 3 || got.AllocsPerOp != 38 || got.BytesPerOp != 2048 {
		t.Fatalf("buffered 30KB: got %+v, want the median 2800 ns/op of 3 runs", got)
	}
	if got := r.Ratio("InvokeBuffered", "InvokeBufferedFloor", "300KB"); got < 1.399 || got > 1.401 {
		t.Fatalf("ratio: got %v, want 1.4", got)
	}
	met := map[string]bool{}
	for _, tg := range r.Targets {
		met[tg.What] = tg.Met
	}
	if !met["buffered memory hit 1KB: ns/op vs floor"] || met["buffered memory hit: allocs/op of the whole invocation (largest over sizes)"] ||
		!met["buffered memory hit: allocs/op tilesieve adds to the floor's (largest over sizes)"] {
		t.Fatalf("targets: %+v", r.Targets)
	}
	doc := Render(Results{Micro: &r, Emulator: sampleEmulator()})
	for _, want := range []string{"| 30KB | buffered, memory hit | 2.8 µs | 38 | 2.0 KiB | 1.40x | +8 |", "| 30KB | 500 | 400 | 1.25x | 1.25x |", "tilesieve 50.0 ms, floor 20.0 ms", "in 0 pairs started alone after the rounds (each bootstrap started, answering its first invocation and stopped; the two one after the other, the order alternating): 2.50x; median 2.50x", "**missed**"} {
		if !strings.Contains(doc, want) {
			t.Errorf("section lacks %q:\n%s", want, doc)
		}
	}
}

func sampleEmulator() *EmulatorResult {
	r := &EmulatorResult{Rounds: 1, ColdStart: map[string]time.Duration{}}
	for _, fn := range Functions {
		run := EmuRun{Function: fn, Round: 1, ColdStart: 20 * time.Millisecond}
		per := 400.0
		if fn == "tilesieve" {
			run.ColdStart, per = 50*time.Millisecond, 500
		}
		for _, n := range EmuSizes {
			run.Tiles = append(run.Tiles, EmuTile{Size: sizeName(n), PerSec: per, PayloadBytes: n * 4 / 3})
		}
		r.Runs = append(r.Runs, run)
	}
	r.summarize()
	return r
}

// TestColdStartRatio: the cold start target is the median of the ratios of
// the rounds and of the cold pairs after them, missed above 1.1x.
func TestColdStartRatio(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		ts, fl  []time.Duration // per round
		pairs   [][2]time.Duration
		want    float64
		wantMet bool
	}{
		{"met", []time.Duration{30, 33, 40}, []time.Duration{30, 30, 30}, nil, 1.1, true},
		{"missed", []time.Duration{40, 33, 60}, []time.Duration{30, 30, 30}, nil, 40.0 / 30, false},
		{"pairs count", []time.Duration{40}, []time.Duration{30}, [][2]time.Duration{{30, 30}, {31, 30}, {90, 30}, {30, 31}}, 31.0 / 30, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &EmulatorResult{Rounds: len(tt.ts), ColdStart: map[string]time.Duration{}}
			for i := range tt.ts {
				r.Runs = append(r.Runs, EmuRun{Function: "tilesieve", Round: i + 1, ColdStart: tt.ts[i] * time.Millisecond},
					EmuRun{Function: "floor", Round: i + 1, ColdStart: tt.fl[i] * time.Millisecond})
			}
			for _, p := range tt.pairs {
				r.ColdPairs = append(r.ColdPairs, ColdPair{Tilesieve: p[0] * time.Millisecond, Floor: p[1] * time.Millisecond})
			}
			r.summarize()
			if r.ColdRatio < tt.want-1e-9 || r.ColdRatio > tt.want+1e-9 {
				t.Errorf("got ratio %v, want %v", r.ColdRatio, tt.want)
			}
			for _, tg := range r.Targets {
				if strings.Contains(tg.What, "cold start") && tg.Met != tt.wantMet {
					t.Errorf("got met %v, want %v (%+v)", tg.Met, tt.wantMet, tg)
				}
			}
		})
	}
}

// TestLatencyTargets: p99 within 1.5x p50 (medians over the rounds), and no
// memory;dur as long as S3's latency; both rendered with the rounds' rows.
func TestLatencyTargets(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tt := range []struct {
		name             string
		p50, p99, memDur time.Duration
		wantP99, wantDur bool
	}{
		{"met", ms(2), ms(2.9), ms(0.05), true, true},
		{"p99 missed", ms(2), ms(23), ms(0.05), false, true},
		{"a hit waited", ms(2), ms(2.5), ms(22.7), true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := sampleEmulator()
			for i := range r.Runs {
				r.Runs[i].Latency = &EmuLatency{Invokes: 100, P50: tt.p50, P99: tt.p99, P999: tt.p99, Max: tt.p99}
				if r.Runs[i].Function == "tilesieve" {
					r.Runs[i].Latency.MemoryDurMax = tt.memDur
				}
			}
			r.summarize()
			met := map[string]bool{}
			for _, tg := range r.Targets {
				switch {
				case strings.Contains(tg.What, "p99 vs p50"):
					met["p99"] = tg.Met
				case strings.Contains(tg.What, "memory;dur"):
					met["dur"] = tg.Met
				}
			}
			if got, ok := met["p99"]; !ok || got != tt.wantP99 {
				t.Errorf("p99 target: got met %v (present %v), want %v", got, ok, tt.wantP99)
			}
			if got, ok := met["dur"]; !ok || got != tt.wantDur {
				t.Errorf("memory;dur target: got met %v (present %v), want %v", got, ok, tt.wantDur)
			}
			doc := Render(Results{Emulator: r})
			if want := fmt.Sprintf("| tilesieve | 1 | 100 | %s | %s |", nsStr(float64(tt.p50)), nsStr(float64(tt.p99))); !strings.Contains(doc, want) {
				t.Errorf("section lacks %q:\n%s", want, doc)
			}
		})
	}
}

func TestMemoryDur(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		payload string
		want    time.Duration
	}{
		{`{"headers":{"Server-Timing":"memory;dur=0.008"}}`, 8 * time.Microsecond},
		{`{"headers":{"Server-Timing":"memory;dur=22.7, total;dur=23"}}`, 22700 * time.Microsecond},
		{`{"headers":{}}`, 0},
	} {
		if got := memoryDur([]byte(tt.payload)); got != tt.want {
			t.Errorf("memoryDur(%s): got %v, want %v", tt.payload, got, tt.want)
		}
	}
}
