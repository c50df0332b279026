package cache

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// sparseTileKeys returns n keys shaped like a real tile set, as
// bench/cachebench's workload generates them: per layer, a complete pyramid
// for zooms 0..6, then regional blocks from zoom 7 to 14 whose width doubles
// every zoom and height every other zoom (at most 8 rows), so a column
// `layer/z/x/` holds a handful of tiles and x and y spread over many digits.
// Such keys share far fewer radix inner nodes per key than dense ones
// (tileKeys), so they are the honest input for bookkeeping measurements.
func sparseTileKeys(n int) []string {
	layers := []string{"osm", "satellite", "terrain", "transit"}
	rng := rand.New(rand.NewPCG(0x7115e5e5, 1))
	perLayer := (n + len(layers) - 1) / len(layers)
	type id struct{ z, x, y int }
	var keys []string
	for _, layer := range layers {
		seen := make(map[id]bool, perLayer)
		var ids []id
		add := func(t id) {
			if len(ids) < perLayer && !seen[t] {
				seen[t] = true
				ids = append(ids, t)
			}
		}
		for z := 0; z <= 6; z++ {
			for x := 0; x < 1<<z; x++ {
				for y := 0; y < 1<<z; y++ {
					add(id{z, x, y})
				}
			}
		}
		for len(ids) < perLayer {
			cx, cy := 0.05+0.9*rng.Float64(), 0.05+0.9*rng.Float64()
			for z := 7; z <= 14 && len(ids) < perLayer; z++ {
				d := z - 6
				bw, bh := 1<<(d/2), min(8, 1<<((d-1)/2))
				x0 := int(cx*float64(int(1)<<z)) - bw/2
				y0 := int(cy*float64(int(1)<<z)) - bh/2
				for x := x0; x < x0+bw; x++ {
					for y := y0; y < y0+bh; y++ {
						add(id{z, x, y})
					}
				}
			}
		}
		sort.Slice(ids, func(i, j int) bool {
			a, b := ids[i], ids[j]
			if a.z != b.z {
				return a.z < b.z
			}
			if a.x != b.x {
				return a.x < b.x
			}
			return a.y < b.y
		})
		for _, t := range ids {
			keys = append(keys, fmt.Sprintf("%s/%d/%d/%d", layer, t.z, t.x, t.y))
		}
	}
	return keys[:n]
}
