package e2e

import (
	"slices"
	"testing"
	"time"
)

func TestMedianRow(t *testing.T) {
	rounds := []ServerRow{
		{Server: "s", Tool: "wrk", RPS: 10, P99: 9 * time.Millisecond, Errors: 1},
		{Server: "s", Tool: "wrk", RPS: 30, P99: 3 * time.Millisecond},
		{Server: "s", Tool: "wrk", RPS: 20, P99: 5 * time.Millisecond, Errors: 2, Note: "socket errors: x"},
	}
	got := medianRow(rounds)
	if got.RPS != 20 || got.P99 != 5*time.Millisecond {
		t.Errorf("median row %+v, want the 20 req/s round with its own latencies", got)
	}
	if !slices.Equal(got.RoundsRPS, []float64{10, 30, 20}) || got.Errors != 3 {
		t.Errorf("rounds %v errors %d, want every round in run order and the errors summed", got.RoundsRPS, got.Errors)
	}
	if want := "median of 3 rounds, 10–30 req/s; socket errors: x"; got.Note != want {
		t.Errorf("note %q, want %q", got.Note, want)
	}
	if one := medianRow(rounds[:1]); one.Note != "" || one.RPS != 10 {
		t.Errorf("one round: %+v", one)
	}
	// Even counts take the lower middle.
	if two := medianRow(rounds[:2]); two.RPS != 10 {
		t.Errorf("two rounds: got %v req/s, want the lower middle 10", two.RPS)
	}
}

// TestRoundOrder: every server runs once a round, the order rotates, and
// the memory hits run right beside the floor, swapping places each round.
func TestRoundOrder(t *testing.T) {
	t.Parallel()
	var main []*running
	for _, n := range []string{memHits, "tilesieve disk hits", goFloor, "go-pmtiles serve", "nginx sendfile"} {
		main = append(main, &running{storageServer: storageServer{name: n}})
	}
	firsts := map[string]bool{}
	for round := range 6 {
		order := roundOrder(main, round)
		if len(order) != len(main) {
			t.Fatalf("round %d: %d servers, want %d", round, len(order), len(main))
		}
		seen := map[string]int{}
		for i, rs := range order {
			seen[rs.name] = i
		}
		if len(seen) != len(main) {
			t.Fatalf("round %d: a server runs twice: %v", round, seen)
		}
		m, f := seen[memHits], seen[goFloor]
		if want := map[bool]int{false: 1, true: -1}[round%2 == 1]; f-m != want {
			t.Errorf("round %d: memory hits at %d, floor at %d; want the floor %+d from it", round, m, f, want)
		}
		firsts[order[0].name] = true
	}
	if len(firsts) < 4 {
		t.Errorf("the first server of a round took only %d values over 6 rounds: the order does not rotate", len(firsts))
	}
}

// TestSameRound: the vs columns are the median of the rounds' ratios, and
// the ratio of the median rounds only when rounds do not line up.
func TestSameRound(t *testing.T) {
	t.Parallel()
	a := &ServerRow{RPS: 90, RoundsRPS: []float64{100, 90, 10}}
	b := &ServerRow{RPS: 100, RoundsRPS: []float64{100, 100, 100}}
	if got, rs := sameRound(a, b); got != 0.9 || len(rs) != 3 || rs[2] != 0.1 {
		t.Errorf("sameRound = %v, %v; want 0.9 and the three rounds' ratios", got, rs)
	}
	old := &ServerRow{RPS: 50}
	if got, rs := sameRound(old, b); got != 0.5 || rs != nil {
		t.Errorf("sameRound of unaligned rows = %v, %v; want 0.5, nil", got, rs)
	}
}
