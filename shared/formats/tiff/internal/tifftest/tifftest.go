// Package tifftest writes small TIFF and BigTIFF files entry by entry, for
// tests that need files no encoder writes: hostile counts and offsets,
// loops among IFDs, odd tags.
package tifftest

import (
	"encoding/binary"
	"math"
)

// Field types.
const (
	Byte      = 1
	ASCII     = 2
	Short     = 3
	Long      = 4
	Undefined = 7
	Double    = 12
	Long8     = 16
)

// Entry is one IFD entry. Its values are Ints (integer types), Floats
// (Double), Raw (ASCII, Undefined, Byte, or any type given as bytes in the
// file's order), or the offsets of blobs (BlobOffsets, -1 for 0) or of
// other IFDs (IFDOffsets). Count, when not 0, overrides the count written.
type Entry struct {
	Tag, Type   uint16
	Ints        []uint64
	Floats      []float64
	Raw         []byte
	BlobOffsets []int
	IFDOffsets  []int
	Count       uint64
	// At, when not 0, is written as the value's offset instead of where
	// the value is put.
	At uint64
}

// File describes a file: its IFDs and data blobs (tiles), laid out as
// header, blobs, then each IFD followed by its out-of-line values.
type File struct {
	Order Order // binary.LittleEndian when nil
	Big   bool
	Blobs [][]byte
	IFDs  [][]Entry
	// Next, when set, gives the index of the IFD each IFD links to (-1
	// for none); by default IFD i links to i+1 and the last to none.
	Next []int
	// First, when set, is written as the first IFD's offset instead.
	First uint64
}

// Order is binary.LittleEndian or binary.BigEndian.
type Order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// Ints is an integer entry.
func Ints(tag, typ uint16, v ...uint64) Entry { return Entry{Tag: tag, Type: typ, Ints: v} }

// Text is an ASCII entry, NUL-terminated.
func Text(tag uint16, s string) Entry { return Entry{Tag: tag, Type: ASCII, Raw: append([]byte(s), 0)} }

// Bytes lays the file out.
func (f File) Bytes() []byte {
	var o Order = binary.LittleEndian
	if f.Order != nil {
		o = f.Order
	}
	w := &writer{o: o, big: f.Big}
	w.header()
	blobAt := make([]uint64, len(f.Blobs))
	for i, b := range f.Blobs {
		blobAt[i] = uint64(len(w.b))
		w.b = append(w.b, b...)
	}
	// IFD offsets depend on the sizes of the IFDs before them only.
	ifdAt := make([]uint64, len(f.IFDs))
	pos := uint64(len(w.b))
	for i, d := range f.IFDs {
		ifdAt[i] = pos
		pos += w.ifdSize(d)
	}
	for i, d := range f.IFDs {
		next := i + 1
		if f.Next != nil {
			next = f.Next[i]
		}
		nextAt := uint64(0)
		if next >= 0 && next < len(f.IFDs) {
			nextAt = ifdAt[next]
		}
		w.ifd(d, nextAt, blobAt, ifdAt)
	}
	first := uint64(0)
	if len(ifdAt) > 0 {
		first = ifdAt[0]
	}
	if f.First != 0 {
		first = f.First
	}
	w.putOff(w.b[4:], first)
	if f.Big {
		w.o.PutUint64(w.b[8:], first)
	}
	return w.b
}

type writer struct {
	o   Order
	big bool
	b   []byte
}

func (w *writer) header() {
	if w.o.String() == binary.LittleEndian.String() {
		w.b = append(w.b, 'I', 'I')
	} else {
		w.b = append(w.b, 'M', 'M')
	}
	if w.big {
		w.b = w.o.AppendUint16(w.b, 43)
		w.b = w.o.AppendUint16(w.b, 8)
		w.b = w.o.AppendUint16(w.b, 0)
		w.b = w.o.AppendUint64(w.b, 0)
		return
	}
	w.b = w.o.AppendUint16(w.b, 42)
	w.b = w.o.AppendUint32(w.b, 0)
}

func (w *writer) putOff(b []byte, v uint64) {
	if !w.big {
		w.o.PutUint32(b, uint32(v))
	}
}

func (w *writer) sizes() (count, entry, field, next uint64) {
	if w.big {
		return 8, 20, 8, 8
	}
	return 2, 12, 4, 4
}

// value encodes the values of e.
func (w *writer) value(e Entry, blobAt, ifdAt []uint64) []byte {
	var b []byte
	ints := e.Ints
	for _, i := range e.BlobOffsets {
		if i < 0 {
			ints = append(ints, 0)
		} else {
			ints = append(ints, blobAt[i])
		}
	}
	for _, i := range e.IFDOffsets {
		ints = append(ints, ifdAt[i])
	}
	for _, v := range ints {
		switch e.Type {
		case Byte, Undefined:
			b = append(b, byte(v))
		case Short:
			b = w.o.AppendUint16(b, uint16(v))
		case Long:
			b = w.o.AppendUint32(b, uint32(v))
		default:
			b = w.o.AppendUint64(b, v)
		}
	}
	for _, v := range e.Floats {
		b = w.o.AppendUint64(b, math.Float64bits(v))
	}
	return append(b, e.Raw...)
}

func (w *writer) ifdSize(d []Entry) uint64 {
	count, entry, field, next := w.sizes()
	n := count + uint64(len(d))*entry + next
	for _, e := range d {
		size := uint64(len(e.Ints)+len(e.BlobOffsets)+len(e.IFDOffsets))*typeSize(e.Type) +
			uint64(len(e.Floats))*8 + uint64(len(e.Raw))
		if size > field {
			n += size
		}
	}
	return n
}

func (w *writer) ifd(d []Entry, nextAt uint64, blobAt, ifdAt []uint64) {
	countLen, entryLen, field, _ := w.sizes()
	start := uint64(len(w.b))
	if w.big {
		w.b = w.o.AppendUint64(w.b, uint64(len(d)))
	} else {
		w.b = w.o.AppendUint16(w.b, uint16(len(d)))
	}
	extra := start + countLen + uint64(len(d))*entryLen + field
	var tail []byte
	for _, e := range d {
		v := w.value(e, blobAt, ifdAt)
		count := e.Count
		if count == 0 {
			count = uint64(len(v)) / typeSize(e.Type)
		}
		w.b = w.o.AppendUint16(w.b, e.Tag)
		w.b = w.o.AppendUint16(w.b, e.Type)
		if w.big {
			w.b = w.o.AppendUint64(w.b, count)
		} else {
			w.b = w.o.AppendUint32(w.b, uint32(count))
		}
		fieldBytes := make([]byte, field)
		if uint64(len(v)) <= field && e.At == 0 {
			copy(fieldBytes, v)
		} else {
			at := extra + uint64(len(tail))
			if e.At != 0 {
				at = e.At
			}
			if w.big {
				w.o.PutUint64(fieldBytes, at)
			} else {
				w.o.PutUint32(fieldBytes, uint32(at))
			}
			if uint64(len(v)) > field {
				tail = append(tail, v...)
			}
		}
		w.b = append(w.b, fieldBytes...)
	}
	if w.big {
		w.b = w.o.AppendUint64(w.b, nextAt)
	} else {
		w.b = w.o.AppendUint32(w.b, uint32(nextAt))
	}
	w.b = append(w.b, tail...)
}

func typeSize(t uint16) uint64 {
	switch t {
	case Short:
		return 2
	case Long:
		return 4
	case Long8, Double:
		return 8
	}
	return 1
}
