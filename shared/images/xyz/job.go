package xyz

import (
	"fmt"
	"image"
	"math"

	"github.com/tilesieve/tilesieve/shared/images/xyz/internal/posgrid"
)

// Positions of a non-separable CRS (UTM) are computed exactly on a grid of
// nodes every gridStep output pixels and interpolated bilinearly between
// them. The grid is halved (down to every pixel) until interpolation is
// within gridTolerance level pixels at the middle of every cell's edges.
// Measured at 60°N, 1.5° off the central meridian: a 64-pixel grid is within
// 0.01 pixel from zoom 11, and the error falls fourfold with each zoom.
const (
	gridStep      = 64
	gridTolerance = 1.0 / 64
)

// newJob maps the window of an XYZ tile into a level and finds the stored
// tiles it covers. A nil job is a window that misses the level.
func (t *Tileset) newJob(z, x, y, level int, win image.Rectangle) (*job, []TileIndex, error) {
	m := t.mapper(z, x, y, level)
	j := &job{ts: t, level: level, win: win}
	margin := 0.0
	b := bounds{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	if t.crs.Separable() {
		j.us, j.vs = make([]float64, win.Dx()), make([]float64, win.Dy())
		for i := range j.us {
			j.us[i] = m.posU(float64(win.Min.X + i))
			b.add(j.us[i], math.NaN())
		}
		for k := range j.vs {
			j.vs[k] = m.posV(float64(win.Min.Y + k))
			b.add(math.NaN(), j.vs[k])
		}
	} else {
		j.grid = posgrid.Build(win.Dx(), win.Dy(), gridStep, gridTolerance, func(i, k int) (float64, float64) {
			return m.pos(float64(win.Min.X+i), float64(win.Min.Y+k))
		})
		us, vs := j.grid.Nodes()
		for k := range us {
			b.add(us[k], vs[k])
		}
		margin = gridTolerance
	}
	tx0, ty0, tx1, ty1, src := t.cover(level, b, margin)
	if src.Empty() {
		return nil, nil, nil
	}
	n, px := (tx1-tx0+1)*(ty1-ty0+1), src.Dx()*src.Dy()
	if n > t.cfg.MaxReadTiles || px > t.cfg.MaxReadPixels {
		return nil, nil, fmt.Errorf("%w: %d/%d/%d reads %d stored tiles of level %d, %d pixels (limits %d and %d; "+
			"overviews would make it cheap: the COG driver's OVERVIEWS option, or gdaladdo)",
			ErrTooCostly, z, x, y, n, level, px, t.cfg.MaxReadTiles, t.cfg.MaxReadPixels)
	}
	tiles := make([]TileIndex, 0, n)
	for ty := ty0; ty <= ty1; ty++ {
		for tx := tx0; tx <= tx1; tx++ {
			tiles = append(tiles, TileIndex{tx, ty})
		}
	}
	j.src = src
	return j, tiles, nil
}

// bounds is the range of the positions seen; NaN (no position) is left
// out by the comparisons.
type bounds struct{ minU, minV, maxU, maxV float64 }

func (b *bounds) add(u, v float64) {
	if u < b.minU {
		b.minU = u
	}
	if u > b.maxU {
		b.maxU = u
	}
	if v < b.minV {
		b.minV = v
	}
	if v > b.maxV {
		b.maxV = v
	}
}

// cover finds the stored tiles of a level (columns tx0..tx1, rows ty0..ty1)
// that bilinear sampling at positions within b (± margin) touches, and the
// level pixels they cover; empty when b misses the level.
func (t *Tileset) cover(level int, b bounds, margin float64) (tx0, ty0, tx1, ty1 int, src image.Rectangle) {
	g := &t.levels[level]
	// Sampling at u reads columns ⌊u − ½⌋ and ⌊u − ½⌋ + 1.
	c0 := max(0, math.Floor(b.minU-0.5-margin))
	c1 := min(float64(g.Width-1), math.Floor(b.maxU+0.5+margin))
	r0 := max(0, math.Floor(b.minV-0.5-margin))
	r1 := min(float64(g.Height-1), math.Floor(b.maxV+0.5+margin))
	if !(c0 <= c1 && r0 <= r1) {
		return 0, 0, 0, 0, image.Rectangle{}
	}
	tx0, tx1 = int(c0)/g.TileWidth, int(c1)/g.TileWidth
	ty0, ty1 = int(r0)/g.TileHeight, int(r1)/g.TileHeight
	src = image.Rect(tx0*g.TileWidth, ty0*g.TileHeight,
		min((tx1+1)*g.TileWidth, g.Width), min((ty1+1)*g.TileHeight, g.Height))
	return tx0, ty0, tx1, ty1, src
}
