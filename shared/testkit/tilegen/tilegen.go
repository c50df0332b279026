// Package tilegen generates tile key sets shaped like real tilesets, for the
// tests and benchmarks of the tiers. Real tilesets are not uniform: every
// layer has a complete pyramid at low zoom, then regions (think cities) of
// contiguous tiles at high zoom. So a column prefix `layer/z/x/` at high zoom
// names a handful of tiles, a zoom prefix `layer/z/` thousands, and x and y
// spread over many digits; such keys share far fewer radix inner nodes than
// a dense grid, which is what honest bookkeeping and purge measurements need.
package tilegen

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// Shape of the generated sets.
const (
	PyramidZoom = 6  // zoom levels 0..PyramidZoom are complete in every layer
	MaxZoom     = 14 // deepest zoom of the regional blocks
)

// Layers are the tilesets the keys are spread over.
var Layers = []string{"osm", "satellite", "terrain", "transit"}

type tileID struct{ z, x, y int }

// Keys returns n distinct keys `layer/z/x/y`, the same for the same seed.
// Per layer: the complete pyramid for zooms 0..PyramidZoom, then regional
// blocks around random centres from zoom PyramidZoom+1 to MaxZoom, whose
// width doubles every zoom and height every other zoom, capped at 8 rows.
// Within a layer keys are in (z, x, y) order.
func Keys(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	perLayer := (n + len(Layers) - 1) / len(Layers)
	keys := make([]string, 0, perLayer*len(Layers))
	for _, layer := range Layers {
		seen := make(map[tileID]bool, perLayer)
		var ids []tileID
		add := func(id tileID) {
			if len(ids) < perLayer && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		for z := 0; z <= PyramidZoom; z++ {
			for x := 0; x < 1<<z; x++ {
				for y := 0; y < 1<<z; y++ {
					add(tileID{z, x, y})
				}
			}
		}
		for len(ids) < perLayer {
			// A region centre in unit coordinates, kept off the edges.
			cx, cy := 0.05+0.9*rng.Float64(), 0.05+0.9*rng.Float64()
			for z := PyramidZoom + 1; z <= MaxZoom && len(ids) < perLayer; z++ {
				d := z - PyramidZoom
				bw := 1 << (d / 2)         // 1,2,2,4,4,8,8,16 columns for z=7..14
				bh := min(8, 1<<((d-1)/2)) // 1,1,2,2,4,4,8,8 rows, never more than 8
				x0 := int(cx*float64(int(1)<<z)) - bw/2
				y0 := int(cy*float64(int(1)<<z)) - bh/2
				for x := x0; x < x0+bw; x++ {
					for y := y0; y < y0+bh; y++ {
						add(tileID{z, x, y})
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
		for _, id := range ids {
			keys = append(keys, fmt.Sprintf("%s/%d/%d/%d", layer, id.z, id.x, id.y))
		}
	}
	return keys[:n]
}

// Incompressible returns n bytes that do not compress, as PNG and JPEG tile
// bodies do not: the same bytes for the same n.
func Incompressible(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
