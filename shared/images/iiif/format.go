package iiif

import (
	"strconv"
	"strings"
)

// String is the parameter as a client would write it, in its own form (not
// the canonical one): for messages and tests.
func (r Region) String() string {
	switch r.Kind {
	case RegionFull:
		return "full"
	case RegionSquare:
		return "square"
	case RegionPercent:
		return "pct:" + floats(r.Pct[:]...)
	}
	var b strings.Builder
	writeInts(&b, r.X, r.Y, r.W, r.H)
	return b.String()
}

// String is the parameter as a client would write it, in its own form.
func (s Size) String() string {
	var b strings.Builder
	if s.Upscale {
		b.WriteByte('^')
	}
	switch s.Kind {
	case SizeMax:
		b.WriteString("max")
	case SizeFull:
		b.WriteString("full")
	case SizePercent:
		b.WriteString("pct:" + floats(s.Pct))
	case SizeWidth:
		writeInts(&b, s.W)
		b.WriteByte(',')
	case SizeHeight:
		b.WriteByte(',')
		writeInts(&b, s.H)
	case SizeConfined:
		b.WriteByte('!')
		writeInts(&b, s.W, s.H)
	case SizeExact:
		writeInts(&b, s.W, s.H)
	}
	return b.String()
}

// String is the parameter as a client would write it.
func (r Rotation) String() string {
	if r.Mirror {
		return "!" + strconv.Itoa(r.Degrees)
	}
	return strconv.Itoa(r.Degrees)
}

// String is the request's four parameters, as written by a client.
func (req Request) String() string {
	return req.Region.String() + "/" + req.Size.String() + "/" + req.Rotation.String() + "/" +
		req.Quality.String() + "." + req.Format.String()
}

func floats(fs ...float64) string {
	var b []byte
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	return string(b)
}
