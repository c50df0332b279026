package xyz

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tilesieve/tilesieve/shared/images/geo"
)

// Errors callers match with errors.Is.
var (
	// ErrInvalidRaster is a Raster description New refuses.
	ErrInvalidRaster = errors.New("xyz: invalid raster")
	// ErrInvalidTile is a z/x/y outside the XYZ tiling (z beyond MaxZoom,
	// x or y beyond 2^z − 1).
	ErrInvalidTile = errors.New("xyz: no such tile")
	// ErrTooCostly is a tile whose footprint needs more stored tiles or
	// pixels than Config allows, typically far below the coarsest overview.
	// It is best answered as a missing tile.
	ErrTooCostly = errors.New("xyz: tile needs too many stored tiles")
	// ErrNoData is a tile with no data: outside the raster, or every pixel
	// transparent. It is answered as a missing tile.
	ErrNoData = errors.New("xyz: tile has no data")
)

// Limits on what a Raster may claim. They are far above real rasters and
// keep every derived count and coordinate well inside int and float64.
const (
	MaxZoom      = 30      // deepest XYZ zoom
	MaxLevels    = 32      // levels in a pyramid
	MaxDimension = 1 << 26 // pixels across a level
	MinTileSide  = 16      // TIFF tiles are multiples of 16
	MaxTileSide  = 4096
)

// Level is one level of the pyramid: its size and its stored tiles' size.
type Level struct {
	Width, Height         int
	TileWidth, TileHeight int
}

// Raster describes a georeferenced pyramidal raster, as its TIFF headers and
// GDAL metadata say.
type Raster struct {
	EPSG int
	// Transform is the GDAL geotransform of the full-resolution level, in the
	// pixel-corner (area) convention: x = T[0] + col·T[1] + row·T[2],
	// y = T[3] + col·T[4] + row·T[5]. T[2] and T[4] must be 0. An overview
	// shares the origin; its pixel size is the extent over its size, as in GDAL.
	Transform [6]float64
	Levels    []Level // full resolution first, then the overviews
	Bands     int     // 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA); 1 when Float
	Float     bool    // samples are 16-bit or floating point: decoded as FloatImage
	HasMask   bool    // blocks carry a validity mask
	HasAlpha  bool    // the last band is alpha
	// NoData is the nodata value: a pixel whose every band equals it is no
	// data (GDAL's unified rule). For 8-bit rasters only 0–255 can match.
	NoData *float64
	// AlignedLevels and TilingScheme are hints from GDAL's TILING_SCHEME
	// metadata (ALIGNED_LEVELS, NAME). Alignment is confirmed from the
	// geotransform alone; Tileset.Check reports a hint it contradicts.
	AlignedLevels int
	TilingScheme  string
}

// Config bounds the work of one XYZ tile. The zero value means the defaults.
type Config struct {
	// MaxReadTiles is the most stored tiles one XYZ tile may read (default 64;
	// an XYZ tile read from the right overview needs 4 to 16, up to about 40
	// from an EPSG:4326 raster near the poles).
	MaxReadTiles int
	// MaxReadPixels bounds the level pixels those tiles hold, which the
	// resampler holds in memory at 4 bytes each (default 8 Mi: 32 MiB).
	MaxReadPixels int
	// Fetchers is how many TileSource calls run at once (default 8).
	Fetchers int
}

// Default Config values.
const (
	DefaultMaxReadTiles  = 64
	DefaultMaxReadPixels = 8 << 20
	DefaultFetchers      = 8
)

// Validate reports every problem with the Config at once.
func (c Config) Validate() error {
	var errs []error
	if c.MaxReadTiles < 0 || c.MaxReadTiles > 4096 {
		errs = append(errs, fmt.Errorf("xyz: MaxReadTiles %d is not in 0..4096", c.MaxReadTiles))
	}
	if c.MaxReadPixels < 0 || c.MaxReadPixels > 1<<30 {
		errs = append(errs, fmt.Errorf("xyz: MaxReadPixels %d is not in 0..2^30", c.MaxReadPixels))
	}
	if c.Fetchers < 0 || c.Fetchers > 256 {
		errs = append(errs, fmt.Errorf("xyz: Fetchers %d is not in 0..256", c.Fetchers))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.MaxReadTiles == 0 {
		c.MaxReadTiles = DefaultMaxReadTiles
	}
	if c.MaxReadPixels == 0 {
		c.MaxReadPixels = DefaultMaxReadPixels
	}
	if c.Fetchers == 0 {
		c.Fetchers = DefaultFetchers
	}
	return c
}

// validate checks everything New trusts later, and joins every problem.
func (r *Raster) validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidRaster}, a...)...))
	}
	t := r.Transform
	for i, v := range t {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad("geotransform term %d is %g", i, v)
		}
	}
	if t[2] != 0 || t[4] != 0 {
		bad("rotated or sheared geotransform (terms 2 and 4 are %g and %g, not 0); make it north-up with `%s`",
			t[2], t[4], geo.ReprojectCommand)
	}
	if t[1] == 0 || t[5] == 0 {
		bad("geotransform pixel size %g × %g", t[1], t[5])
	}
	if len(r.Levels) == 0 || len(r.Levels) > MaxLevels {
		bad("%d levels (want 1 to %d)", len(r.Levels), MaxLevels)
	} else {
		r.validateLevels(bad)
	}
	switch {
	case r.Float && (r.Bands != 1 || r.HasAlpha):
		bad("a float raster has one band and no alpha (got %d bands, alpha %v)", r.Bands, r.HasAlpha)
	case r.Bands < 1 || r.Bands > 4:
		bad("%d bands (want 1 to 4)", r.Bands)
	case r.HasAlpha && r.Bands != 2 && r.Bands != 4:
		bad("an alpha band needs 2 or 4 bands, not %d", r.Bands)
	}
	return errors.Join(errs...)
}

func (r *Raster) validateLevels(bad func(string, ...any)) {
	prevW, prevH := MaxDimension, MaxDimension
	for i, l := range r.Levels {
		if l.Width < 1 || l.Height < 1 || l.Width > prevW || l.Height > prevH {
			bad("level %d is %d × %d (want 1 to %d, no larger than the level before)", i, l.Width, l.Height, MaxDimension)
		}
		if l.TileWidth < MinTileSide || l.TileWidth > MaxTileSide || l.TileHeight < MinTileSide || l.TileHeight > MaxTileSide {
			bad("level %d has %d × %d tiles (want %d to %d)", i, l.TileWidth, l.TileHeight, MinTileSide, MaxTileSide)
		}
		prevW, prevH = max(l.Width, 1), max(l.Height, 1)
	}
}

// schemeHint reports whether the file says it is on the web mercator quad.
func (r *Raster) schemeHint() bool {
	s := strings.ToLower(r.TilingScheme)
	return s == "googlemapscompatible" || s == "webmercatorquad"
}
