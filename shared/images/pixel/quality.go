package pixel

import (
	"context"
	"image"
	"image/color"
	"image/draw"
	"math"
	"sync"
)

// applyQuality renders the image in job.Quality. Transparency survives only
// in PNG color and gray answers; JPEG answers, and bitonal ones in either
// format (a pixel is black or white, not half transparent), are flattened
// on white, the ground of most scanned pages.
func applyQuality(_ context.Context, _ *Pipeline, job *Job, f *frame) error {
	flatten := job.Alpha && (job.Format == JPEG || job.Quality == Bitonal)
	if flatten {
		f.img = onWhite(toRGBA(f.img))
	}
	switch job.Quality {
	case Gray:
		f.img = gray(f.img, job.Alpha && !flatten)
	case Bitonal:
		g := gray(f.img, false).(*image.Gray)
		f.img = bitonal(g, job.Format == PNG)
	}
	return nil
}

// toRGBA is img as *image.RGBA, converting when it is another type.
func toRGBA(img image.Image) *image.RGBA {
	if m, ok := img.(*image.RGBA); ok {
		return m
	}
	b := img.Bounds()
	m := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(m, m.Rect, img, b.Min, draw.Src)
	return m
}

// onWhite composites premultiplied m over white, in place.
func onWhite(m *image.RGBA) *image.RGBA {
	for y := range m.Rect.Dy() {
		row := m.Pix[y*m.Stride : y*m.Stride+4*m.Rect.Dx()]
		for i := 0; i < len(row); i += 4 {
			if a := row[i+3]; a != 0xff {
				t := 0xff - a
				row[i], row[i+1], row[i+2], row[i+3] = row[i]+t, row[i+1]+t, row[i+2]+t, 0xff
			}
		}
	}
	return m
}

// gray is img in grayscale, as libvips' colourspace b-w makes it: luminance
// 0.2 R + 0.7 G + 0.1 B in linear light, encoded back to sRGB. With
// keepAlpha it is an *image.NRGBA of gray pixels that keeps img's alpha,
// else an *image.Gray.
func gray(img image.Image, keepAlpha bool) image.Image {
	if g, ok := img.(*image.Gray); ok {
		return g
	}
	src := toRGBA(img)
	w, h := src.Rect.Dx(), src.Rect.Dy()
	if keepAlpha {
		dst := image.NewNRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				c := color.NRGBAModel.Convert(src.RGBAAt(src.Rect.Min.X+x, src.Rect.Min.Y+y)).(color.NRGBA)
				l := luminance(c.R, c.G, c.B)
				dst.SetNRGBA(x, y, color.NRGBA{l, l, l, c.A})
			}
		}
		return dst
	}
	dst := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		s := src.Pix[y*src.Stride : y*src.Stride+4*w]
		d := dst.Pix[y*dst.Stride : y*dst.Stride+w]
		for x := range d {
			d[x] = luminance(s[4*x], s[4*x+1], s[4*x+2])
		}
	}
	return dst
}

// luminance is the sRGB gray of an sRGB color; a gray stays as it is.
func luminance(r, g, b uint8) uint8 {
	if r == g && g == b {
		return r
	}
	t := tables()
	y := 0.2*t.linear[r] + 0.7*t.linear[g] + 0.1*t.linear[b]
	return t.encode[min(int(y*encodeSteps+0.5), encodeSteps)]
}

type gammaTables struct {
	linear [256]float32           // sRGB byte to linear light in [0, 1]
	encode [encodeSteps + 1]uint8 // linear light in 1/encodeSteps steps to sRGB byte
}

const encodeSteps = 1<<16 - 1

// tables are made on first use, not at start-up: most answers are color.
var tables = sync.OnceValue(func() *gammaTables {
	t := new(gammaTables)
	for i := range t.linear {
		v := float64(i) / 255
		if v <= 0.04045 {
			v /= 12.92
		} else {
			v = math.Pow((v+0.055)/1.055, 2.4)
		}
		t.linear[i] = float32(v)
	}
	for i := range t.encode {
		v := float64(i) / encodeSteps
		if v <= 0.0031308 {
			v *= 12.92
		} else {
			v = 1.055*math.Pow(v, 1/2.4) - 0.055
		}
		t.encode[i] = uint8(math.Round(v * 255))
	}
	return t
})

// bitonal thresholds g at mid-gray: each pixel becomes black or white. For
// PNG it is a two-color paletted image, which encodes at one bit a pixel.
func bitonal(g *image.Gray, paletted bool) image.Image {
	w, h := g.Rect.Dx(), g.Rect.Dy()
	if paletted {
		p := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Gray{0}, color.Gray{0xff}})
		for y := range h {
			s, d := g.Pix[y*g.Stride:y*g.Stride+w], p.Pix[y*p.Stride:y*p.Stride+w]
			for x, v := range s {
				d[x] = v >> 7
			}
		}
		return p
	}
	for y := range h {
		s := g.Pix[y*g.Stride : y*g.Stride+w]
		for x, v := range s {
			s[x] = uint8(int8(v) >> 7) // 0x00 below 128, 0xff from it
		}
	}
	return g
}
