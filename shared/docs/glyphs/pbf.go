// Package glyphs serves MapLibre glyph ranges: it decodes and encodes the
// glyphs protobuf of Mapbox's font tools (fontnik's glyphs.proto), composes
// the range of a font stack of several fonts from the ranges of its single
// fonts, and holds the key rules of a glyph request,
// DIR/{fontstack}/{start}-{end}.pbf under a "fonts" or "glyphs" directory.
//
// The message is small and is read by hand with the standard library:
//
//	glyphs { repeated fontstack stacks = 1; }
//	fontstack { string name = 1; string range = 2; repeated glyph glyphs = 3; }
//	glyph { uint32 id = 1; bytes bitmap = 2; uint32 width = 3; uint32 height = 4;
//	        sint32 left = 5; sint32 top = 6; uint32 advance = 7; }
//
// Decode refuses input past MaxPBFBytes and anything malformed; unknown
// fields are skipped and not kept. Encode writes fields in number order and
// every field but a missing bitmap, as fontnik does, so a range fontnik wrote
// round-trips byte for byte.
package glyphs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrPBF is input that is not a glyphs protobuf this package can read.
var ErrPBF = errors.New("glyphs: not a glyph PBF")

// MaxPBFBytes caps a glyph range Decode reads. A range is at most 256
// glyphs of fontnik's 24 px signed distance fields, (width+6)×(height+6)
// bytes each: about 1 KiB a glyph for the full-height glyphs of CJK fonts,
// so a quarter of the cap. Decoding holds the bitmaps again, copied, and
// 56 bytes a glyph.
const MaxPBFBytes = 1 << 20

// Glyph is one glyph: its signed-distance-field bitmap and metrics.
type Glyph struct {
	ID            uint32
	Bitmap        []byte // nil when the glyph has none (a space)
	Width, Height uint32
	Left, Top     int32
	Advance       uint32
}

// Stack is the glyphs of one font stack in one range.
type Stack struct {
	Name   string // "Noto Sans Regular", or the joined names of a stack
	Range  string // "0-255"
	Glyphs []Glyph
}

// Wire types.
const (
	wireVarint = 0
	wire64     = 1
	wireBytes  = 2
	wire32     = 5
)

// Decode reads the stacks of a glyph PBF.
func Decode(b []byte) ([]Stack, error) {
	if len(b) > MaxPBFBytes {
		return nil, fmt.Errorf("glyphs: %d bytes, more than %d: %w", len(b), MaxPBFBytes, ErrPBF)
	}
	var stacks []Stack
	err := fields(b, func(num uint64, wire int, v uint64, data []byte) error {
		if num != 1 {
			return nil
		}
		if wire != wireBytes {
			return fmt.Errorf("glyphs: stacks of wire type %d: %w", wire, ErrPBF)
		}
		s, err := decodeStack(data)
		if err != nil {
			return err
		}
		stacks = append(stacks, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return stacks, nil
}

func decodeStack(b []byte) (Stack, error) {
	var s Stack
	err := fields(b, func(num uint64, wire int, v uint64, data []byte) error {
		if num < 1 || num > 3 {
			return nil
		}
		if wire != wireBytes {
			return fmt.Errorf("glyphs: fontstack field %d of wire type %d: %w", num, wire, ErrPBF)
		}
		switch num {
		case 1:
			s.Name = string(data)
		case 2:
			s.Range = string(data)
		case 3:
			g, err := decodeGlyph(data)
			if err != nil {
				return err
			}
			s.Glyphs = append(s.Glyphs, g)
		}
		return nil
	})
	return s, err
}

func decodeGlyph(b []byte) (Glyph, error) {
	var g Glyph
	hasID := false
	err := fields(b, func(num uint64, wire int, v uint64, data []byte) error {
		if num < 1 || num > 7 {
			return nil
		}
		want := wireVarint
		if num == 2 {
			want = wireBytes
		}
		if wire != want {
			return fmt.Errorf("glyphs: glyph field %d of wire type %d: %w", num, wire, ErrPBF)
		}
		if num != 2 && v > math.MaxUint32 {
			return fmt.Errorf("glyphs: glyph field %d: %d is past 32 bits: %w", num, v, ErrPBF)
		}
		switch num {
		case 1:
			g.ID, hasID = uint32(v), true
		case 2:
			g.Bitmap = append(make([]byte, 0, len(data)), data...)
		case 3:
			g.Width = uint32(v)
		case 4:
			g.Height = uint32(v)
		case 5:
			g.Left = unzigzag(uint32(v))
		case 6:
			g.Top = unzigzag(uint32(v))
		case 7:
			g.Advance = uint32(v)
		}
		return nil
	})
	if err == nil && !hasID {
		err = fmt.Errorf("glyphs: glyph without id: %w", ErrPBF)
	}
	return g, err
}

// fields calls fn for each field of the message b: its number, wire type,
// and value (varints) or bytes (length-delimited). Fixed-width fields are
// skipped; groups are refused.
func fields(b []byte, fn func(num uint64, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("glyphs: bad field key: %w", ErrPBF)
		}
		b = b[n:]
		num, wire := key>>3, int(key&7)
		if num == 0 {
			return fmt.Errorf("glyphs: field number 0: %w", ErrPBF)
		}
		var v uint64
		var data []byte
		switch wire {
		case wireVarint:
			if v, n = binary.Uvarint(b); n <= 0 {
				return fmt.Errorf("glyphs: bad varint in field %d: %w", num, ErrPBF)
			}
			b = b[n:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return fmt.Errorf("glyphs: field %d overruns its message: %w", num, ErrPBF)
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		case wire64, wire32:
			w := 8
			if wire == wire32 {
				w = 4
			}
			if len(b) < w {
				return fmt.Errorf("glyphs: field %d overruns its message: %w", num, ErrPBF)
			}
			b = b[w:]
		default:
			return fmt.Errorf("glyphs: field %d of wire type %d: %w", num, wire, ErrPBF)
		}
		if err := fn(num, wire, v, data); err != nil {
			return err
		}
	}
	return nil
}

// Encode writes stacks as a glyph PBF.
func Encode(stacks []Stack) []byte {
	var out, s, g []byte
	for _, st := range stacks {
		s = appendBytes(s[:0], 1, []byte(st.Name))
		s = appendBytes(s, 2, []byte(st.Range))
		for _, gl := range st.Glyphs {
			g = appendVarint(g[:0], 1, uint64(gl.ID))
			if gl.Bitmap != nil {
				g = appendBytes(g, 2, gl.Bitmap)
			}
			g = appendVarint(g, 3, uint64(gl.Width))
			g = appendVarint(g, 4, uint64(gl.Height))
			g = appendVarint(g, 5, uint64(zigzag(gl.Left)))
			g = appendVarint(g, 6, uint64(zigzag(gl.Top)))
			g = appendVarint(g, 7, uint64(gl.Advance))
			s = appendBytes(s, 3, g)
		}
		out = appendBytes(out, 1, s)
	}
	return out
}

func appendVarint(b []byte, num int, v uint64) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|wireVarint)
	return binary.AppendUvarint(b, v)
}

func appendBytes(b []byte, num int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|wireBytes)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

func zigzag(v int32) uint32   { return uint32(v<<1) ^ uint32(v>>31) }
func unzigzag(v uint32) int32 { return int32(v>>1) ^ -int32(v&1) }
