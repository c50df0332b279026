package xyz

import (
	"fmt"
	"image"
	"math"

	"github.com/tilesieve/tilesieve/shared/images/geo"
	"github.com/tilesieve/tilesieve/shared/images/xyz/internal/posgrid"
)

// PlanKind is how an XYZ tile is answered.
type PlanKind uint8

const (
	// Empty: the tile holds no data; answer it as a missing tile.
	Empty PlanKind = iota
	// Stored: the tile is stored tile Plan.Stored of Plan.Level as it is.
	Stored
	// Resample: the tile is resampled from Plan.Tiles of Plan.Level.
	Resample
)

func (k PlanKind) String() string {
	switch k {
	case Empty:
		return "empty"
	case Stored:
		return "stored"
	case Resample:
		return "resample"
	}
	return fmt.Sprintf("PlanKind(%d)", uint8(k))
}

// TileIndex is a stored tile's column and row within its level.
type TileIndex struct{ X, Y int }

// Plan is how to answer one XYZ tile. Make it with Tileset.Plan.
type Plan struct {
	Kind    PlanKind
	Z, X, Y int
	Level   int         // the level read (Stored, Resample)
	Stored  TileIndex   // the stored tile that is the XYZ tile (Stored)
	Tiles   []TileIndex // the stored tiles to read, row by row (Resample)
	job     *job
}

// job is what resampling one XYZ tile takes: the output pixels that may hold
// data, each one's position in the level (pixel units, pixel centres at
// k + 0.5), and the level pixels the stored tiles read cover.
type job struct {
	ts     *Tileset
	level  int
	win    image.Rectangle // output pixels that may hold data
	us, vs []float64       // separable CRS: u of each window column, v of each row
	grid   *posgrid.Grid   // other CRSs
	src    image.Rectangle // level pixels covered by the tiles read
}

// Plan decides how to answer XYZ tile z/x/y: the stored tile as it is, no
// tile, or which stored tiles to resample. It reads nothing. A tile beyond
// the XYZ tiling is ErrInvalidTile; one that would read more than
// Config.MaxReadTiles stored tiles or Config.MaxReadPixels pixels is
// ErrTooCostly.
func (t *Tileset) Plan(z, x, y int) (Plan, error) {
	if z < 0 || z > MaxZoom || x < 0 || y < 0 || x >= 1<<z || y >= 1<<z {
		return Plan{}, fmt.Errorf("%w: %d/%d/%d", ErrInvalidTile, z, x, y)
	}
	p := Plan{Z: z, X: x, Y: y}
	if l := t.byZoom[z]; l >= 0 {
		g := &t.levels[l]
		if sx, sy := x-g.xoff, y-g.yoff; sx >= 0 && sy >= 0 && sx < g.tilesX && sy < g.tilesY {
			p.Kind, p.Level, p.Stored = Stored, int(l), TileIndex{sx, sy}
		}
		return p, nil
	}
	win, ok := t.window(z, x, y)
	if !ok {
		return p, nil
	}
	level := t.chooseLevel(z, x, y, win)
	j, tiles, err := t.newJob(z, x, y, level, win)
	if err != nil || j == nil {
		return p, err
	}
	p.Kind, p.Level, p.Tiles, p.job = Resample, level, tiles, j
	return p, nil
}

// window is the part of an XYZ tile, in its pixels, that the data's web
// mercator box covers, widened by a pixel for the box's curved edges.
func (t *Tileset) window(z, x, y int) (image.Rectangle, bool) {
	b := TileBounds(z, x, y)
	minX, maxX := max(b[0], t.merc.minX), min(b[2], t.merc.maxX)
	minY, maxY := max(b[1], t.merc.minY), min(b[3], t.merc.maxY)
	if !(minX < maxX && minY < maxY) {
		return image.Rectangle{}, false
	}
	res, n := Resolution(z, t.tileSize), float64(t.tileSize)
	clamp := func(v float64) int { return int(max(0, min(n, v))) }
	r := image.Rect(
		clamp(math.Floor((minX-b[0])/res)-1), clamp(math.Floor((b[3]-maxY)/res)-1),
		clamp(math.Ceil((maxX-b[0])/res)+1), clamp(math.Ceil((b[3]-minY)/res)+1))
	return r, !r.Empty()
}

// chooseLevel picks the coarsest level whose pixels are no coarser than the
// XYZ tile's (with zoomSlack) at the centre of the window, along whichever
// axis of the tile maps onto fewer level pixels: no axis is upsampled that a
// finer level could give. (An EPSG:4326 raster far from the equator is
// downsampled across more pixels east–west than north–south.)
func (t *Tileset) chooseLevel(z, x, y int, win image.Rectangle) int {
	m := t.mapper(z, x, y, 0)
	// The centre, or where the CRS has no position for it (a UTM raster
	// across the antimeridian seen at zoom 0), a corner.
	s := math.NaN()
	minX, minY, maxX, maxY := float64(win.Min.X), float64(win.Min.Y), float64(win.Max.X-1), float64(win.Max.Y-1)
	for _, c := range [][2]float64{{(minX + maxX) / 2, (minY + maxY) / 2}, {minX, minY}, {maxX, minY}, {minX, maxY}, {maxX, maxY}} {
		u, v := m.pos(c[0], c[1])
		ui, vi := m.pos(c[0]+1, c[1])
		uj, vj := m.pos(c[0], c[1]+1)
		if s = min(math.Hypot(ui-u, vi-v), math.Hypot(uj-u, vj-v)); !math.IsNaN(s) {
			break
		}
	}
	g0, best := &t.levels[0], 0
	for l := 1; l < len(t.levels); l++ {
		g := &t.levels[l]
		f := math.Sqrt(float64(g0.Width) / float64(g.Width) * float64(g0.Height) / float64(g.Height))
		if f <= s*zoomSlack {
			best = l
		}
	}
	return best
}

// mapper maps the pixels of one XYZ tile into one level.
type mapper struct {
	crs            geo.CRS
	minX, maxY     float64 // the tile's top-left corner, web mercator
	res            float64
	x0, y0, px, py float64 // the level's geotransform
	wrapFrom, wrap float64 // a separable CRS's x is wrapped into [wrapFrom, wrapFrom+wrap) when wrap > 0
}

func (t *Tileset) mapper(z, x, y, level int) mapper {
	b, g := TileBounds(z, x, y), &t.levels[level]
	m := mapper{crs: t.crs, minX: b[0], maxY: b[3], res: Resolution(z, t.tileSize),
		x0: g.x0, y0: g.y0, px: g.px, py: g.py}
	half := geo.MercatorHalfWorld
	if t.crs.IsGeographic() {
		half = 180
	}
	if west, east := min(g.x0, g.x0+float64(g.Width)*g.px), max(g.x0, g.x0+float64(g.Width)*g.px); t.crs.Separable() &&
		(west < -half || east > half) {
		m.wrapFrom, m.wrap = west, 2*half
	}
	return m
}

// pos is the level position of the centre of output pixel (i, j).
func (m *mapper) pos(i, j float64) (u, v float64) {
	x, y := m.crs.FromMercator(m.minX+(i+0.5)*m.res, m.maxY-(j+0.5)*m.res)
	return m.u(x), (y - m.y0) / m.py
}

// posU and posV are pos's u and v for a separable CRS.
func (m *mapper) posU(i float64) float64 {
	return m.u(m.crs.FromMercatorX(m.minX + (i+0.5)*m.res))
}

func (m *mapper) posV(j float64) float64 {
	return (m.crs.FromMercatorY(m.maxY-(j+0.5)*m.res) - m.y0) / m.py
}

func (m *mapper) u(x float64) float64 {
	if m.wrap > 0 {
		x = m.wrapFrom + math.Mod(math.Mod(x-m.wrapFrom, m.wrap)+m.wrap, m.wrap)
	}
	return (x - m.x0) / m.px
}
