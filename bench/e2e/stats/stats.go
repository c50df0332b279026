// Package stats summarises latency samples the way the benchmark report
// quotes them: count, mean and nearest-rank percentiles.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of durations.
type Summary struct {
	N    int           `json:"n"`
	Mean time.Duration `json:"mean"`
	P50  time.Duration `json:"p50"`
	P95  time.Duration `json:"p95"`
	P99  time.Duration `json:"p99"`
	Max  time.Duration `json:"max"`
}

// Percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted: the smallest value with at least p% of the samples at or below
// it. It returns 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Summarize sorts a copy of samples and summarises it.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N:    len(s),
		Mean: sum / time.Duration(len(s)),
		P50:  Percentile(s, 50),
		P95:  Percentile(s, 95),
		P99:  Percentile(s, 99),
		Max:  s[len(s)-1],
	}
}

// Median returns the median of samples (the lower middle for an even count).
func Median(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Ratio is a/b, or 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
