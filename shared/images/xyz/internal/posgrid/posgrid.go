// Package posgrid approximates a smooth map from an image's pixels to
// positions elsewhere (another raster's pixels) by exact positions on a grid
// of nodes and bilinear interpolation between them, refining the grid until
// the interpolation is within a tolerance where it was measured.
package posgrid

import "math"

// Grid holds exact positions at its nodes.
type Grid struct {
	ci, cj []int     // node columns and rows, first 0, last size − 1
	u, v   []float64 // positions at the nodes, row by row
	step   int
	err    float64
}

// Build maps a w × h image through pos, exactly at nodes every step pixels,
// halving step (down to 1, every pixel exact) until the interpolation is
// within tol at the midpoints of every cell's top and left edges. Not at the
// cells' centres: a conformal map's coordinates are harmonic, and there the
// errors of the two directions cancel. A NaN position (outside the map's
// domain) counts as exact: it is no position either way.
func Build(w, h, step int, tol float64, pos func(i, j int) (u, v float64)) *Grid {
	for step = max(step, 1); ; step /= 2 {
		g := &Grid{ci: nodes(w, step), cj: nodes(h, step), step: step}
		g.u = make([]float64, len(g.ci)*len(g.cj))
		g.v = make([]float64, len(g.u))
		for r, cj := range g.cj {
			for c, ci := range g.ci {
				g.u[r*len(g.ci)+c], g.v[r*len(g.ci)+c] = pos(ci, cj)
			}
		}
		g.err = g.measure(pos)
		if step == 1 || !(g.err > tol) {
			return g
		}
	}
}

// nodes are the grid's columns (or rows) for n pixels.
func nodes(n, step int) []int {
	c := make([]int, 0, n/step+2)
	for i := 0; i < n-1; i += step {
		c = append(c, i)
	}
	return append(c, max(n-1, 0))
}

// Step is the distance between the grid's nodes.
func (g *Grid) Step() int { return g.step }

// Err is the largest interpolation error measured.
func (g *Grid) Err() float64 { return g.err }

// Nodes are the exact positions at the nodes. Every interpolated position
// lies within their bounding box.
func (g *Grid) Nodes() (u, v []float64) { return g.u, g.v }

func (g *Grid) measure(pos func(i, j int) (u, v float64)) float64 {
	worst := 0.0
	nc := len(g.ci)
	check := func(i, j, k int, fx, fy float64) {
		u, v := pos(i, j)
		iu := lerp(lerp(g.u[k], g.u[k+1], fx), lerp(g.u[k+nc], g.u[k+nc+1], fx), fy)
		iv := lerp(lerp(g.v[k], g.v[k+1], fx), lerp(g.v[k+nc], g.v[k+nc+1], fx), fy)
		if d := math.Hypot(u-iu, v-iv); d > worst {
			worst = d
		}
	}
	for r := 0; r+1 < len(g.cj); r++ {
		for c := 0; c+1 < nc; c++ {
			i0, i1, j0, j1 := g.ci[c], g.ci[c+1], g.cj[r], g.cj[r+1]
			if mid := (i0 + i1) / 2; mid > i0 {
				check(mid, j0, r*nc+c, float64(mid-i0)/float64(i1-i0), 0)
			}
			if mid := (j0 + j1) / 2; mid > j0 {
				check(i0, mid, r*nc+c, 0, float64(mid-j0)/float64(j1-j0))
			}
		}
	}
	return worst
}

func lerp(a, b, f float64) float64 { return a + (b-a)*f }

// Row fills us and vs (at least as long as the image is wide) with the
// interpolated positions of row r.
func (g *Grid) Row(r int, us, vs []float64) {
	m := 0
	for m+2 < len(g.cj) && g.cj[m+1] <= r {
		m++
	}
	nc := len(g.ci)
	fy := 0.0
	if len(g.cj) > 1 {
		fy = float64(r-g.cj[m]) / float64(g.cj[m+1]-g.cj[m])
	}
	for c := range nc {
		k := m*nc + c
		u, v := g.u[k], g.v[k]
		if len(g.cj) > 1 {
			u, v = lerp(u, g.u[k+nc], fy), lerp(v, g.v[k+nc], fy)
		}
		us[g.ci[c]], vs[g.ci[c]] = u, v
	}
	for c := 0; c+1 < nc; c++ {
		a, b := g.ci[c], g.ci[c+1]
		du := (us[b] - us[a]) / float64(b-a)
		dv := (vs[b] - vs[a]) / float64(b-a)
		for i := a + 1; i < b; i++ {
			us[i], vs[i] = us[a]+du*float64(i-a), vs[a]+dv*float64(i-a)
		}
	}
}
