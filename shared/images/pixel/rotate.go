package pixel

import (
	"context"
	"image"
)

// rotate mirrors (left to right) and then turns the image clockwise by
// job.Rotate degrees, in one pass.
func rotate(_ context.Context, _ *Pipeline, job *Job, f *frame) error {
	if job.Rotate == 0 && !job.Mirror {
		return nil
	}
	src := pixelsOf(f.img)
	w, h := src.w, src.h
	dw, dh := w, h
	if job.Rotate == 90 || job.Rotate == 270 {
		dw, dh = h, w
	}
	dst := src.like(dw, dh)
	bpp := src.bpp
	for y := range h {
		row := src.pix[y*src.stride:]
		for x := range w {
			sx := x
			if job.Mirror {
				sx = w - 1 - x
			}
			var dx, dy int
			switch job.Rotate {
			case 0:
				dx, dy = x, y
			case 90:
				dx, dy = h-1-y, x
			case 180:
				dx, dy = w-1-x, h-1-y
			default: // 270
				dx, dy = y, w-1-x
			}
			copy(dst.pix[dy*dst.stride+dx*bpp:][:bpp], row[sx*bpp:][:bpp])
		}
	}
	f.img = dst.img
	return nil
}

// pixels is an image's pixel buffer: RGBA and NRGBA at 4 bytes a pixel,
// Gray at 1. Quarter turns move whole pixels, whatever their meaning.
type pixels struct {
	img               image.Image
	pix               []uint8
	stride, w, h, bpp int
}

// pixelsOf is img's buffer, made RGBA first when img is of another type.
func pixelsOf(img image.Image) pixels {
	switch m := img.(type) {
	case *image.RGBA:
		return pixels{m, m.Pix, m.Stride, m.Rect.Dx(), m.Rect.Dy(), 4}
	case *image.NRGBA:
		return pixels{m, m.Pix, m.Stride, m.Rect.Dx(), m.Rect.Dy(), 4}
	case *image.Gray:
		return pixels{m, m.Pix, m.Stride, m.Rect.Dx(), m.Rect.Dy(), 1}
	}
	return pixelsOf(toRGBA(img))
}

// like is a new buffer of p's type and the given size.
func (p pixels) like(w, h int) pixels {
	r := image.Rect(0, 0, w, h)
	switch p.img.(type) {
	case *image.NRGBA:
		m := image.NewNRGBA(r)
		return pixels{m, m.Pix, m.Stride, w, h, 4}
	case *image.Gray:
		m := image.NewGray(r)
		return pixels{m, m.Pix, m.Stride, w, h, 1}
	}
	m := image.NewRGBA(r)
	return pixels{m, m.Pix, m.Stride, w, h, 4}
}
