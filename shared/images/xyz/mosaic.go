package xyz

import (
	"errors"
	"image"
	"image/color"
	"math"
	"sync"

	"github.com/tilesieve/tilesieve/shared/images/xyz/internal/bilinear"
)

// mosaic8 holds the level pixels one XYZ tile reads, as non-premultiplied
// RGBA; alpha 0 is no data.
type mosaic8 struct {
	bilinear.RGBA
	buf *[]uint8 // pooled
}

// Mosaics are pooled: one is up to MaxReadTiles stored tiles.
var (
	pool8 = sync.Pool{New: func() any { return new([]uint8) }}
	poolF = sync.Pool{New: func() any { return new([]float32) }}
)

func newMosaic8(r image.Rectangle) *mosaic8 {
	n := r.Dx() * r.Dy() * 4
	bp := pool8.Get().(*[]uint8)
	if cap(*bp) < n {
		*bp = make([]uint8, n)
	} else {
		*bp = (*bp)[:n]
		clear(*bp)
	}
	return &mosaic8{RGBA: bilinear.RGBA{Rect: r, Pix: *bp, Stride: r.Dx() * 4}, buf: bp}
}

func (m *mosaic8) release() { pool8.Put(m.buf) }

// place finds where a block of stored tile ti lands: the level pixels it
// fills (clipped to the tile and the mosaic) and the offset from level to
// block coordinates.
func place(g *levelGeom, ti TileIndex, bounds, mosaic image.Rectangle) (image.Rectangle, image.Point) {
	org := image.Pt(ti.X*g.TileWidth, ti.Y*g.TileHeight)
	tile := image.Rectangle{Min: org, Max: org.Add(image.Pt(g.TileWidth, g.TileHeight))}
	r := bounds.Sub(bounds.Min).Add(org).Intersect(tile).Intersect(mosaic)
	return r, bounds.Min.Sub(org)
}

// put copies an 8-bit block into the mosaic, then clears the alpha of
// pixels under the mask or at the nodata value.
func (m *mosaic8) put(t *Tileset, level int, ti TileIndex, b Block) error {
	if b.Image == nil {
		if b.Float != nil {
			return errors.New("xyz: a float block for an 8-bit raster")
		}
		return nil // sparse: no data
	}
	if !blockOK(b) {
		return errMalformed
	}
	r, d := place(&t.levels[level], ti, b.Image.Bounds(), m.Rect)
	nd, hasND := noData8(t.raster.NoData)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		o := (y-m.Rect.Min.Y)*m.Stride + (r.Min.X-m.Rect.Min.X)*4
		row := m.Pix[o : o+r.Dx()*4]
		copyRow8(row, b.Image, r.Min.X+d.X, y+d.Y)
		if hasND {
			for i := 0; i < len(row); i += 4 {
				if row[i] == nd && row[i+1] == nd && row[i+2] == nd {
					row[i+3] = 0
				}
			}
		}
		if b.Mask != nil {
			for i := range r.Dx() {
				if maskAt(b.Mask, r.Min.X+i+d.X, y+d.Y) == 0 {
					row[i*4+3] = 0
				}
			}
		}
	}
	return nil
}

var errMalformed = errors.New("xyz: a block's pixels do not fill its bounds")

// blockOK reports whether a block's pixel slices hold its bounds, so that
// copying from it cannot index past them.
func blockOK(b Block) bool {
	if b.Float != nil && !b.Float.ok() {
		return false
	}
	if b.Mask != nil && !pixOK(len(b.Mask.Pix), b.Mask.Stride, b.Mask.Rect, 1) {
		return false
	}
	switch img := b.Image.(type) {
	case *image.NRGBA:
		return pixOK(len(img.Pix), img.Stride, img.Rect, 4)
	case *image.RGBA:
		return pixOK(len(img.Pix), img.Stride, img.Rect, 4)
	case *image.Gray:
		return pixOK(len(img.Pix), img.Stride, img.Rect, 1)
	case *image.YCbCr:
		if img.Rect.Empty() {
			return true
		}
		c := img.COffset(img.Rect.Max.X-1, img.Rect.Max.Y-1)
		return pixOK(len(img.Y), img.YStride, img.Rect, 1) && c >= 0 && c < len(img.Cb) && c < len(img.Cr)
	}
	return true
}

func pixOK(n, stride int, r image.Rectangle, bpp int) bool {
	dx, dy := r.Dx(), r.Dy()
	return dx <= 0 || dy <= 0 || (stride >= dx*bpp && n >= (dy-1)*stride+dx*bpp)
}

// maskAt is a mask's value, 0 (no data) outside it.
func maskAt(m *image.Alpha, x, y int) uint8 {
	if !image.Pt(x, y).In(m.Rect) {
		return 0
	}
	return m.Pix[m.PixOffset(x, y)]
}

// noData8 is the nodata value as an 8-bit sample, if one can match.
func noData8(nd *float64) (uint8, bool) {
	if nd == nil || !(*nd >= 0 && *nd <= 255) || *nd != math.Trunc(*nd) {
		return 0, false
	}
	return uint8(*nd), true
}

// copyRow8 converts len(dst)/4 pixels of img from (x, y) rightwards to
// non-premultiplied RGBA.
func copyRow8(dst []uint8, img image.Image, x, y int) {
	n := len(dst) / 4
	switch img := img.(type) {
	case *image.NRGBA:
		copy(dst, img.Pix[img.PixOffset(x, y):])
	case *image.Gray:
		src := img.Pix[img.PixOffset(x, y):][:n]
		for i, v := range src {
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = v, v, v, 0xff
		}
	case *image.YCbCr:
		for i := range n {
			yi, ci := img.YOffset(x+i, y), img.COffset(x+i, y)
			r, g, b := color.YCbCrToRGB(img.Y[yi], img.Cb[ci], img.Cr[ci])
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = r, g, b, 0xff
		}
	case *image.RGBA:
		src := img.Pix[img.PixOffset(x, y):][:4*n]
		for i := 0; i < len(src); i += 4 {
			a := src[i+3]
			switch a {
			case 0xff:
				copy(dst[i:i+4], src[i:i+4])
			case 0:
				copy(dst[i:i+4], []uint8{0, 0, 0, 0})
			default:
				for c := range 3 {
					dst[i+c] = uint8((uint32(src[i+c])*0xff + uint32(a)/2) / uint32(a))
				}
				dst[i+3] = a
			}
		}
	default:
		for i := range n {
			c := color.NRGBAModel.Convert(img.At(x+i, y)).(color.NRGBA)
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = c.R, c.G, c.B, c.A
		}
	}
}

// mosaicF holds the level pixels one XYZ tile reads from a float raster;
// NaN is no data.
type mosaicF struct {
	bilinear.Float
	buf *[]float32 // pooled
}

func newMosaicF(r image.Rectangle) *mosaicF {
	n := r.Dx() * r.Dy()
	bp := poolF.Get().(*[]float32)
	if cap(*bp) < n {
		*bp = make([]float32, n)
	}
	*bp = (*bp)[:n]
	fillNaN(*bp)
	return &mosaicF{Float: bilinear.Float{Rect: r, Pix: *bp, Stride: r.Dx()}, buf: bp}
}

func (m *mosaicF) release() { poolF.Put(m.buf) }

// put copies a float block into the mosaic, NaN under the mask and at the
// nodata value.
func (m *mosaicF) put(t *Tileset, level int, ti TileIndex, b Block) error {
	if b.Float == nil {
		if b.Image != nil {
			return errors.New("xyz: an 8-bit block for a float raster")
		}
		return nil
	}
	if !blockOK(b) {
		return errMalformed
	}
	r, d := place(&t.levels[level], ti, b.Float.Rect, m.Rect)
	nan := float32(math.NaN())
	var nd float32
	hasND := t.raster.NoData != nil && !math.IsNaN(*t.raster.NoData)
	if hasND {
		nd = float32(*t.raster.NoData) // compared as the band's type, as GDAL does
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		dst := m.Pix[(y-m.Rect.Min.Y)*m.Stride+r.Min.X-m.Rect.Min.X:][:r.Dx()]
		f := b.Float
		copy(dst, f.Pix[(y+d.Y-f.Rect.Min.Y)*f.Stride+r.Min.X+d.X-f.Rect.Min.X:])
		for i, v := range dst {
			if (hasND && v == nd) || (b.Mask != nil && maskAt(b.Mask, r.Min.X+i+d.X, y+d.Y) == 0) {
				dst[i] = nan
			}
		}
	}
	return nil
}

// fillNaN sets every sample to NaN, doubling a copy: memmove is several
// times faster than storing one float at a time.
func fillNaN(s []float32) {
	if len(s) == 0 {
		return
	}
	s[0] = float32(math.NaN())
	for k := 1; k < len(s); k *= 2 {
		copy(s[k:], s[:k])
	}
}
