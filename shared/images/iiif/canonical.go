package iiif

import (
	"strconv"
	"strings"
)

// canonical is the canonical form of a resolved request (3.0 section 4.8,
// 2.1 section 4.7), "region/size/rotation/quality.format":
//
//   - region: "full" when the whole image is asked for, however it was
//     written (x,y,w,h or pct: covering it, square of a square image);
//     otherwise x,y,w,h of the region clipped to the image;
//   - size, 3.0: "max" when the size is what max gives, "^max" when it is
//     what ^max gives and that upscales, else "w,h", "^w,h" if it upscales;
//   - size, 2.1: "full" when the region is not scaled, "w," when w, alone
//     gives this size, else "w,h";
//   - rotation: "!" when mirrored, then the integer degrees (360 is 0);
//   - quality: "default" when it is the image's default (color of a color
//     image, gray or color of a gray one), else its name.
func canonical(res Resolved, img Image, r rect, lim Limits) string {
	var b strings.Builder
	b.Grow(48)
	if r.x == 0 && r.y == 0 && r.w == img.width() && r.h == img.height() {
		b.WriteString("full")
	} else {
		writeInts(&b, r.x, r.y, r.w, r.h)
	}
	b.WriteByte('/')
	w, h := int64(res.Width), int64(res.Height)
	if res.Version == V3 {
		canonicalSizeV3(&b, r, w, h, lim)
	} else {
		canonicalSizeV2(&b, img, r, w, h)
	}
	b.WriteByte('/')
	if res.Mirror {
		b.WriteByte('!')
	}
	b.WriteString(strconv.Itoa(res.Rotation))
	b.WriteByte('/')
	if effectiveQuality(QualityDefault, img.Gray) == res.Quality {
		b.WriteString("default")
	} else {
		b.WriteString(res.Quality.String())
	}
	b.WriteByte('.')
	b.WriteString(res.Format.String())
	return b.String()
}

func canonicalSizeV3(b *strings.Builder, r rect, w, h int64, lim Limits) {
	if mw, mh := fitLimits(r.w, r.h, lim, false); w == mw && h == mh {
		b.WriteString("max")
		return
	}
	if uw, uh := fitLimits(r.w, r.h, lim, true); w == uw && h == uh {
		b.WriteString("^max")
		return
	}
	if w > r.w || h > r.h {
		b.WriteByte('^')
	}
	writeInts(b, w, h)
}

func canonicalSizeV2(b *strings.Builder, img Image, r rect, w, h int64) {
	switch {
	case w == r.w && h == r.h:
		b.WriteString("full")
	case img.scaleSide(r, w, true) == h:
		writeInts(b, w)
		b.WriteByte(',')
	default:
		writeInts(b, w, h)
	}
}

// writeInts writes ns separated by commas.
func writeInts(b *strings.Builder, ns ...int64) {
	var buf [20]byte
	for i, n := range ns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(strconv.AppendInt(buf[:0], n, 10))
	}
}
