package pixels

import "image"

// FromLimitedYCbCr converts what golang.org/x/image/webp decodes from a
// lossy WebP, *image.YCbCr or *image.NYCbCrA, to *image.RGBA or
// *image.NRGBA. VP8 stores limited-range BT.601 YCbCr, which image.YCbCr
// would read as full range, washing the colours out (golang/go#40173).
// Other images are returned as they are.
func FromLimitedYCbCr(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.YCbCr:
		out := image.NewRGBA(m.Rect)
		limitedToRGB(out.Pix, out.Stride, m, nil)
		return out
	case *image.NYCbCrA:
		out := image.NewNRGBA(m.Rect)
		limitedToRGB(out.Pix, out.Stride, &m.YCbCr, m)
		return out
	}
	return img
}

// BT.601 limited-range YCbCr to RGB in 16.16 fixed point: luma scaled by
// 255/219 after removing 16, chroma by 255/224 times the JPEG
// coefficients (1.402, 0.344136, 0.714136, 1.772) after removing 128.
const (
	cY   = 76309  // 65536 * 255/219
	cRCr = 104597 // 65536 * 1.402 * 255/224
	cGCb = 25675  // 65536 * 0.344136 * 255/224
	cGCr = 53279  // 65536 * 0.714136 * 255/224
	cBCb = 132201 // 65536 * 1.772 * 255/224
)

// limitedToRGB writes the pixels of m as RGBA into pix (4 bytes a pixel,
// stride bytes a row), alpha from a when not nil, else opaque. Chroma is
// taken from the sample covering each pixel, as image.YCbCr does.
func limitedToRGB(pix []byte, stride int, m *image.YCbCr, a *image.NYCbCrA) {
	r := m.Rect
	for y := r.Min.Y; y < r.Max.Y; y++ {
		row := pix[(y-r.Min.Y)*stride:]
		for x := r.Min.X; x < r.Max.X; x++ {
			yy := (int32(m.Y[m.YOffset(x, y)]) - 16) * cY
			ci := m.COffset(x, y)
			cb, cr := int32(m.Cb[ci])-128, int32(m.Cr[ci])-128
			i := 4 * (x - r.Min.X)
			row[i] = clip8(yy + cRCr*cr)
			row[i+1] = clip8(yy - cGCb*cb - cGCr*cr)
			row[i+2] = clip8(yy + cBCb*cb)
			row[i+3] = 255
			if a != nil {
				row[i+3] = a.A[a.AOffset(x, y)]
			}
		}
	}
}

// clip8 rounds a 16.16 fixed-point value to a byte, clamped to [0, 255].
func clip8(v int32) uint8 {
	v = (v + 1<<15) >> 16
	return uint8(min(255, max(0, v)))
}
