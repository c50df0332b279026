// Package pixels turns decompressed TIFF samples into images: 8-bit gray,
// gray+alpha, RGB and RGBA into the standard library's image types, 16-bit
// integer and 32-bit float samples into float32, 1-bit and 8-bit masks into
// image.Alpha, and lossy WebP's limited-range YCbCr into RGB. Callers pass
// buffers of the right size.
package pixels

import (
	"encoding/binary"
	"image"
	"math"
)

// Image8 builds the w x h image of bands 8-bit samples in buf, which it
// may keep and modify: gray as *image.Gray (inverted with minIsWhite);
// gray+alpha and RGBA as *image.RGBA when premultiplied, *image.NRGBA when
// not; RGB as *image.RGBA with alpha 255. RGBA keeps buf as its pixels.
func Image8(buf []byte, w, h, bands int, premultiplied, minIsWhite bool) image.Image {
	r := image.Rect(0, 0, w, h)
	switch bands {
	case 1:
		if minIsWhite {
			for i := range buf {
				buf[i] = 255 - buf[i]
			}
		}
		return &image.Gray{Pix: buf, Stride: w, Rect: r}
	case 2:
		pix := make([]byte, 4*w*h)
		for i, j := 0, 0; i+1 < len(buf); i, j = i+2, j+4 {
			g, a := buf[i], buf[i+1]
			pix[j], pix[j+1], pix[j+2], pix[j+3] = g, g, g, a
		}
		return rgba(pix, r, premultiplied)
	case 3:
		pix := make([]byte, 4*w*h)
		for i, j := 0, 0; i+2 < len(buf); i, j = i+3, j+4 {
			pix[j], pix[j+1], pix[j+2], pix[j+3] = buf[i], buf[i+1], buf[i+2], 255
		}
		return &image.RGBA{Pix: pix, Stride: 4 * w, Rect: r}
	}
	return rgba(buf, r, premultiplied)
}

func rgba(pix []byte, r image.Rectangle, premultiplied bool) image.Image {
	if premultiplied {
		return &image.RGBA{Pix: pix, Stride: 4 * r.Dx(), Rect: r}
	}
	return &image.NRGBA{Pix: pix, Stride: 4 * r.Dx(), Rect: r}
}

// Float32 converts n samples in buf, in byte order o: 16-bit integers
// (signed or not) or, for 32 bits, floats.
func Float32(buf []byte, n, bits int, signed bool, o binary.ByteOrder) []float32 {
	pix := make([]float32, n)
	switch {
	case bits == 16 && signed:
		for i := range pix {
			pix[i] = float32(int16(o.Uint16(buf[2*i:])))
		}
	case bits == 16:
		for i := range pix {
			pix[i] = float32(o.Uint16(buf[2*i:]))
		}
	default:
		for i := range pix {
			pix[i] = math.Float32frombits(o.Uint32(buf[4*i:]))
		}
	}
	return pix
}

// Mask expands a w x h mask of 1-bit samples (rows padded to a byte, most
// significant bit first) or 8-bit samples into an alpha image, 255 where
// the bit is set. A nil buf is all transparent.
func Mask(buf []byte, w, h, bits int) *image.Alpha {
	a := image.NewAlpha(image.Rect(0, 0, w, h))
	switch {
	case buf == nil:
	case bits == 8:
		copy(a.Pix, buf)
	default:
		row := (w + 7) / 8
		for y := range h {
			bits := buf[y*row : (y+1)*row]
			pix := a.Pix[y*a.Stride : y*a.Stride+w]
			for x := range pix {
				if bits[x>>3]&(0x80>>(x&7)) != 0 {
					pix[x] = 255
				}
			}
		}
	}
	return a
}
