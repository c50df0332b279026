// Package zipf is the Zipf sampler both the cache benchmarks and the
// end-to-end cost model draw their traces from.
package zipf

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Zipf draws ranks 0..n-1 with P(r) ∝ 1/(r+1)^s for any s ≥ 0, by inverse
// CDF over precomputed cumulative weights (8 bytes per rank). math/rand's
// Zipf needs s > 1; tile traffic is usually s ≈ 0.6–1.0.
type Zipf struct {
	cdf []float64
	rng *rand.Rand
}

// New precomputes the CDF for n ranks and exponent s; rng drives the draws.
func New(rng *rand.Rand, s float64, n int) *Zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for r := range n {
		sum += math.Pow(float64(r+1), -s)
		cdf[r] = sum
	}
	for r := range cdf {
		cdf[r] /= sum
	}
	return &Zipf{cdf: cdf, rng: rng}
}

// Next returns the next rank.
func (z *Zipf) Next() int {
	return min(sort.SearchFloat64s(z.cdf, z.rng.Float64()), len(z.cdf)-1)
}
