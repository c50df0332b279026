// Package bilinear samples a mosaic of pixels at fractional positions with
// gdalwarp's rule for sources with no data: an output pixel is no data when
// the source pixel under its centre is; otherwise it is the bilinear mean of
// the valid ones among the four neighbours, so no data never bleeds into
// the edge of the data. Positions are in the mosaic's pixel coordinates,
// pixel (x, y) covering [x, x+1) × [y, y+1).
package bilinear

import (
	"image"
	"math"
)

// RGBA is a mosaic of non-premultiplied RGBA pixels; alpha 0 is no data.
type RGBA struct {
	Rect   image.Rectangle
	Pix    []uint8
	Stride int
}

// SampleRow samples the mosaic at each (us[i], vs[i]) into dst[4i:4i+4],
// leaving no-data pixels as they are. Colours are weighted by alpha (a
// premultiplied mean), so a translucent pixel counts for what it shows. It
// reports whether any pixel holds data.
func (m *RGBA) SampleRow(us, vs []float64, dst []uint8) bool {
	minX, minY := float64(m.Rect.Min.X), float64(m.Rect.Min.Y)
	maxX, maxY := float64(m.Rect.Max.X), float64(m.Rect.Max.Y)
	w, h := m.Rect.Dx(), m.Rect.Dy()
	found := false
	for i, u := range us {
		v := vs[i]
		if !(u >= minX && u < maxX && v >= minY && v < maxY) {
			continue
		}
		fu, fv := u-0.5, v-0.5
		fx, fy := math.Floor(fu), math.Floor(fv)
		ax, ay := fu-fx, fv-fy
		x0, y0 := int(fx)-m.Rect.Min.X, int(fy)-m.Rect.Min.Y
		d := dst[4*i:][:4]
		if x0 >= 0 && y0 >= 0 && x0+1 < w && y0+1 < h {
			// The common case: four opaque neighbours inside the mosaic.
			o := y0*m.Stride + x0*4
			p, q := m.Pix[o:o+8], m.Pix[o+m.Stride:o+m.Stride+8]
			if p[3]&p[7]&q[3]&q[7] == 0xff {
				// Fixed point: weights in 1/1024ths move a value by at most
				// an eighth of a level, and integers are faster here.
				bx, by := uint32(ax*1024+0.5), uint32(ay*1024+0.5)
				for c := range 3 {
					top := uint32(p[c])*(1024-bx) + uint32(p[4+c])*bx
					bottom := uint32(q[c])*(1024-bx) + uint32(q[4+c])*bx
					d[c] = uint8((top*(1024-by) + bottom*by + 1<<19) >> 20)
				}
				d[3] = 0xff
				found = true
				continue
			}
		}
		if m.Pix[(int(v)-m.Rect.Min.Y)*m.Stride+(int(u)-m.Rect.Min.X)*4+3] == 0 {
			continue
		}
		if m.masked(x0, y0, ax, ay, d) {
			found = true
		}
	}
	return found
}

// masked is the general case: neighbours outside the mosaic or without data
// are left out of the mean.
func (m *RGBA) masked(x0, y0 int, ax, ay float64, d []uint8) bool {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	var sw, swa, sr, sg, sb float64
	for k := range 4 {
		x, y := x0+k&1, y0+k>>1
		if x < 0 || y < 0 || x >= w || y >= h {
			continue
		}
		p := m.Pix[y*m.Stride+x*4:][:4]
		if p[3] == 0 {
			continue
		}
		wt := weight(k, ax, ay)
		wa := wt * float64(p[3])
		sw, swa = sw+wt, swa+wa
		sr, sg, sb = sr+wa*float64(p[0]), sg+wa*float64(p[1]), sb+wa*float64(p[2])
	}
	if !(swa > 0) {
		return false
	}
	d[0], d[1], d[2] = uint8(sr/swa+0.5), uint8(sg/swa+0.5), uint8(sb/swa+0.5)
	d[3] = uint8(swa/sw + 0.5)
	return true
}

// weight is neighbour k's bilinear weight: k&1 the column, k>>1 the row.
func weight(k int, ax, ay float64) float64 {
	wx, wy := 1-ax, 1-ay
	if k&1 == 1 {
		wx = ax
	}
	if k>>1 == 1 {
		wy = ay
	}
	return wx * wy
}

// Float is a mosaic of float32 samples; NaN is no data.
type Float struct {
	Rect   image.Rectangle
	Pix    []float32
	Stride int
}

// SampleRow samples the mosaic at each (us[i], vs[i]) into dst[i], leaving
// no-data pixels as they are; it reports whether any pixel holds data.
func (m *Float) SampleRow(us, vs []float64, dst []float32) bool {
	minX, minY := float64(m.Rect.Min.X), float64(m.Rect.Min.Y)
	maxX, maxY := float64(m.Rect.Max.X), float64(m.Rect.Max.Y)
	w, h := m.Rect.Dx(), m.Rect.Dy()
	found := false
	for i, u := range us {
		v := vs[i]
		if !(u >= minX && u < maxX && v >= minY && v < maxY) ||
			math.IsNaN(float64(m.Pix[(int(v)-m.Rect.Min.Y)*m.Stride+int(u)-m.Rect.Min.X])) {
			continue
		}
		fu, fv := u-0.5, v-0.5
		fx, fy := math.Floor(fu), math.Floor(fv)
		ax, ay := fu-fx, fv-fy
		x0, y0 := int(fx)-m.Rect.Min.X, int(fy)-m.Rect.Min.Y
		if x0 >= 0 && y0 >= 0 && x0+1 < w && y0+1 < h {
			o := y0*m.Stride + x0
			p, q := m.Pix[o:o+2], m.Pix[o+m.Stride:o+m.Stride+2]
			p0, p1, q0, q1 := float64(p[0]), float64(p[1]), float64(q[0]), float64(q[1])
			top, bottom := p0+ax*(p1-p0), q0+ax*(q1-q0)
			if r := top + ay*(bottom-top); r == r { // NaN if any neighbour is
				dst[i] = float32(r)
				found = true
				continue
			}
		}
		var sw, s float64
		for k := range 4 {
			x, y := x0+k&1, y0+k>>1
			if x < 0 || y < 0 || x >= w || y >= h {
				continue
			}
			if p := float64(m.Pix[y*m.Stride+x]); !math.IsNaN(p) {
				wt := weight(k, ax, ay)
				sw, s = sw+wt, s+wt*p
			}
		}
		if sw > 0 {
			dst[i] = float32(s / sw)
			found = true
		}
	}
	return found
}
