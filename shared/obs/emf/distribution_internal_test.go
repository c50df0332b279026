package emf

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// consistent reports what makes h a histogram no set of h.count values could
// give, or nil: every value within [min, max], and a sum that count values
// in that range can add up to (with count 1, min = max = sum).
func consistent(h histogram) error {
	for _, v := range h.values {
		if v < h.min || v > h.max {
			return fmt.Errorf("value %v outside [%v, %v]", v, h.min, h.max)
		}
	}
	n := float64(h.count)
	lo, hi := h.max+h.min*(n-1), h.min+h.max*(n-1)
	if slack := 1e-9 * n; h.sum < lo-slack || h.sum > hi+slack {
		return fmt.Errorf("sum %v impossible for %v values in [%v, %v]", h.sum, n, h.min, h.max)
	}
	return nil
}

// TestTakeAfterStraddlingRecord sets up what a flush leaves when records run
// beside it: take swaps the buckets out first, then the sum and the
// extremes, so a record that lands between the two has its extreme in this
// line and its bucket in the next. Each case is a line's share of such
// records; the line must still be a histogram some values could give.
func TestTakeAfterStraddlingRecord(t *testing.T) {
	ms := func(f float64) int64 { return int64(f * 1e6) }
	for _, tc := range []struct {
		name             string
		bucketed         []float64 // records whose bucket is in the line (ms)
		extraSum         float64   // sum of straddling records in the line (ms)
		extraLo, extraHi float64   // their extremes (ms; 0: none)
	}{
		// One record in the line, the max of a later one beside it.
		{name: "one value, a later record's max", bucketed: []float64{61.2}, extraHi: 64.5},
		// One record, a later record's min below it.
		{name: "one value, a later record's min", bucketed: []float64{61.2}, extraLo: 3.1},
		// One record, a later record's sum too.
		{name: "one value, a later record's sum", bucketed: []float64{61.2}, extraSum: 64.5, extraHi: 64.5},
		// Two records, extremes of others on both sides.
		{name: "two values, extremes beside", bucketed: []float64{10, 20}, extraLo: 1, extraHi: 90, extraSum: 91},
		// One record whose own sum went to the previous line.
		{name: "one value without its sum", bucketed: []float64{61.2}, extraSum: -61.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDistribution("Latency")
			for _, v := range tc.bucketed {
				d.Record(time.Duration(ms(v)))
			}
			d.sum.Add(ms(tc.extraSum))
			if tc.extraHi != 0 {
				d.max.Store(max(d.max.Load(), ms(tc.extraHi)))
			}
			if tc.extraLo != 0 {
				d.min.Store(min(d.min.Load(), ms(tc.extraLo)))
			}
			h, ok := d.take()
			if !ok || h.count != uint64(len(tc.bucketed)) {
				t.Fatalf("take: ok %v, count %d; want true, %d", ok, h.count, len(tc.bucketed))
			}
			if err := consistent(h); err != nil {
				t.Errorf("%v (min %v, max %v, sum %v, values %v)", err, h.min, h.max, h.sum, h.values)
			}
		})
	}
	// Without straddling records a single value is exact.
	d := newDistribution("Latency")
	d.Record(61200 * time.Microsecond)
	h, _ := d.take()
	if h.min != 61.2 || h.max != 61.2 || h.sum != 61.2 || math.Abs(h.values[0]-61.2) > 1e-9 {
		t.Errorf("one record of 61.2 ms: min %v, max %v, sum %v, values %v; want all 61.2", h.min, h.max, h.sum, h.values)
	}
}
