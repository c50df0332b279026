package xyz

import (
	"image"
	"math"
)

// FloatImage is a single-band float32 raster laid out as image.Gray is:
// pixel (x, y) is Pix[(y−Rect.Min.Y)·Stride + x−Rect.Min.X]. NaN is no
// data. It is not an image.Image.
type FloatImage struct {
	Pix    []float32
	Stride int
	Rect   image.Rectangle
}

// NewFloatImage returns a FloatImage of the given bounds, every pixel 0.
func NewFloatImage(r image.Rectangle) *FloatImage {
	r = r.Canon()
	return &FloatImage{Pix: make([]float32, r.Dx()*r.Dy()), Stride: r.Dx(), Rect: r}
}

// Bounds is the image's rectangle.
func (f *FloatImage) Bounds() image.Rectangle { return f.Rect }

// At is the value at (x, y), NaN outside the image (or beyond a Pix too
// short for it).
func (f *FloatImage) At(x, y int) float32 {
	i := (y-f.Rect.Min.Y)*f.Stride + x - f.Rect.Min.X
	if !image.Pt(x, y).In(f.Rect) || i < 0 || i >= len(f.Pix) {
		return float32(math.NaN())
	}
	return f.Pix[i]
}

// ok reports whether Pix and Stride hold every pixel of Rect.
func (f *FloatImage) ok() bool {
	dx, dy := f.Rect.Dx(), f.Rect.Dy()
	return dx == 0 || dy == 0 || (f.Stride >= dx && len(f.Pix) >= (dy-1)*f.Stride+dx)
}

// Set sets the value at (x, y); outside the image it does nothing.
func (f *FloatImage) Set(x, y int, v float32) {
	i := (y-f.Rect.Min.Y)*f.Stride + x - f.Rect.Min.X
	if image.Pt(x, y).In(f.Rect) && i >= 0 && i < len(f.Pix) {
		f.Pix[i] = v
	}
}
