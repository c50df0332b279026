// Package stats summarises samples the way the benchmark report quotes
// them: count, mean and nearest-rank percentiles of latencies, medians, and
// the result lines of `go test -bench`.
package stats

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
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

// MedianFloat is the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not modified.
func MedianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchLine is one result line of `go test -bench` output.
type BenchLine struct {
	Name   string             // without "Benchmark" and the -procs suffix: "Get/otter"
	Procs  int                // GOMAXPROCS of the run (the suffix), 1 without one
	Values map[string]float64 // unit → value: "ns/op", "B/op", "allocs/op", custom units
}

// ParseBench reads the result lines of `go test -bench` output, in order.
func ParseBench(r io.Reader) ([]BenchLine, error) {
	var out []BenchLine
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // not a result line
		}
		l := BenchLine{Name: strings.TrimPrefix(f[0], "Benchmark"), Procs: 1, Values: map[string]float64{}}
		if i := strings.LastIndexByte(l.Name, '-'); i > 0 {
			if p, err := strconv.Atoi(l.Name[i+1:]); err == nil {
				l.Procs, l.Name = p, l.Name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("parse %q: %w", sc.Text(), err)
			}
			l.Values[f[i+1]] = v
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
