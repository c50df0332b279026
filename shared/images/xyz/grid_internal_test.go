package xyz

import (
	"fmt"
	"math"
	"testing"
)

// TestGridError holds the interpolated positions of every pixel of UTM tiles
// to the exact ones, from zoom 0 to 22: within twice gridTolerance (the
// check at edge midpoints is not at every pixel). It logs the grid step.
func TestGridError(t *testing.T) {
	t.Parallel()
	// A 400 km × 500 km raster at 10 m in UTM 33N, 1.5° off its central meridian at 60°N.
	r := Raster{EPSG: 32633, Transform: [6]float64{330000, 10, 0, 6900000, 0, -10}, Bands: 3,
		Levels: []Level{{Width: 40000, Height: 50000, TileWidth: 512, TileHeight: 512}}}
	for l := 1; l < 9; l++ {
		r.Levels = append(r.Levels, Level{Width: (40000 + 1<<l - 1) >> l, Height: (50000 + 1<<l - 1) >> l, TileWidth: 512, TileHeight: 512})
	}
	ts, err := New(r, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for z := 0; z <= 22; z++ {
		t.Run(fmt.Sprint(z), func(t *testing.T) {
			t.Parallel()
			x, y := tileOf(12.5, 61.3, z)
			win, ok := ts.window(z, x, y)
			if !ok {
				t.Fatal("no window")
			}
			level := ts.chooseLevel(z, x, y, win)
			m := ts.mapper(z, x, y, level)
			j, _, err := ts.newJob(z, x, y, level, win)
			if err != nil {
				t.Fatal(err)
			}
			g := j.grid
			us, vs := make([]float64, win.Dx()), make([]float64, win.Dx())
			worst := 0.0
			for row := range win.Dy() {
				g.Row(row, us, vs)
				for i := range us {
					u, v := m.pos(float64(win.Min.X+i), float64(win.Min.Y+row))
					worst = math.Max(worst, math.Hypot(us[i]-u, vs[i]-v))
				}
			}
			t.Logf("zoom %d level %d, window %v, grid step %d: worst %.2g px (at edge midpoints %.2g)", z, level, win, g.Step(), worst, g.Err())
			if worst > 2*gridTolerance {
				t.Errorf("got worst error %.3g level pixels, want ≤ %.3g", worst, 2*gridTolerance)
			}
		})
	}
}

func tileOf(lon, lat float64, z int) (x, y int) {
	n := math.Ldexp(1, z)
	s := math.Sin(lat * math.Pi / 180)
	return int((lon + 180) / 360 * n), int((0.5 - math.Log((1+s)/(1-s))/(4*math.Pi)) * n)
}
