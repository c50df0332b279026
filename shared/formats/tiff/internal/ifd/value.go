package ifd

import (
	"encoding/binary"
	"math"
	"strings"
)

// Field types of TIFF 6.0 and BigTIFF.
const (
	TypeByte      = 1
	TypeASCII     = 2
	TypeShort     = 3
	TypeLong      = 4
	TypeRational  = 5
	TypeSByte     = 6
	TypeUndefined = 7
	TypeSShort    = 8
	TypeSLong     = 9
	TypeSRational = 10
	TypeFloat     = 11
	TypeDouble    = 12
	TypeIFD       = 13
	TypeLong8     = 16
	TypeSLong8    = 17
	TypeIFD8      = 18
)

// typeSize is the size in bytes of one value of type t, 0 for an unknown type.
func typeSize(t uint16) uint64 {
	switch t {
	case TypeByte, TypeASCII, TypeSByte, TypeUndefined:
		return 1
	case TypeShort, TypeSShort:
		return 2
	case TypeLong, TypeSLong, TypeFloat, TypeIFD:
		return 4
	case TypeRational, TypeSRational, TypeDouble, TypeLong8, TypeSLong8, TypeIFD8:
		return 8
	}
	return 0
}

// Value is the value of one IFD entry. Raw holds Count values in the file's
// byte order; it is nil when the value was not loaded (a tag nobody asked
// for, or one larger than the caller wanted).
type Value struct {
	Type  uint16
	Count uint64
	Raw   []byte
	Order binary.ByteOrder
}

// Loaded reports whether the value's bytes were read.
func (v Value) Loaded() bool { return v.Raw != nil || v.Count == 0 }

// Len is the number of values held, 0 when they were not loaded.
func (v Value) Len() int {
	size := typeSize(v.Type)
	if size == 0 {
		return 0
	}
	return len(v.Raw) / int(size)
}

// IsInteger reports whether the value holds unsigned integers (or offsets).
func (v Value) IsInteger() bool {
	switch v.Type {
	case TypeByte, TypeShort, TypeLong, TypeLong8, TypeIFD, TypeIFD8, TypeUndefined:
		return true
	}
	return false
}

// Uint is the i-th value as an unsigned integer; signed, rational and
// floating-point values, and i out of range, give ok false.
func (v Value) Uint(i int) (uint64, bool) {
	if i < 0 || i >= v.Len() {
		return 0, false
	}
	switch v.Type {
	case TypeByte, TypeUndefined:
		return uint64(v.Raw[i]), true
	case TypeShort:
		return uint64(v.Order.Uint16(v.Raw[2*i:])), true
	case TypeLong, TypeIFD:
		return uint64(v.Order.Uint32(v.Raw[4*i:])), true
	case TypeLong8, TypeIFD8:
		return v.Order.Uint64(v.Raw[8*i:]), true
	}
	return 0, false
}

// Float is the i-th value as a float64, for every numeric type.
func (v Value) Float(i int) (float64, bool) {
	if i < 0 || i >= v.Len() {
		return 0, false
	}
	switch v.Type {
	case TypeSByte:
		return float64(int8(v.Raw[i])), true
	case TypeSShort:
		return float64(int16(v.Order.Uint16(v.Raw[2*i:]))), true
	case TypeSLong:
		return float64(int32(v.Order.Uint32(v.Raw[4*i:]))), true
	case TypeSLong8:
		return float64(int64(v.Order.Uint64(v.Raw[8*i:]))), true
	case TypeFloat:
		return float64(math.Float32frombits(v.Order.Uint32(v.Raw[4*i:]))), true
	case TypeDouble:
		return math.Float64frombits(v.Order.Uint64(v.Raw[8*i:])), true
	case TypeRational:
		n, d := v.Order.Uint32(v.Raw[8*i:]), v.Order.Uint32(v.Raw[8*i+4:])
		return float64(n) / float64(d), true
	case TypeSRational:
		n, d := int32(v.Order.Uint32(v.Raw[8*i:])), int32(v.Order.Uint32(v.Raw[8*i+4:]))
		return float64(n) / float64(d), true
	}
	u, ok := v.Uint(i)
	return float64(u), ok
}

// Floats is every value as a float64, or nil when one is not numeric.
func (v Value) Floats() []float64 {
	out := make([]float64, v.Len())
	for i := range out {
		f, ok := v.Float(i)
		if !ok {
			return nil
		}
		out[i] = f
	}
	return out
}

// String is an ASCII value up to its first NUL, with trailing spaces
// removed; TIFF writers end ASCII values with a NUL, some with several.
func (v Value) String() string {
	if v.Type != TypeASCII && v.Type != TypeUndefined && v.Type != TypeByte {
		return ""
	}
	s := string(v.Raw)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ")
}
