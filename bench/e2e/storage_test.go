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
