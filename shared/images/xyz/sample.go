package xyz

import (
	"image"
	"math"
)

// Bilinear sampling follows gdalwarp's rule for masked sources: an output
// pixel is no data when the source pixel under its centre is; otherwise it is
// the bilinear mean of the valid ones among the four neighbours, so no data
// never bleeds colour into the edge of the data.

// positions fills the level positions of window row r.
func (j *job) positions(r int, us, vs []float64) {
	if j.grid != nil {
		j.grid.row(r, us, vs)
		return
	}
	copy(us, j.us)
	v := j.vs[r]
	for i := range vs {
		vs[i] = v
	}
}

// sample8 fills out's window from the mosaic; it reports whether any pixel
// holds data.
func (j *job) sample8(m *mosaic8, out *image.NRGBA) bool {
	w := j.win.Dx()
	us, vs := make([]float64, w), make([]float64, w)
	found := false
	for r := range j.win.Dy() {
		j.positions(r, us, vs)
		o := out.PixOffset(j.win.Min.X, j.win.Min.Y+r)
		if m.sampleRow(us, vs, out.Pix[o:o+4*w]) {
			found = true
		}
	}
	return found
}

// sampleRow samples the mosaic at each (us[i], vs[i]) into dst[4i:4i+4].
// Colours are weighted by alpha (a premultiplied mean), so a translucent
// source pixel counts for what it shows.
func (m *mosaic8) sampleRow(us, vs []float64, dst []uint8) bool {
	minX, minY := float64(m.r.Min.X), float64(m.r.Min.Y)
	maxX, maxY := float64(m.r.Max.X), float64(m.r.Max.Y)
	w, h := m.r.Dx(), m.r.Dy()
	found := false
	for i, u := range us {
		v := vs[i]
		if !(u >= minX && u < maxX && v >= minY && v < maxY) {
			continue
		}
		fu, fv := u-0.5, v-0.5
		fx, fy := math.Floor(fu), math.Floor(fv)
		ax, ay := fu-fx, fv-fy
		x0, y0 := int(fx)-m.r.Min.X, int(fy)-m.r.Min.Y
		if x0 >= 0 && y0 >= 0 && x0+1 < w && y0+1 < h {
			// The common case: four opaque neighbours inside the mosaic.
			o := y0*m.stride + x0*4
			p, q := m.pix[o:o+8], m.pix[o+m.stride:o+m.stride+8]
			if p[3]&p[7]&q[3]&q[7] == 0xff {
				// Fixed point: weights in 1/1024ths move a value by at most
				// an eighth of a level, and integers are faster here.
				bx, by := uint32(ax*1024+0.5), uint32(ay*1024+0.5)
				d := dst[4*i:][:4]
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
		if m.pix[(int(v)-m.r.Min.Y)*m.stride+(int(u)-m.r.Min.X)*4+3] == 0 {
			continue
		}
		var sw, swa, sr, sg, sb float64
		for k := range 4 {
			x, y := x0+k&1, y0+k>>1
			if x < 0 || y < 0 || x >= w || y >= h {
				continue
			}
			p := m.pix[y*m.stride+x*4:][:4]
			if p[3] == 0 {
				continue
			}
			wt := 1 - ax
			if k&1 == 1 {
				wt = ax
			}
			if k>>1 == 1 {
				wt *= ay
			} else {
				wt *= 1 - ay
			}
			wa := wt * float64(p[3])
			sw, swa = sw+wt, swa+wa
			sr, sg, sb = sr+wa*float64(p[0]), sg+wa*float64(p[1]), sb+wa*float64(p[2])
		}
		if !(swa > 0) {
			continue
		}
		d := dst[4*i:][:4]
		d[0], d[1], d[2] = uint8(sr/swa+0.5), uint8(sg/swa+0.5), uint8(sb/swa+0.5)
		d[3] = uint8(swa/sw + 0.5)
		found = true
	}
	return found
}

// sampleF is sample8 for a float raster: no data is NaN.
func (j *job) sampleF(m *mosaicF, out *FloatImage) bool {
	nan := float32(math.NaN())
	for i := range out.Pix {
		out.Pix[i] = nan
	}
	w := j.win.Dx()
	us, vs := make([]float64, w), make([]float64, w)
	found := false
	for r := range j.win.Dy() {
		j.positions(r, us, vs)
		o := (j.win.Min.Y+r-out.Rect.Min.Y)*out.Stride + j.win.Min.X - out.Rect.Min.X
		if m.sampleRow(us, vs, out.Pix[o:o+w]) {
			found = true
		}
	}
	return found
}

func (m *mosaicF) sampleRow(us, vs []float64, dst []float32) bool {
	minX, minY := float64(m.r.Min.X), float64(m.r.Min.Y)
	maxX, maxY := float64(m.r.Max.X), float64(m.r.Max.Y)
	w, h := m.r.Dx(), m.r.Dy()
	found := false
	for i, u := range us {
		v := vs[i]
		if !(u >= minX && u < maxX && v >= minY && v < maxY) {
			continue
		}
		if math.IsNaN(float64(m.pix[(int(v)-m.r.Min.Y)*w+int(u)-m.r.Min.X])) {
			continue
		}
		fu, fv := u-0.5, v-0.5
		fx, fy := math.Floor(fu), math.Floor(fv)
		ax, ay := fu-fx, fv-fy
		x0, y0 := int(fx)-m.r.Min.X, int(fy)-m.r.Min.Y
		var sw, s float64
		for k := range 4 {
			x, y := x0+k&1, y0+k>>1
			if x < 0 || y < 0 || x >= w || y >= h {
				continue
			}
			p := float64(m.pix[y*w+x])
			if math.IsNaN(p) {
				continue
			}
			wt := 1 - ax
			if k&1 == 1 {
				wt = ax
			}
			if k>>1 == 1 {
				wt *= ay
			} else {
				wt *= 1 - ay
			}
			sw, s = sw+wt, s+wt*p
		}
		if sw > 0 {
			dst[i] = float32(s / sw)
			found = true
		}
	}
	return found
}
