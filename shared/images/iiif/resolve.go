package iiif

import (
	"image"
	"math"
)

// Resolved is what an image request asks of one image: the region in
// full-resolution pixels, the size it is scaled to, then mirroring, rotation,
// quality and format. Canonical names it exactly, so answers can be cached
// under it: two requests with the same Canonical get the same bytes.
type Resolved struct {
	Version Version
	// Region is in full-resolution pixels, clipped to the image.
	Region image.Rectangle
	// Width and Height are the scaled size, before rotation.
	Width, Height int
	// Rotation is 0, 90, 180 or 270 degrees clockwise, after mirroring.
	Rotation int
	Mirror   bool
	// Quality is the quality of the answer: QualityColor, QualityGray or
	// QualityBitonal, never QualityDefault.
	Quality Quality
	Format  Format
	// Canonical is "region/size/rotation/quality.format" in the canonical
	// form of the request's version.
	Canonical string
}

// OutputSize is the size of the answer, after rotation.
func (r Resolved) OutputSize() (w, h int) {
	if r.Rotation == 90 || r.Rotation == 270 {
		return r.Height, r.Width
	}
	return r.Width, r.Height
}

// Resolve decides what req asks of img under lim. A request the
// specification refuses is an *Error carrying its status; an invalid img or
// lim is a plain error.
func Resolve(req Request, img Image, lim Limits) (Resolved, error) {
	if err := img.Validate(); err != nil {
		return Resolved{}, err
	}
	if err := lim.Validate(); err != nil {
		return Resolved{}, err
	}
	r, err := resolveRegion(req.Region, img.width(), img.height())
	if err != nil {
		return Resolved{}, err
	}
	w, h, err := resolveSize(req, img, r, lim)
	if err != nil {
		return Resolved{}, err
	}
	res := Resolved{
		Version:  req.Version,
		Region:   r.image(),
		Width:    int(w),
		Height:   int(h),
		Rotation: req.Rotation.Degrees,
		Mirror:   req.Rotation.Mirror,
		Quality:  effectiveQuality(req.Quality, img.Gray),
		Format:   req.Format,
	}
	res.Canonical = canonical(res, img, r, lim)
	return res, nil
}

// effectiveQuality is what a quality gives: default is the image's own;
// color of a gray image is gray, which the specification allows ("may be
// comprised solely of grayscale ... pixels") and forbids refusing.
func effectiveQuality(q Quality, gray bool) Quality {
	switch {
	case q == QualityBitonal || q == QualityGray:
		return q
	case gray:
		return QualityGray
	}
	return QualityColor
}

func resolveRegion(reg Region, W, H int64) (rect, error) {
	switch reg.Kind {
	case RegionSquare:
		s := min(W, H)
		return rect{(W - s) / 2, (H - s) / 2, s, s}, nil
	case RegionPixels:
		return clip(rect{reg.X, reg.Y, reg.W, reg.H}, W, H)
	case RegionPercent:
		r := rect{pctOf(reg.Pct[0], W), pctOf(reg.Pct[1], H), pctOf(reg.Pct[2], W), pctOf(reg.Pct[3], H)}
		if r.w == 0 || r.h == 0 {
			return rect{}, badRequest("region %s is less than one pixel of this %dx%d image", reg, W, H)
		}
		return clip(r, W, H)
	}
	return rect{0, 0, W, H}, nil
}

// pctOf is p percent of n pixels, rounded to nearest, and at most n.
func pctOf(p float64, n int64) int64 {
	v := p * float64(n) / 100
	if v >= float64(n) {
		return n
	}
	return int64(math.Round(v))
}

// clip crops r at the image's edges, as both versions ask (section 4.1).
func clip(r rect, W, H int64) (rect, error) {
	if r.x >= W || r.y >= H {
		return rect{}, badRequest("region %d,%d,%d,%d is outside the %dx%d image", r.x, r.y, r.w, r.h, W, H)
	}
	r.w, r.h = min(r.w, W-r.x), min(r.h, H-r.y)
	return r, nil
}

// resolveSize is the scaled size of region r (section 4.2 of each version).
// Version 3.0 upscales only after "^"; 2.1 may always upscale (the
// sizeAboveFull feature). Both stay within lim.
func resolveSize(req Request, img Image, r rect, lim Limits) (w, h int64, err error) {
	s, v := req.Size, req.Version
	up := s.Upscale || v == V2
	switch s.Kind {
	case SizeMax:
		w, h = fitLimits(r.w, r.h, lim, s.Upscale)
	case SizeFull:
		w, h = r.w, r.h
	case SizeWidth, SizeHeight:
		n, side, maxN := s.W, r.w, lim.MaxWidth
		if s.Kind == SizeHeight {
			n, side, maxN = s.H, r.h, lim.MaxHeight
		}
		if !up && n > side {
			return 0, 0, upscaleError(s, r)
		}
		if n > maxN {
			return 0, 0, limitError(v, s, r, lim)
		}
		if w, h = n, img.scaleSide(r, n, true); s.Kind == SizeHeight {
			w, h = img.scaleSide(r, n, false), n
		}
	case SizePercent:
		if !up && s.Pct > 100 {
			return 0, 0, upscaleError(s, r)
		}
		fw, fh := float64(r.w)*s.Pct/100, float64(r.h)*s.Pct/100
		if fw >= float64(lim.MaxWidth)+1 || fh >= float64(lim.MaxHeight)+1 {
			return 0, 0, limitError(v, s, r, lim)
		}
		w, h = int64(math.Round(fw)), int64(math.Round(fh))
	case SizeExact:
		if !up && (s.W > r.w || s.H > r.h) {
			return 0, 0, upscaleError(s, r)
		}
		w, h = s.W, s.H
	case SizeConfined:
		w, h = img.confine(r, s.W, s.H, lim, up)
	}
	if w < 1 || h < 1 {
		return 0, 0, badRequest("size %s of the %dx%d region is less than one pixel", s, r.w, r.h)
	}
	if w > lim.MaxWidth || h > lim.MaxHeight || w*h > lim.MaxArea {
		return 0, 0, limitError(v, s, r, lim)
	}
	return w, h, nil
}

func upscaleError(s Size, r rect) error {
	return badRequest("size %s is larger than the %dx%d region: prefix it with ^ to upscale", s, r.w, r.h)
}

func limitError(v Version, s Size, r rect, lim Limits) error {
	return overLimits(v, "size %s of the %dx%d region is beyond maxWidth %d, maxHeight %d or maxArea %d",
		s, r.w, r.h, lim.MaxWidth, lim.MaxHeight, lim.MaxArea)
}

// MaxSize is the size "max" gives a w×h region under lim: the region's own,
// or the largest of its shape within lim.
func (lim Limits) MaxSize(w, h int64) (int64, int64) {
	if w < 1 || h < 1 || lim.Validate() != nil {
		return 0, 0
	}
	return fitLimits(w, h, lim, false)
}

// fitLimits is the largest size of a w×h region within lim that keeps its
// aspect ratio: the size "max" gives, or "^max" when up.
func fitLimits(w, h int64, lim Limits, up bool) (int64, int64) {
	rw, rh := w, h
	if up || w > lim.MaxWidth || h > lim.MaxHeight {
		if lim.MaxWidth*rh <= lim.MaxHeight*rw { // the width binds
			w, h = lim.MaxWidth, max(1, min(lim.MaxHeight, roundDiv(rh*lim.MaxWidth, rw)))
		} else {
			w, h = max(1, min(lim.MaxWidth, roundDiv(rw*lim.MaxHeight, rh))), lim.MaxHeight
		}
	}
	if w*h > lim.MaxArea {
		w, h = shrinkToArea(rw, rh, lim.MaxArea)
	}
	return w, h
}

// shrinkToArea is the largest rw×rh-shaped size of at most maxA pixels
// (both sides rounded down; at least one pixel each).
func shrinkToArea(rw, rh, maxA int64) (int64, int64) {
	s := math.Sqrt(float64(maxA) / (float64(rw) * float64(rh)))
	w, h := max(1, int64(float64(rw)*s)), max(1, int64(float64(rh)*s))
	for w*h > maxA {
		if w >= h {
			w = max(1, min(w-1, maxA/h))
		} else {
			h = max(1, min(h-1, maxA/w))
		}
	}
	return w, h
}

// confine is the !w,h size: the largest size of region r that keeps its
// aspect ratio within bw×bh and lim, and, unless up, within r itself.
func (img Image) confine(r rect, bw, bh int64, lim Limits, up bool) (int64, int64) {
	bw, bh = min(bw, lim.MaxWidth), min(bh, lim.MaxHeight)
	var w, h int64
	if bw*r.h <= bh*r.w { // the width binds
		w, h = bw, img.scaleSide(r, bw, true)
	} else {
		w, h = img.scaleSide(r, bh, false), bh
	}
	if !up && (w > r.w || h > r.h) {
		w, h = r.w, r.h
	}
	if w*h > lim.MaxArea {
		w, h = shrinkToArea(r.w, r.h, lim.MaxArea)
	}
	return w, h
}

// scaleSide is the other side of region r scaled, keeping its aspect ratio,
// so that its width (byWidth) or height becomes n. It is the exact value
// rounded to nearest, except where r lies on the grid of one of the image's
// halving levels and n is r's size at that level: then it is r's other size
// at that level, provided that is the exact value rounded down or up. So
// "w," of a stored tile's region, as version 2 viewers ask for tiles, is
// that tile at its own size, whichever way the level was rounded.
func (img Image) scaleSide(r rect, n int64, byWidth bool) int64 {
	side, other := r.w, r.h
	if !byWidth {
		side, other = r.h, r.w
	}
	num := other * n
	lo := num / side
	hi := lo
	if num%side != 0 {
		hi++
	}
	if m, ok := img.levelSide(r, n, byWidth); ok && (m == lo || m == hi) {
		return m
	}
	return roundDiv(num, side)
}

// levelSide is r's other size at the first halving level on whose grid r
// lies and where its width (byWidth) or height is n.
func (img Image) levelSide(r rect, n int64, byWidth bool) (int64, bool) {
	for l := 1; l < len(img.Levels); l++ {
		if s, ok := img.factor(l); !ok || !img.onGrid(r, s) {
			continue
		}
		m := img.mapRect(l, r)
		if byWidth && m.w == n {
			return m.h, true
		}
		if !byWidth && m.h == n {
			return m.w, true
		}
	}
	return 0, false
}

// roundDiv is a/b rounded to nearest, halves up, for a ≥ 0 and b > 0.
func roundDiv(a, b int64) int64 { return (2*a + b) / (2 * b) }
