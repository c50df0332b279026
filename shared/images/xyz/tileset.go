package xyz

import (
	"errors"
	"fmt"
	"math"

	"github.com/tilesieve/tilesieve/shared/images/geo"
)

// Tileset is a Raster seen as XYZ tiles. It is immutable and safe for
// concurrent use.
type Tileset struct {
	raster   Raster
	crs      geo.CRS
	levels   []levelGeom
	tileSize int
	byZoom   [MaxZoom + 1]int8 // the level aligned at each zoom, or −1
	merc     box               // the data's web mercator bounding box
	meta     Metadata
	cfg      Config
}

// Metadata is what a TileJSON document says of the tileset.
type Metadata struct {
	Bounds   [4]float64 // west, south, east, north in degrees, within the web mercator world
	Center   [3]float64 // longitude, latitude, zoom (MinZoom)
	MinZoom  int        // the coarsest overview's zoom
	MaxZoom  int        // the full-resolution level's zoom
	TileSize int        // 256, or the stored tiles' size when the grid is GoogleMapsCompatible
	// StoredZooms are the zooms whose XYZ tiles are stored tiles, served as
	// they are.
	StoredZooms []int
}

// levelGeom is a level with its geotransform and its place on the XYZ grid.
type levelGeom struct {
	Level
	x0, y0, px, py float64 // origin and pixel size in CRS units
	tilesX, tilesY int
	zoom           int // the zoom it is aligned at, or −1
	xoff, yoff     int // the XYZ tile of its stored tile (0, 0)
}

// box is an axis-aligned rectangle in web mercator metres.
type box struct{ minX, minY, maxX, maxY float64 }

// Zoom choice: a pixel up to 1 % coarser than a zoom's still counts as that
// zoom's, so a raster a hair coarser than z is served at z, not upsampled
// almost 2× at z+1.
const zoomSlack = 1.01

// Alignment tolerance in pixels, for the origin and for the drift of the
// pixel size across a whole level.
const alignTolerance = 1e-3

// New checks a raster and derives its XYZ view. cfg's zero value means the
// defaults.
func New(r Raster, cfg Config) (*Tileset, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	crs, err := geo.Lookup(r.EPSG)
	if err != nil {
		return nil, fmt.Errorf("xyz: %w", err)
	}
	r.Levels = append([]Level(nil), r.Levels...)
	if r.NoData != nil {
		v := *r.NoData
		r.NoData = &v
	}
	t := &Tileset{raster: r, crs: crs, cfg: cfg.withDefaults()}
	t.levels = make([]levelGeom, len(r.Levels))
	for i, l := range r.Levels {
		t.levels[i] = levelGeom{
			Level: l,
			x0:    r.Transform[0], y0: r.Transform[3],
			px:     r.Transform[1] * float64(r.Levels[0].Width) / float64(l.Width),
			py:     r.Transform[5] * float64(r.Levels[0].Height) / float64(l.Height),
			tilesX: (l.Width + l.TileWidth - 1) / l.TileWidth,
			tilesY: (l.Height + l.TileHeight - 1) / l.TileHeight,
			zoom:   -1,
		}
	}
	if err := t.outline(); err != nil {
		return nil, err
	}
	t.align()
	if err := t.zooms(); err != nil {
		return nil, err
	}
	return t, nil
}

// CRS is the raster's coordinate reference system.
func (t *Tileset) CRS() geo.CRS { return t.crs }

// Metadata describes the tileset; the caller may keep and change it.
func (t *Tileset) Metadata() Metadata {
	m := t.meta
	m.StoredZooms = append([]int(nil), m.StoredZooms...)
	return m
}

// Level returns a level's description and geotransform (GDAL order).
func (t *Tileset) Level(i int) (Level, [6]float64, bool) {
	if i < 0 || i >= len(t.levels) {
		return Level{}, [6]float64{}, false
	}
	g := t.levels[i]
	return g.Level, [6]float64{g.x0, g.px, 0, g.y0, 0, g.py}, true
}

// Aligned reports the zoom at which a level is on the XYZ grid, if it is.
func (t *Tileset) Aligned(level int) (zoom int, ok bool) {
	if level < 0 || level >= len(t.levels) || t.levels[level].zoom < 0 {
		return 0, false
	}
	return t.levels[level].zoom, true
}

// Check reports where the file's tiling hints disagree with its
// geotransform (the geotransform wins); nil when they agree.
func (t *Tileset) Check() error {
	var errs []error
	if t.raster.schemeHint() && t.levels[0].zoom < 0 {
		errs = append(errs, fmt.Errorf("xyz: the file names tiling scheme %q, but its full-resolution level is not on the XYZ grid; "+
			"its tiles are resampled", t.raster.TilingScheme))
	}
	n := 0
	for n < len(t.levels) && t.levels[n].zoom >= 0 {
		n++
	}
	if t.raster.AlignedLevels > n && n > 0 {
		errs = append(errs, fmt.Errorf("xyz: the file says %d levels are aligned, its geotransform %d",
			t.raster.AlignedLevels, n))
	}
	return errors.Join(errs...)
}

// Resolution is the size of an XYZ pixel at zoom z, in web mercator metres.
func Resolution(z, tileSize int) float64 {
	return 2 * geo.MercatorHalfWorld / (float64(tileSize) * math.Ldexp(1, z))
}

// TileBounds is an XYZ tile's extent in web mercator metres: min x, min y,
// max x, max y.
func TileBounds(z, x, y int) [4]float64 {
	side := 2 * geo.MercatorHalfWorld / math.Ldexp(1, z)
	minX := -geo.MercatorHalfWorld + float64(x)*side
	maxY := geo.MercatorHalfWorld - float64(y)*side
	return [4]float64{minX, maxY - side, minX + side, maxY}
}

// zoomFor is the smallest zoom whose pixel is at least as fine as size
// (web mercator metres), with zoomSlack.
func zoomFor(size float64, tileSize int) int {
	for z := 0; z <= MaxZoom; z++ {
		if Resolution(z, tileSize) <= size*zoomSlack {
			return z
		}
	}
	return MaxZoom
}
