package pixel

import (
	"context"
	"image"

	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"
)

// scale resizes the area to the answer's size, once. A source already at
// that size (a stored tile, a level at its own size) is not touched.
//
// An area on whole pixels is scaled with Scale (separable, the fastest).
// One with fractional edges (a region off the level's pixel grid, or a
// level rounded down, whose last pixel stands for less than the others) is
// sampled exactly with ApproxBiLinear's Transform when it shrinks by at
// most 2; rounding it to whole pixels would shift the answer by up to one
// pixel, which costs more fidelity than any kernel gains (against vips from
// full resolution, 400x280 from a 1001x701 image's 500x350 level: 27.5 dB
// rounded, 33.2 dB exact). Larger fractional scales, rare once plans use
// the smallest sufficient level, are scaled from the whole pixels, where
// the shift is under half a pixel.
func scale(_ context.Context, _ *Pipeline, job *Job, f *frame) error {
	b := f.img.Bounds()
	src := job.Source.Size()
	if src.X == job.Width && src.Y == job.Height {
		if b.Size() != src {
			f.img = f.img.(interface {
				SubImage(image.Rectangle) image.Image
			}).SubImage(image.Rectangle{Min: b.Min, Max: b.Min.Add(src)})
		}
		return nil
	}
	dst := image.NewRGBA(image.Rect(0, 0, job.Width, job.Height))
	a := job.Area
	ox, oy := float64(job.Source.Min.X-b.Min.X), float64(job.Source.Min.Y-b.Min.Y)
	aw, ah := a.X1-a.X0, a.Y1-a.Y0
	whole := a == Rect{float64(job.Source.Min.X), float64(job.Source.Min.Y), float64(job.Source.Max.X), float64(job.Source.Max.Y)}
	small := aw >= float64(job.Width) && ah >= float64(job.Height) && aw <= 2*float64(job.Width) && ah <= 2*float64(job.Height)
	if whole || !small {
		sr := image.Rectangle{Min: b.Min, Max: b.Min.Add(src)}
		kernelFor(src.X, src.Y, job.Width, job.Height).Scale(dst, dst.Rect, f.img, sr, draw.Src, nil)
		f.img = dst
		return nil
	}
	sx, sy := float64(job.Width)/aw, float64(job.Height)/ah
	// s2d maps the area's top-left corner, in f.img's coordinates, to (0, 0).
	s2d := f64.Aff3{sx, 0, -(a.X0 - ox) * sx, 0, sy, -(a.Y0 - oy) * sy}
	draw.ApproxBiLinear.Transform(dst, s2d, f.img, b, draw.Src, nil)
	f.img = dst
	return nil
}

// kernelFor picks the resampling kernel for a sw×sh source scaled to dw×dh,
// by measurement against vips from full resolution (go test -v -run
// Fidelity ./shared/images/iiif: a source with text and thin lines) and by
// BenchmarkScale512From1024:
//
//   - shrinking by at most 2, what plans from the smallest sufficient level
//     mostly ask: ApproxBiLinear, 31.4 to 33.3 dB against thumbnail_image
//     (CatmullRom 34.9 to 36.8, BiLinear 29.5 to 30.6), 5 times faster
//     than CatmullRom with Scale and 15 times with Transform;
//   - shrinking by more (a pyramid missing levels, a distorting w,h):
//     CatmullRom, which widens with the scale (at 10 times 40.9 dB, where
//     ApproxBiLinear's four taps alias: 20.8);
//   - enlarging, rare (^ sizes, from full resolution): CatmullRom, 49.9 dB
//     against vips' bicubic affine, ApproxBiLinear 40.3.
func kernelFor(sw, sh, dw, dh int) draw.Scaler {
	if dw > sw || dh > sh || sw > 2*dw || sh > 2*dh {
		return draw.CatmullRom
	}
	return draw.ApproxBiLinear
}
