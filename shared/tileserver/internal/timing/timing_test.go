package timing

import (
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tiers"
)

// TestServerTimingTable: the prepared Server-Timing values are what
// appendServerTiming formats, and slower answers are formatted.
func TestServerTimingTable(t *testing.T) {
	for _, src := range []tiers.Source{tiers.FromMemory, tiers.FromDisk, tiers.FromOrigin, tiers.Revalidated, tiers.Stale} {
		for _, d := range []time.Duration{0, 999 * time.Nanosecond, time.Microsecond, 123456 * time.Nanosecond, 999 * time.Microsecond, time.Millisecond, 2500 * time.Millisecond} {
			v := Value(src, d)
			if want := string(Append(nil, src, d)); len(v) != 1 || v[0] != want || cap(v) != 1 {
				t.Errorf("Value(%v, %v) = %q (cap %d), want [%q]", src, d, v, cap(v), want)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { Value(tiers.FromMemory, 42*time.Microsecond) }); n != 0 {
		t.Errorf("a memory hit's Server-Timing allocated %v times", n)
	}
}
