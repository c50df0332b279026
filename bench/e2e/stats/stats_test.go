package stats

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"p0 is min", ms(1, 2, 3), 0, time.Millisecond},
		{"p50 of 4", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p95 of 1..100", ms(hundred...), 95, 95 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100", ms(hundred...), 100, 100 * time.Millisecond},
		{"p99 of 10 is max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	in := []time.Duration{4, 1, 3, 2}
	s := Summarize(in)
	if s.N != 4 || s.Mean != 2 || s.P50 != 2 || s.P95 != 4 || s.Max != 4 {
		t.Errorf("got %+v", s)
	}
	if in[0] != 4 {
		t.Errorf("Summarize sorted its input")
	}
	if got := Median([]time.Duration{5, 1, 3}); got != 3 {
		t.Errorf("median: got %v, want 3", got)
	}
	if got := Ratio(1, 0); got != 0 {
		t.Errorf("ratio by zero: got %v", got)
	}
}
