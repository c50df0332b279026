package main

import (
	"strings"
	"testing"
)

// out is run's output for two rounds, the second in the other order, with
// go test's other lines around the results.
const out = `round 1
goos: linux
BenchmarkPurgeUnderFills/fsync-2   	     300	  27190108 ns/op	        12.00 fills/purge	         7.000 guard-p50-µs	      8000 guard-p99-µs	      5855 p50-µs	    298000 p99-µs
PASS
BenchmarkPurgeUnderFills/nofsync-2 	     300	  10681875 ns/op	         4.000 fills/purge	         5.000 guard-p50-µs	      4000 guard-p99-µs	       128.0 p50-µs	     74629 p99-µs
PASS
round 2
BenchmarkPurgeUnderFills/nofsync-2 	     300	  10681875 ns/op	         4.000 fills/purge	        10.00 guard-p50-µs	      2000 guard-p99-µs	       100.0 p50-µs	     50000 p99-µs
BenchmarkPurgeUnderFills/fsync-2   	     300	  27190108 ns/op	        10.00 fills/purge	         5.000 guard-p50-µs	      1000 guard-p99-µs	      4000 p50-µs	    200000 p99-µs
`

func TestParse(t *testing.T) {
	r, err := Parse([]byte(out), Run{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rounds) != 2 {
		t.Fatalf("rounds: got %d, want 2", len(r.Rounds))
	}
	// Ratios are taken within a round, whatever order the modes ran in.
	if got, want := r.Ratios["guard-p99-µs"], []float64{2, 0.5}; !equal(got, want) {
		t.Errorf("guard p99 ratios: got %v, want %v", got, want)
	}
	if got, want := r.Ratios["guard-p50-µs"], []float64{1.4, 0.5}; !equal(got, want) {
		t.Errorf("guard p50 ratios: got %v, want %v", got, want)
	}
	if got := r.Medians["fsync"]["fills/purge"]; got != 11 {
		t.Errorf("fsync fills/purge median: got %v, want 11", got)
	}
	if len(r.Targets) != 1 || r.Targets[0].Got != 0.95 || !r.Targets[0].Met {
		t.Errorf("targets: got %+v, want the guard p50 ratio 0.95, met", r.Targets)
	}
	md := Render(r)
	for _, want := range []string{"| with fsync | 6 µs | 4.50 ms | 4.93 ms | 249.00 ms | 11.0 |", "| guard-p99 | 2.00, 0.50 | 1.25x |", "| met |"} {
		if !strings.Contains(md, want) {
			t.Errorf("rendered section lacks %q:\n%s", want, md)
		}
	}
}

func TestParseRefusesIncompleteRounds(t *testing.T) {
	for name, raw := range map[string]string{
		"no rounds":    "BenchmarkPurgeUnderFills/fsync-2 300 1 ns/op\n",
		"a mode short": strings.Join(strings.Split(out, "\n")[:6], "\n") + "\nround 2\n",
		"a unit short": "round 1\nBenchmarkPurgeUnderFills/fsync-2 300 1 ns/op 1 fills/purge\nBenchmarkPurgeUnderFills/nofsync-2 300 1 ns/op 1 fills/purge\n",
		"a zero hold":  strings.Replace(out, "7.000 guard-p50-µs", "0 guard-p50-µs", 1),
	} {
		if _, err := Parse([]byte(raw), Run{}); err == nil {
			t.Errorf("%s: parsed, want an error", name)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-9 || d < -1e-9 {
			return false
		}
	}
	return true
}

// diskOut is the disk part's output for two rounds, the second in the other
// order.
const diskOut = `round 1
BenchmarkGet/Get-2           	   20000	     24000 ns/op	   13320 B/op	      14 allocs/op
BenchmarkGet/ReadFileFloor-2 	   20000	     30000 ns/op	   13960 B/op	       5 allocs/op
round 2
BenchmarkGet/ReadFileFloor-2 	   20000	     25000 ns/op	   13960 B/op	       5 allocs/op
BenchmarkGet/Get-2           	   20000	     30000 ns/op	   13320 B/op	      14 allocs/op
`

func TestParseDisk(t *testing.T) {
	d, err := ParseDisk([]byte(diskOut), Run{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Ratios, []float64{0.8, 1.2}; !equal(got, want) {
		t.Errorf("ratios: got %v, want %v", got, want)
	}
	if len(d.Targets) != 1 || d.Targets[0].Got != 1.0 || !d.Targets[0].Met {
		t.Errorf("targets: got %+v, want the median ratio 1.00, met", d.Targets)
	}
	md := RenderDisk(d)
	for _, want := range []string{"| Get | 27000 | 13320 | 14 |", "| ReadFileFloor | 27500 | 13960 | 5 |", "Get ÷ floor: 0.80, 1.20.", "| met |"} {
		if !strings.Contains(md, want) {
			t.Errorf("rendered section lacks %q:\n%s", want, md)
		}
	}
	if _, err := ParseDisk([]byte(strings.Replace(diskOut, "BenchmarkGet/Get-2           	   20000	     30000 ns/op", "BenchmarkGet/Other-2 	 20000	 30000 ns/op", 1)), Run{}); err == nil {
		t.Error("a round without Get parsed, want an error")
	}
}
