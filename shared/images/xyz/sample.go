package xyz

import "image"

// positions fills the level positions of window row r.
func (j *job) positions(r int, us, vs []float64) {
	if j.grid != nil {
		j.grid.Row(r, us, vs)
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
		if m.SampleRow(us, vs, out.Pix[o:o+4*w]) {
			found = true
		}
	}
	return found
}

// sampleF is sample8 for a float raster: no data is NaN.
func (j *job) sampleF(m *mosaicF, out *FloatImage) bool {
	fillNaN(out.Pix)
	w := j.win.Dx()
	us, vs := make([]float64, w), make([]float64, w)
	found := false
	for r := range j.win.Dy() {
		j.positions(r, us, vs)
		o := (j.win.Min.Y+r-out.Rect.Min.Y)*out.Stride + j.win.Min.X - out.Rect.Min.X
		if m.SampleRow(us, vs, out.Pix[o:o+w]) {
			found = true
		}
	}
	return found
}
