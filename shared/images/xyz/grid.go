package xyz

import (
	"fmt"
	"math"

	"github.com/tilesieve/tilesieve/shared/images/geo"
)

// outlineSteps is how many segments each edge of the raster is cut into when
// its outline is mapped to longitude/latitude: a UTM raster's edges are
// curves there.
const outlineSteps = 64

// outline derives the bounds in degrees and the web mercator box of the data
// from the full-resolution level's outline.
func (t *Tileset) outline() error {
	g := &t.levels[0]
	w, h := float64(g.Width), float64(g.Height)
	minLon, minLat := math.Inf(1), math.Inf(1)
	maxLon, maxLat := math.Inf(-1), math.Inf(-1)
	for k := 0; k <= outlineSteps; k++ {
		f := float64(k) / outlineSteps
		for _, p := range [4][2]float64{{f * w, 0}, {w, f * h}, {(1 - f) * w, h}, {0, (1 - f) * h}} {
			x, y := g.x0+p[0]*g.px, g.y0+p[1]*g.py
			if t.crs.IsGeographic() {
				y = max(-90, min(90, y)) // a global raster's edge may be a hair past a pole
			}
			lon, lat := t.crs.ToLonLat(x, y)
			if math.IsNaN(lon) || math.IsNaN(lat) || math.IsInf(lon, 0) || math.IsInf(lat, 0) {
				return fmt.Errorf("%w: its outline leaves the domain of %v at %g, %g", ErrInvalidRaster, t.crs, x, y)
			}
			minLon, maxLon = min(minLon, lon), max(maxLon, lon)
			minLat, maxLat = min(minLat, lat), max(maxLat, lat)
		}
	}
	if minLat >= geo.MaxMercatorLat || maxLat <= -geo.MaxMercatorLat || maxLon <= -540 || minLon >= 540 {
		return fmt.Errorf("%w: it lies outside the web mercator world (longitude %g to %g, latitude %g to %g)",
			ErrInvalidRaster, minLon, maxLon, minLat, maxLat)
	}
	south, north := max(minLat, -geo.MaxMercatorLat), min(maxLat, geo.MaxMercatorLat)
	west, east := max(minLon, -180), min(maxLon, 180)
	if minLon < -180 || maxLon > 180 {
		// Across the antimeridian: the XYZ world holds it in two pieces, and
		// each pixel's longitude is wrapped again when it is mapped back.
		west, east = -180, 180
	}
	t.meta.Bounds = [4]float64{west, south, east, north}
	minX, minY := geo.LonLatToMercator(west, south)
	maxX, maxY := geo.LonLatToMercator(east, north)
	t.merc = box{minX, minY, maxX, maxY}
	return nil
}

// align decides the XYZ tile size and which levels lie on the XYZ grid.
func (t *Tileset) align() {
	for z := range t.byZoom {
		t.byZoom[z] = -1
	}
	t.tileSize = 256
	if !t.crs.IsWebMercator() {
		return
	}
	l0 := &t.levels[0]
	if b := l0.TileWidth; (b == 256 || b == 512) && b == l0.TileHeight {
		if _, _, _, ok := alignment(l0, b); ok {
			t.tileSize = b
		}
	}
	for i := range t.levels {
		g := &t.levels[i]
		if z, xo, yo, ok := alignment(g, t.tileSize); ok && t.byZoom[z] < 0 {
			g.zoom, g.xoff, g.yoff = z, xo, yo
			t.byZoom[z] = int8(i)
		}
	}
}

// alignment reports whether an EPSG:3857 level lies on the XYZ grid of
// tiles of side ts: square pixels of a zoom's resolution, its tiles that
// zoom's tiles, and its origin on one of their corners.
func alignment(g *levelGeom, ts int) (z, xoff, yoff int, ok bool) {
	if g.TileWidth != ts || g.TileHeight != ts || g.px <= 0 || g.py >= 0 {
		return 0, 0, 0, false
	}
	zf := math.Log2(2 * geo.MercatorHalfWorld / (float64(ts) * g.px))
	if !(zf > -0.5 && zf < MaxZoom+0.5) {
		return 0, 0, 0, false
	}
	z = int(math.Round(zf))
	res := Resolution(z, ts)
	span := float64(max(g.Width, g.Height))
	if math.Abs(g.px/res-1)*span > alignTolerance || math.Abs(-g.py/res-1)*span > alignTolerance {
		return 0, 0, 0, false
	}
	side := float64(ts) * res
	fx := (g.x0 + geo.MercatorHalfWorld) / side
	fy := (geo.MercatorHalfWorld - g.y0) / side
	n := math.Ldexp(1, z)
	if !(math.Abs(fx) <= n && math.Abs(fy) <= n) ||
		math.Abs(fx-math.Round(fx))*float64(ts) > alignTolerance ||
		math.Abs(fy-math.Round(fy))*float64(ts) > alignTolerance {
		return 0, 0, 0, false
	}
	return z, int(math.Round(fx)), int(math.Round(fy)), true
}

// zooms derives the zoom range, the centre and the stored zooms.
func (t *Tileset) zooms() error {
	last := len(t.levels) - 1
	fine, coarse := t.mercatorPixel(0), t.mercatorPixel(last)
	if !(fine > 0) || !(coarse > 0) || math.IsInf(coarse, 0) {
		return fmt.Errorf("%w: no finite pixel size in web mercator at its centre", ErrInvalidRaster)
	}
	t.meta.TileSize = t.tileSize
	t.meta.MaxZoom = zoomFor(fine, t.tileSize)
	t.meta.MinZoom = min(zoomFor(coarse, t.tileSize), t.meta.MaxZoom)
	b := t.meta.Bounds
	t.meta.Center = [3]float64{(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, float64(t.meta.MinZoom)}
	for z, l := range t.byZoom {
		if l >= 0 {
			t.meta.StoredZooms = append(t.meta.StoredZooms, z)
		}
	}
	return nil
}

// mercatorPixel is a level's pixel size in web mercator metres at the centre
// of the data, along its finer axis.
func (t *Tileset) mercatorPixel(level int) float64 {
	g := &t.levels[level]
	// The centre of the raster, moved into the web mercator world's
	// latitudes when it lies beyond them.
	x, y := g.x0+float64(g.Width)/2*g.px, g.y0+float64(g.Height)/2*g.py
	switch {
	case t.crs.IsGeographic():
		y = max(t.meta.Bounds[1], min(t.meta.Bounds[3], y))
	case t.crs.IsWebMercator():
		y = max(t.merc.minY, min(t.merc.maxY, y))
	}
	x0, y0 := t.crs.ToMercator(x, y)
	xu, yu := t.crs.ToMercator(x+g.px, y)
	xv, yv := t.crs.ToMercator(x, y+g.py)
	return min(math.Hypot(xu-x0, yu-y0), math.Hypot(xv-x0, yv-y0))
}
