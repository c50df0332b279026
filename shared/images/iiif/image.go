package iiif

import (
	"context"
	"errors"
	"fmt"
	"image"
)

// Level is one resolution of an image: Width×Height pixels, stored as
// TileWidth×TileHeight tiles (edge tiles padded to the full tile size).
type Level struct {
	Width, Height         int
	TileWidth, TileHeight int
}

// Image describes a source image. Levels[0] is the full resolution and each
// next level is no larger than the one before.
type Image struct {
	Levels    []Level
	Gray      bool // single band: the default quality is gray
	HasAlpha  bool
	JPEGTiles bool // stored tiles are JPEG, so a tile request can be answered with its stored bytes
}

// TileSource decodes stored tile (x, y) of a level: the whole stored tile,
// edge tiles padded, as any 8-bit standard image type. It is safe for
// concurrent use.
type TileSource interface {
	Tile(ctx context.Context, level, x, y int) (image.Image, error)
}

// Limits bound every answer and are advertised in info.json as maxWidth,
// maxHeight and maxArea.
type Limits struct {
	MaxWidth, MaxHeight, MaxArea int64
}

// Bounds on what an Image and Limits may describe, so that every product of
// two dimensions fits an int64 with room to spare.
const (
	maxDimension = 1 << 30
	maxTileSide  = 1 << 16
	maxLevels    = 40
	maxArea      = 1 << 50
)

// Validate reports every problem of lim at once.
func (lim Limits) Validate() error {
	var errs []error
	if lim.MaxWidth < 1 || lim.MaxWidth > maxDimension {
		errs = append(errs, fmt.Errorf("iiif: MaxWidth %d is outside [1, %d]", lim.MaxWidth, maxDimension))
	}
	if lim.MaxHeight < 1 || lim.MaxHeight > maxDimension {
		errs = append(errs, fmt.Errorf("iiif: MaxHeight %d is outside [1, %d]", lim.MaxHeight, maxDimension))
	}
	if lim.MaxArea < 1 || lim.MaxArea > maxArea {
		errs = append(errs, fmt.Errorf("iiif: MaxArea %d is outside [1, %d]", lim.MaxArea, int64(maxArea)))
	}
	return errors.Join(errs...)
}

// Validate reports every problem of img at once. Resolve, NewPlan and the
// info documents call it, so a reader's mistake becomes an error, not a panic.
func (img Image) Validate() error {
	if len(img.Levels) == 0 || len(img.Levels) > maxLevels {
		return fmt.Errorf("iiif: an image has 1 to %d levels, not %d", maxLevels, len(img.Levels))
	}
	var errs []error
	for i, l := range img.Levels {
		if l.Width < 1 || l.Height < 1 || l.Width > maxDimension || l.Height > maxDimension {
			errs = append(errs, fmt.Errorf("iiif: level %d is %dx%d, outside [1, %d]", i, l.Width, l.Height, maxDimension))
		}
		if l.TileWidth < 1 || l.TileHeight < 1 || l.TileWidth > maxTileSide || l.TileHeight > maxTileSide {
			errs = append(errs, fmt.Errorf("iiif: level %d has %dx%d tiles, outside [1, %d]", i, l.TileWidth, l.TileHeight, maxTileSide))
		}
		if i > 0 && (l.Width > img.Levels[i-1].Width || l.Height > img.Levels[i-1].Height) {
			errs = append(errs, fmt.Errorf("iiif: level %d (%dx%d) is larger than level %d", i, l.Width, l.Height, i-1))
		}
	}
	return errors.Join(errs...)
}

func (img Image) width() int64  { return int64(img.Levels[0].Width) }
func (img Image) height() int64 { return int64(img.Levels[0].Height) }

// factor is the power of two by which level l divides the full image when l
// is a halving of it as libvips, GDAL and viewers make them: each side is the
// full side divided by the factor, rounded down or up. Such a level can be
// advertised in info.json's scaleFactors; other levels are still used to
// derive answers.
func (img Image) factor(l int) (int64, bool) {
	if l == 0 {
		return 1, true
	}
	W, H := img.width(), img.height()
	lw, lh := int64(img.Levels[l].Width), int64(img.Levels[l].Height)
	for s := int64(2); s <= 2*W || s <= 2*H; s *= 2 {
		if divides(W, s, lw) && divides(H, s, lh) {
			return s, true
		}
		if W/s < lw-1 && H/s < lh-1 {
			break
		}
	}
	return 0, false
}

// ScaleFactor is the scale factor info.json advertises for level l: the
// power of two of a halving level (see factor). ok is false for a level
// that is not one, or not a level of img.
func (img Image) ScaleFactor(l int) (s int64, ok bool) {
	if l < 0 || l >= len(img.Levels) || img.Validate() != nil {
		return 0, false
	}
	return img.factor(l)
}

// divides reports whether n is full/s rounded down or up.
func divides(full, s, n int64) bool {
	return full/s == n || ceilDiv(full, s) == n
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// rect is a rectangle of pixels by its origin and size.
type rect struct{ x, y, w, h int64 }

func (r rect) image() image.Rectangle {
	return image.Rect(int(r.x), int(r.y), int(r.x+r.w), int(r.y+r.h))
}

// mapRect is the smallest rectangle of level l's pixels that covers r, a
// rectangle of full-resolution pixels. A halving level's pixel k covers the
// full-resolution pixels [k·s, (k+1)·s); any other level is mapped by the
// ratio of its size to the full size.
func (img Image) mapRect(l int, r rect) rect {
	lw, lh := int64(img.Levels[l].Width), int64(img.Levels[l].Height)
	if s, ok := img.factor(l); ok {
		x0, y0 := r.x/s, r.y/s
		x1, y1 := min(lw, ceilDiv(r.x+r.w, s)), min(lh, ceilDiv(r.y+r.h, s))
		return clampRect(x0, y0, x1, y1, lw, lh)
	}
	W, H := img.width(), img.height()
	x0, y0 := r.x*lw/W, r.y*lh/H
	x1, y1 := min(lw, ceilDiv((r.x+r.w)*lw, W)), min(lh, ceilDiv((r.y+r.h)*lh, H))
	return clampRect(x0, y0, x1, y1, lw, lh)
}

// clampRect keeps a mapped rectangle at least one pixel wide and high and
// inside the level: a sliver of the full image still covers one level pixel.
func clampRect(x0, y0, x1, y1, lw, lh int64) rect {
	x0, y0 = min(x0, lw-1), min(y0, lh-1)
	x1, y1 = max(x1, x0+1), max(y1, y0+1)
	return rect{x0, y0, x1 - x0, y1 - y0}
}

// mapArea is r in level l's pixel coordinates, exactly: full-resolution X
// is X/s on a halving level, X·LW/W on any other. It may end past the
// level's last pixel, by less than one, when the level was rounded down.
func (img Image) mapArea(l int, r rect) [4]float64 {
	lw, lh := float64(img.Levels[l].Width), float64(img.Levels[l].Height)
	sx, sy := lw/float64(img.width()), lh/float64(img.height())
	if s, ok := img.factor(l); ok {
		sx, sy = 1/float64(s), 1/float64(s)
	}
	return [4]float64{float64(r.x) * sx, float64(r.y) * sy, float64(r.x+r.w) * sx, float64(r.y+r.h) * sy}
}
