package emf

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Buckets are log-linear over whole microseconds, as HDR histograms do: exact
// below 2^subBits µs, then 2^subBits buckets per power of two, so a bucket is
// at most 1/8 of its value wide and its midpoint within 1/16 (6.25%) of any
// value in it. Durations at or above maxMicros share the last bucket.
const (
	subBits    = 3
	subCount   = 1 << subBits
	maxShift   = 36 // buckets reach 2^(maxShift+subBits+1) µs, about 12.7 days
	numBuckets = (maxShift + 2) * subCount
	maxMicros  = uint64(1)<<(maxShift+subBits+1) - 1
)

func bucketOf(us uint64) int {
	if us < subCount {
		return int(us)
	}
	if us > maxMicros {
		us = maxMicros
	}
	shift := bits.Len64(us) - 1 - subBits
	return (shift+1)*subCount + int(us>>shift) - subCount
}

// bucketMid is the middle of bucket i, in microseconds.
func bucketMid(i int) float64 {
	if i < subCount {
		return float64(i) + 0.5
	}
	shift := i/subCount - 1
	lo := uint64(subCount+i%subCount) << shift
	return float64(lo) + float64(uint64(1)<<shift)/2
}

// Distribution records durations into fixed buckets with atomic adds: no
// lock, no allocation, bounded memory (numBuckets counters). A line sends it in
// milliseconds as an EMF histogram value.
type Distribution struct {
	name    string
	sum     atomic.Int64 // nanoseconds
	min     atomic.Int64 // nanoseconds; math.MaxInt64 when empty
	max     atomic.Int64 // nanoseconds; -1 when empty
	buckets [numBuckets]atomic.Uint64
}

func newDistribution(name string) *Distribution {
	d := &Distribution{name: name}
	d.min.Store(math.MaxInt64)
	d.max.Store(-1)
	return d
}

// Record adds one duration (a negative one counts as 0).
func (d *Distribution) Record(x time.Duration) {
	ns := max(int64(x), 0)
	d.buckets[bucketOf(uint64(ns/1e3))].Add(1)
	d.sum.Add(ns)
	// Loads first: past the first few records the extremes rarely move, so
	// this is two loads, not two compare-and-swaps.
	for m := d.max.Load(); ns > m && !d.max.CompareAndSwap(m, ns); m = d.max.Load() {
	}
	for m := d.min.Load(); ns < m && !d.min.CompareAndSwap(m, ns); m = d.min.Load() {
	}
}

// histogram is what one line says of a distribution, in milliseconds.
type histogram struct {
	values        []float64
	counts        []uint64
	min, max, sum float64
	count         uint64
}

// take empties the distribution into a histogram of at most MaxValues values;
// ok is false when nothing was recorded.
//
// Buckets, sum and extremes are swapped out one by one while recorders may
// run, so a record that straddles a flush can have its bucket in one line and
// its sum in the next. Nothing is lost; the statistics are kept consistent
// (values within [Min, Max], Sum possible for them; a single value is its
// own Min, Max and Sum) by clamping.
func (d *Distribution) take() (h histogram, ok bool) {
	for i := range d.buckets {
		if c := d.buckets[i].Swap(0); c != 0 {
			h.values = append(h.values, bucketMid(i)/1e3)
			h.counts = append(h.counts, c)
			h.count += c
		}
	}
	sum := d.sum.Swap(0)
	lo := d.min.Swap(math.MaxInt64)
	hi := d.max.Swap(-1)
	if h.count == 0 {
		// Only a straddling record's sum and extremes: give them back to the
		// line that will carry its bucket.
		d.sum.Add(sum)
		for m := d.max.Load(); hi > m && !d.max.CompareAndSwap(m, hi); m = d.max.Load() {
		}
		for m := d.min.Load(); lo < m && !d.min.CompareAndSwap(m, lo); m = d.min.Load() {
		}
		return h, false
	}
	h.values, h.counts = merge(h.values, h.counts, MaxValues)
	h.min, h.max = h.values[0], h.values[len(h.values)-1]
	if lo != math.MaxInt64 {
		h.min = float64(lo) / 1e6
	}
	if hi >= 0 {
		h.max = max(float64(hi)/1e6, h.min)
	}
	for i, v := range h.values {
		h.values[i] = min(max(v, h.min), h.max)
	}
	if h.count == 1 {
		// One value is its own min, max and sum, whatever extremes or sum a
		// straddling record left beside it: its bucket's value, clamped.
		v := h.values[0]
		h.min, h.max, h.sum = v, v, v
		return h, true
	}
	n := float64(h.count)
	h.sum = min(max(float64(sum)/1e6, h.max+h.min*(n-1)), h.min+h.max*(n-1))
	return h, true
}

// merge joins runs of neighbouring buckets until at most limit remain, each
// run becoming its count-weighted mean: percentiles coarsen, counts stay exact.
func merge(values []float64, counts []uint64, limit int) ([]float64, []uint64) {
	if len(values) <= limit {
		return values, counts
	}
	k := (len(values) + limit - 1) / limit
	out := 0
	for i := 0; i < len(values); i += k {
		var c uint64
		var s float64
		for j := i; j < min(i+k, len(values)); j++ {
			c += counts[j]
			s += values[j] * float64(counts[j])
		}
		values[out], counts[out] = s/float64(c), c
		out++
	}
	return values[:out], counts[:out]
}
