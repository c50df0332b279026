package iiif

import (
	"fmt"
	"math"
	"strings"
)

// Version is the Image API version of a request: V2 (2.1) or V3 (3.0).
type Version int

// The versions served.
const (
	V2 Version = 2
	V3 Version = 3
)

// String is the version as paths name it: "2" or "3".
func (v Version) String() string { return string(rune('0' + v)) }

// RegionKind is the form of a region parameter.
type RegionKind uint8

// Region forms.
const (
	RegionFull    RegionKind = iota // full
	RegionSquare                    // square
	RegionPixels                    // x,y,w,h
	RegionPercent                   // pct:x,y,w,h
)

// Region is a parsed region parameter.
type Region struct {
	Kind       RegionKind
	X, Y, W, H int64      // RegionPixels
	Pct        [4]float64 // RegionPercent: x, y, w, h
}

// SizeKind is the form of a size parameter.
type SizeKind uint8

// Size forms.
const (
	SizeMax      SizeKind = iota // max (and ^max in 3.0)
	SizeFull                     // full (2.1 only)
	SizeWidth                    // w,
	SizeHeight                   // ,h
	SizePercent                  // pct:n
	SizeExact                    // w,h
	SizeConfined                 // !w,h
)

// Size is a parsed size parameter.
type Size struct {
	Kind    SizeKind
	Upscale bool // the 3.0 "^" prefix
	W, H    int64
	Pct     float64
}

// Rotation is a parsed rotation parameter: Degrees is 0, 90, 180 or 270
// clockwise, applied after mirroring.
type Rotation struct {
	Degrees int
	Mirror  bool
}

// Quality is a quality parameter.
type Quality uint8

// Qualities.
const (
	QualityDefault Quality = iota
	QualityColor
	QualityGray
	QualityBitonal
)

var qualityNames = [...]string{"default", "color", "gray", "bitonal"}

func (q Quality) String() string {
	if int(q) < len(qualityNames) {
		return qualityNames[q]
	}
	return fmt.Sprintf("Quality(%d)", uint8(q))
}

// Format is an output format.
type Format uint8

// Formats served (level 2 requires both).
const (
	FormatJPEG Format = iota + 1
	FormatPNG
)

func (f Format) String() string {
	switch f {
	case FormatJPEG:
		return "jpg"
	case FormatPNG:
		return "png"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// MediaType is the Content-Type of an answer in format f.
func (f Format) MediaType() string {
	if f == FormatPNG {
		return "image/png"
	}
	return "image/jpeg"
}

// Request is a parsed image request. It says what was asked, not yet what
// the answer is: Resolve turns it into that against one image.
type Request struct {
	Version  Version
	Region   Region
	Size     Size
	Rotation Rotation
	Quality  Quality
	Format   Format
}

// maxSegment bounds each path parameter; the longest legitimate one,
// pct:x,y,w,h with long decimals, is well under it.
const maxSegment = 64

// Parse reads the four path parameters of an image request of version v:
// region, size, rotation and "quality.format". The identifier is the
// caller's. A refused request is an *Error with its status.
func Parse(v Version, region, size, rotation, qualityFormat string) (Request, error) {
	if v != V2 && v != V3 {
		return Request{}, fmt.Errorf("iiif: unknown version %d", v)
	}
	for _, s := range [...]string{region, size, rotation, qualityFormat} {
		if len(s) > maxSegment {
			return Request{}, badRequest("a parameter is longer than %d bytes", maxSegment)
		}
	}
	req := Request{Version: v}
	var err error
	if req.Region, err = parseRegion(region); err != nil {
		return Request{}, err
	}
	if req.Size, err = parseSize(v, size); err != nil {
		return Request{}, err
	}
	if req.Rotation, err = parseRotation(rotation); err != nil {
		return Request{}, err
	}
	if req.Quality, req.Format, err = parseQualityFormat(qualityFormat); err != nil {
		return Request{}, err
	}
	return req, nil
}

func parseRegion(s string) (Region, error) {
	switch s {
	case "full":
		return Region{Kind: RegionFull}, nil
	case "square":
		return Region{Kind: RegionSquare}, nil
	}
	if rest, ok := strings.CutPrefix(s, "pct:"); ok {
		parts, ok := split4(rest)
		if !ok {
			return Region{}, badRequest("region %q is not pct:x,y,w,h", s)
		}
		r := Region{Kind: RegionPercent}
		for i, p := range parts {
			if r.Pct[i], ok = parseFloat(p); !ok {
				return Region{}, badRequest("region %q: %q is not a non-negative decimal", s, p)
			}
		}
		if r.Pct[2] == 0 || r.Pct[3] == 0 {
			return Region{}, badRequest("region %q has zero width or height", s)
		}
		return r, nil
	}
	parts, ok := split4(s)
	if !ok {
		return Region{}, badRequest("region %q is not full, square, x,y,w,h or pct:x,y,w,h", s)
	}
	var n [4]int64
	for i, p := range parts {
		v, ok, tooBig := parseInt(p)
		if tooBig {
			return Region{}, badRequest("region %q: %q is too large", s, p)
		}
		if !ok {
			return Region{}, badRequest("region %q: %q is not a non-negative integer", s, p)
		}
		n[i] = v
	}
	if n[2] == 0 || n[3] == 0 {
		return Region{}, badRequest("region %q has zero width or height", s)
	}
	return Region{Kind: RegionPixels, X: n[0], Y: n[1], W: n[2], H: n[3]}, nil
}

func parseSize(v Version, s string) (Size, error) {
	in := s
	var size Size
	if rest, ok := strings.CutPrefix(s, "^"); ok {
		if v == V2 {
			return Size{}, badRequest("size %q: the ^ prefix is Image API 3.0 syntax", in)
		}
		size.Upscale, s = true, rest
	}
	switch {
	case s == "max":
		size.Kind = SizeMax
		return size, nil
	case s == "full" && v == V2 && !size.Upscale:
		size.Kind = SizeFull
		return size, nil
	case s == "full":
		return Size{}, badRequest("size %q is not Image API 3.0 syntax: use max", in)
	case strings.HasPrefix(s, "pct:"):
		p, ok := parseFloat(s[len("pct:"):])
		if !ok {
			return Size{}, badRequest("size %q: the percentage is not a non-negative decimal", in)
		}
		if p == 0 {
			return Size{}, badRequest("size %q is zero", in)
		}
		size.Kind, size.Pct = SizePercent, p
		return size, nil
	case strings.HasPrefix(s, "!"):
		size.Kind = SizeConfined
		s = s[1:]
	}
	return parseSizeWH(in, s, size)
}

// parseSizeWH reads the "w,", ",h", "w,h" and (after "!") "w,h" forms.
func parseSizeWH(in, s string, size Size) (Size, error) {
	ws, hs, found := strings.Cut(s, ",")
	if !found || strings.Contains(hs, ",") {
		return Size{}, badRequest("size %q is not a size form of this version", in)
	}
	var err error
	if size.W, err = sizeNumber(in, ws); err != nil {
		return Size{}, err
	}
	if size.H, err = sizeNumber(in, hs); err != nil {
		return Size{}, err
	}
	switch {
	case ws == "" && hs == "":
		return Size{}, badRequest("size %q has neither width nor height", in)
	case size.Kind == SizeConfined && (ws == "" || hs == ""):
		return Size{}, badRequest("size %q: !w,h needs both width and height", in)
	case size.Kind == SizeConfined:
	case ws == "":
		size.Kind = SizeHeight
	case hs == "":
		size.Kind = SizeWidth
	default:
		size.Kind = SizeExact
	}
	if (ws != "" && size.W == 0) || (hs != "" && size.H == 0) {
		return Size{}, badRequest("size %q has a zero width or height", in)
	}
	return size, nil
}

// sizeNumber reads one side of a size; "" is an absent side.
func sizeNumber(in, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, ok, tooBig := parseInt(s)
	if tooBig {
		return 0, badRequest("size %q: %q is too large", in, s)
	}
	if !ok {
		return 0, badRequest("size %q: %q is not a non-negative integer", in, s)
	}
	return n, nil
}

func parseRotation(s string) (Rotation, error) {
	var r Rotation
	t := s
	if rest, ok := strings.CutPrefix(t, "!"); ok {
		r.Mirror, t = true, rest
	}
	deg, ok := parseFloat(t)
	switch {
	case !ok:
		return Rotation{}, badRequest("rotation %q is not a number of degrees from 0 to 360, optionally after !", s)
	case deg > 360:
		return Rotation{}, badRequest("rotation %q is beyond 360 degrees", s)
	case math.Mod(deg, 90) != 0:
		return Rotation{}, notImplemented("rotation %q: only multiples of 90 degrees are implemented (no rotationArbitrary)", s)
	}
	r.Degrees = int(deg) % 360
	return r, nil
}

// knownFormats are the formats the specifications name that are not served:
// a request for one is valid but unsupported, which both versions answer
// with 400 (section 4.5 of each).
var knownFormats = [...]string{"tif", "gif", "jp2", "pdf", "webp"}

func parseQualityFormat(s string) (Quality, Format, error) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return 0, 0, badRequest("%q has no format: want quality.format, such as default.jpg", s)
	}
	qs, fs := s[:i], s[i+1:]
	q := Quality(255)
	for i, name := range qualityNames {
		if qs == name {
			q = Quality(i)
		}
	}
	if q == 255 {
		return 0, 0, badRequest("quality %q is not one of default, color, gray, bitonal", qs)
	}
	switch fs {
	case "jpg":
		return q, FormatJPEG, nil
	case "png":
		return q, FormatPNG, nil
	}
	for _, k := range knownFormats {
		if fs == k {
			return 0, 0, badRequest("format %q is not supported: use jpg or png", fs)
		}
	}
	return 0, 0, badRequest("format %q is not an image format: use jpg or png", fs)
}
