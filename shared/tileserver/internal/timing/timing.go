// Package timing formats the Server-Timing value of a tile answer: the
// tier that answered and how long the handler took. The values of memory
// and disk answers under a millisecond (nearly all of theirs) are made
// once, so a hit formats and allocates nothing.
package timing

import (
	"strconv"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/shared/tiers"
)

// Value is the Server-Timing value of an answer from src after d.
func Value(src tiers.Source, d time.Duration) []string {
	us := d.Microseconds()
	if (src == tiers.FromMemory || src == tiers.FromDisk) && us >= 0 && us < timingSteps {
		i := int(src-tiers.FromMemory)*timingSteps + int(us)
		v := fastTimings()
		return v[i : i+1 : i+1]
	}
	return []string{string(Append(make([]byte, 0, 32), src, d))}
}

// timingSteps is how many microsecond values fastTimings holds per tier.
const timingSteps = 1000

// fastTimings are the Server-Timing values of memory and disk answers of
// 0 to 999 µs, in that order: one array of strings over one buffer.
var fastTimings = sync.OnceValue(func() []string {
	var b []byte
	ends := make([]int, 0, 2*timingSteps)
	for _, src := range []tiers.Source{tiers.FromMemory, tiers.FromDisk} {
		for us := range timingSteps {
			b = Append(b, src, time.Duration(us)*time.Microsecond)
			ends = append(ends, len(b))
		}
	}
	all := string(b)
	v := make([]string, len(ends))
	start := 0
	for i, end := range ends {
		v[i], start = all[start:end], end
	}
	return v
})

// Append names the tier that answered and how long the handler
// took, in milliseconds.
func Append(b []byte, src tiers.Source, d time.Duration) []byte {
	switch src {
	case tiers.FromMemory:
		b = append(b, "memory"...)
	case tiers.FromDisk:
		b = append(b, "disk"...)
	case tiers.Revalidated:
		b = append(b, "revalidate"...)
	case tiers.Stale:
		b = append(b, "stale"...)
	default:
		b = append(b, "origin"...)
	}
	b = append(b, ";dur="...)
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 3, 64)
}
