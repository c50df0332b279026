package main

import (
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/bench/cachebench"
)

// Output of one round and one pair, as go test prints it.
const (
	roundOut = `BenchmarkGet/tilesieve   	 1000000	       605.8 ns/op	       0 B/op	       0 allocs/op
BenchmarkGet/otter       	 1000000	      1044 ns/op	       0 B/op	       0 allocs/op
BenchmarkGetSet7525/tilesieve           	  417434	      1910 ns/op	       2 B/op	       0 allocs/op
BenchmarkGetSet7525/otter               	  769260	       525.0 ns/op	       4 B/op	       0 allocs/op
BenchmarkDeletePrefixBulk/tilesieve           	      64	    138991 ns/op	      3424 keys/op	        37.77 median-ns/key	        40.59 ns/key	      64 B/op	       3 allocs/op
`
	pairOut = `BenchmarkGet/tilesieve         	 9422696	        42.50 ns/op	       0 B/op	       0 allocs/op
BenchmarkGet/otter             	 4843454	        95.02 ns/op	       0 B/op	       0 allocs/op
BenchmarkGetSet7525/tilesieve  	 2340576	       176.9 ns/op	       3 B/op	       0 allocs/op
BenchmarkGetSet7525/otter      	 3290734	       166.1 ns/op	       6 B/op	       0 allocs/op
`
)

// TestRender checks that the section reads its numbers from the right
// runs and that no text reaches the page as a broken format (a literal %
// in text passed as a format prints as "%!").
func TestRender(t *testing.T) {
	res, err := parseBench(strings.NewReader(roundOut))
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := parseBench(strings.NewReader(pairOut))
	if err != nil {
		t.Fatal(err)
	}
	r := report{
		machine: machineInfo{goVersion: "go", cpuModel: "cpu", nproc: "2"},
		loads:   []string{"start 1.00"},
		cmds:    benchCommands(options{cpu: "1", count: 1, benchtime: "1x", bulktime: "1x"}),
		opts:    options{cpu: "1", count: 1, benchtime: "1x", pairs: 1},
		res:     res,
		pairs:   pairs,
		w:       cachebench.Default(),
	}
	out := r.render()
	for _, want := range []string{
		"0.94x (-cpu 1; pairs 0.94) [rounds: 0.27x; 0.27]",               // GetSet7525 from the pair, the round beside it
		"37.8 ns/key (-cpu 1; median iteration, rounds 37.8; mean 40.6)", // bulk target on the median
		"| load average (1 min) | start 1.00 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	if i := strings.Index(out, "%!"); i >= 0 {
		t.Errorf("broken format in the section: got %q, want no %%!", out[max(0, i-40):min(len(out), i+20)])
	}
}
