package iiif

import (
	"fmt"
	"image"
	"math"
)

// Plan is how to make an answer from stored tiles: the level to read, the
// rectangle of that level's pixels the answer is made from, and the stored
// tiles covering it.
type Plan struct {
	Level int
	// Source is the rectangle of the level's pixels covering the region.
	Source image.Rectangle
	// Tiles is the range of stored tiles covering Source, in tile columns
	// and rows: tile (x, y) for Min.X <= x < Max.X, Min.Y <= y < Max.Y.
	Tiles                 image.Rectangle
	TileWidth, TileHeight int
	// DecodedPixels is the number of pixels decoding those tiles makes,
	// padding included: what a caller bounds per request.
	DecodedPixels int64

	// area is the region in the level's pixel coordinates, exactly: the
	// pipeline samples it, not Source, so that a level rounded down (its
	// last pixel standing for one full-resolution pixel more than the
	// others) does not shift the answer.
	area    [4]float64
	match   TileMatch
	matched bool
}

// TileMatch is a request answered by one stored tile at its own size.
type TileMatch struct {
	Level, X, Y int
	// Padded is true when the stored tile extends past the level's edge:
	// the answer is its top-left part, so its stored bytes cannot be passed
	// through, and rendering the plan decodes and crops it.
	Padded bool
}

// NewPlan plans res against img. It chooses a level whose pixels are the
// answer's at scale 1 if there is one (a stored tile, or a level's full
// size), else the smallest level that still has at least the answer's
// pixels over the region, so nothing is upscaled unless even the full
// resolution must be.
func NewPlan(res Resolved, img Image) (Plan, error) {
	if err := img.Validate(); err != nil {
		return Plan{}, err
	}
	r := rect{int64(res.Region.Min.X), int64(res.Region.Min.Y), int64(res.Region.Dx()), int64(res.Region.Dy())}
	if r.w < 1 || r.h < 1 || r.x+r.w > img.width() || r.y+r.h > img.height() || r.x < 0 || r.y < 0 {
		return Plan{}, fmt.Errorf("iiif: region %v is not inside the %dx%d image", res.Region, img.width(), img.height())
	}
	w, h := int64(res.Width), int64(res.Height)
	l, m, exact := chooseLevel(img, r, w, h)
	lv := img.Levels[l]
	tw, th := int64(lv.TileWidth), int64(lv.TileHeight)
	tiles := image.Rect(int(m.x/tw), int(m.y/th), int(ceilDiv(m.x+m.w, tw)), int(ceilDiv(m.y+m.h, th)))
	p := Plan{
		Level:         l,
		Source:        m.image(),
		Tiles:         tiles,
		TileWidth:     lv.TileWidth,
		TileHeight:    lv.TileHeight,
		DecodedPixels: int64(tiles.Dx()) * int64(tiles.Dy()) * tw * th,
		area:          img.mapArea(l, r),
	}
	if exact && tiles.Dx() == 1 && tiles.Dy() == 1 && storable(res, img) &&
		m.x%tw == 0 && m.y%th == 0 && m.w == min(tw, int64(lv.Width)-m.x) && m.h == min(th, int64(lv.Height)-m.y) {
		p.match = TileMatch{Level: l, X: tiles.Min.X, Y: tiles.Min.Y, Padded: m.w < tw || m.h < th}
		p.matched = true
	}
	return p, nil
}

// chooseLevel picks the level to read (see NewPlan) and the region in its
// pixels; exact is true when they are the answer's pixels at scale 1.
func chooseLevel(img Image, r rect, w, h int64) (l int, m rect, exact bool) {
	for l := range img.Levels {
		s, ok := img.factor(l)
		if !ok || !img.onGrid(r, s) {
			continue
		}
		if m := img.mapRect(l, r); m.w == w && m.h == h {
			return l, m, true
		}
	}
	for l := len(img.Levels) - 1; l > 0; l-- {
		if img.holds(l, r, w, h) {
			return l, img.mapRect(l, r), false
		}
	}
	return 0, img.mapRect(0, r), false
}

// holds reports whether level l has at least w×h pixels over region r at
// its nominal scale: the region's exact extent in the level, rounded up.
// A level rounded down (libvips, GDAL) has a fraction of a pixel less at
// its far edges than a viewer computing its size rounding up asks for
// (147.75 columns where it asks for 148); that level still answers, its
// last pixel stretched by the fraction, rather than a level four times the
// pixels and often twice the reads.
func (img Image) holds(l int, r rect, w, h int64) bool {
	const eps = 1e-9
	a := img.mapArea(l, r)
	return int64(math.Ceil(a[2]-a[0]-eps)) >= w && int64(math.Ceil(a[3]-a[1]-eps)) >= h
}

// onGrid reports whether region r starts and ends on the pixel boundaries of
// a halving level of factor s (or at the image's far edges).
func (img Image) onGrid(r rect, s int64) bool {
	return r.x%s == 0 && r.y%s == 0 &&
		((r.x+r.w)%s == 0 || r.x+r.w == img.width()) && ((r.y+r.h)%s == 0 || r.y+r.h == img.height())
}

// storable reports whether the stored tiles of img are, as they are, the
// answer's rendering: JPEG, unrotated, unmirrored, in the default quality.
func storable(res Resolved, img Image) bool {
	return img.JPEGTiles && res.Format == FormatJPEG && res.Rotation == 0 && !res.Mirror &&
		res.Quality == effectiveQuality(QualityDefault, img.Gray)
}

// Match reports whether the answer is exactly one stored tile at its own
// size: the cheap path, where a JPEG tile that is not Padded is answered
// with its stored bytes and no decode at all.
func (p Plan) Match() (TileMatch, bool) { return p.match, p.matched }

// TileList lists the tiles of p.Tiles row by row, for one coalesced read.
// Check DecodedPixels before asking for it: its length is the tile count.
func (p Plan) TileList() []image.Point {
	list := make([]image.Point, 0, p.Tiles.Dx()*p.Tiles.Dy())
	for y := p.Tiles.Min.Y; y < p.Tiles.Max.Y; y++ {
		for x := p.Tiles.Min.X; x < p.Tiles.Max.X; x++ {
			list = append(list, image.Pt(x, y))
		}
	}
	return list
}
