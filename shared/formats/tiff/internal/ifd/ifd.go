// Package ifd reads the header and the image file directories (IFDs) of a
// classic TIFF or BigTIFF file, in either byte order, through ranged reads.
//
// A Reader keeps the windows it has read and reads again only what falls
// outside them; the out-of-line values of one IFD are fetched together, in
// as few reads as their layout allows. Every count is bounded (Limits)
// before anything is allocated for it, every offset is checked against the
// size of the file, and an IFD reached twice (a loop in a chain, or a
// SubIFD pointing back) is an error.
package ifd

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Header is the decoded file header.
type Header struct {
	Order binary.ByteOrder
	Big   bool   // BigTIFF (version 43): 8-byte counts and offsets
	First uint64 // offset of the first IFD
}

// Len is the size of the header in bytes: 8 for TIFF, 16 for BigTIFF.
func (h Header) Len() int64 {
	if h.Big {
		return 16
	}
	return 8
}

// ParseHeader decodes the header at the start of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < 8 {
		return Header{}, errors.New("file shorter than a TIFF header")
	}
	var h Header
	switch string(b[:2]) {
	case "II":
		h.Order = binary.LittleEndian
	case "MM":
		h.Order = binary.BigEndian
	default:
		return Header{}, errors.New("no TIFF byte order mark (II or MM)")
	}
	switch h.Order.Uint16(b[2:]) {
	case 42:
		h.First = uint64(h.Order.Uint32(b[4:]))
	case 43:
		if len(b) < 16 {
			return Header{}, errors.New("file shorter than a BigTIFF header")
		}
		if h.Order.Uint16(b[4:]) != 8 || h.Order.Uint16(b[6:]) != 0 {
			return Header{}, errors.New("BigTIFF header with an offset size other than 8")
		}
		h.Big = true
		h.First = h.Order.Uint64(b[8:])
	default:
		return Header{}, fmt.Errorf("version %d is neither TIFF (42) nor BigTIFF (43)", h.Order.Uint16(b[2:]))
	}
	if h.First == 0 {
		return Header{}, errors.New("no first IFD")
	}
	return h, nil
}

// IFD is one image file directory. Entries maps each tag to its value; only
// the values a Want function asked for are loaded.
type IFD struct {
	Offset  uint64
	Next    uint64 // offset of the next IFD in the chain, 0 at its end
	Entries map[uint16]Value
}

// Get is the value of tag and whether the IFD has it.
func (d *IFD) Get(tag uint16) (Value, bool) {
	v, ok := d.Entries[tag]
	return v, ok
}

// Uint is the first value of tag as an unsigned integer, or def when the
// tag is absent or not an integer.
func (d *IFD) Uint(tag uint16, def uint64) uint64 {
	v, ok := d.Entries[tag]
	if !ok {
		return def
	}
	u, ok := v.Uint(0)
	if !ok {
		return def
	}
	return u
}

// Want reports whether the value of tag, n bytes long, is to be loaded.
type Want func(tag uint16, n uint64) bool

// LimitError reports a count that went over one of the Reader's Limits.
type LimitError struct {
	What         string
	Value, Limit uint64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s %d over the limit %d", e.What, e.Value, e.Limit)
}

// Limits bound a Reader. Zero fields are not allowed: the caller sets them.
type Limits struct {
	MaxIFDs    int   // IFDs read in all, chains and SubIFDs together
	MaxEntries int   // entries in one IFD
	MaxBytes   int64 // bytes read in all, the first window included
	// Window is the least read at an IFD that is not yet in memory; the
	// read is as long as the previous IFD with its values when that is
	// longer, since writers put IFDs that follow one another together (a
	// COG's overviews after the full-resolution IFD, each smaller).
	Window int64
}

// ReadFunc reads exactly n bytes at off.
type ReadFunc func(off, n int64) ([]byte, error)

type segment struct {
	off int64
	b   []byte
}

// Reader reads IFDs. It is not safe for concurrent use.
type Reader struct {
	Header
	read  ReadFunc
	size  int64
	lim   Limits
	segs  []segment
	spent int64
	seen  map[uint64]bool
	last  int64 // bytes of the last IFD read, entries and loaded values
}

// NewReader returns a Reader over a file of size bytes whose first bytes,
// already read (and counted against lim.MaxBytes), are first.
func NewReader(first []byte, size int64, read ReadFunc, lim Limits) (*Reader, error) {
	h, err := ParseHeader(first)
	if err != nil {
		return nil, err
	}
	if lim.MaxIFDs <= 0 || lim.MaxEntries <= 0 || lim.MaxBytes <= 0 || lim.Window <= 0 {
		return nil, errors.New("ifd: limits must be positive")
	}
	return &Reader{
		Header: h, read: read, size: size, lim: lim,
		segs:  []segment{{0, first}},
		spent: int64(len(first)),
		seen:  make(map[uint64]bool),
	}, nil
}

// Cached is bytes [off, off+n) when they were read already.
func (r *Reader) Cached(off, n int64) ([]byte, bool) {
	for _, s := range r.segs {
		if off >= s.off && n <= int64(len(s.b)) && off-s.off <= int64(len(s.b))-n {
			return s.b[off-s.off : off-s.off+n], true
		}
	}
	return nil, false
}

// Spent is the number of bytes read so far, the first window included.
func (r *Reader) Spent() int64 { return r.spent }

// fetch reads [off, off+want) clipped to the file, to serve at least n bytes.
func (r *Reader) fetch(off, n, want int64) ([]byte, error) {
	if off < 0 || n < 0 || off > r.size || n > r.size-off {
		return nil, fmt.Errorf("%d bytes at offset %d past the end of the file (%d bytes)", n, off, r.size)
	}
	if b, ok := r.Cached(off, n); ok {
		return b, nil
	}
	// A speculative read stops at the budget; what was asked for does not.
	want = max(min(want, r.lim.MaxBytes-r.spent), n)
	want = min(want, r.size-off)
	if r.spent > r.lim.MaxBytes-want {
		return nil, &LimitError{"bytes of IFD data", uint64(r.spent) + uint64(want), uint64(r.lim.MaxBytes)}
	}
	b, err := r.read(off, want)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != want {
		return nil, fmt.Errorf("read %d bytes at %d, want %d", len(b), off, want)
	}
	r.spent += want
	r.segs = append(r.segs, segment{off, b})
	return b[:n], nil
}

// Chain reads the IFDs linked from off by their next pointers, in order,
// then the values want asks for, of all of them together: a COG keeps its
// IFDs together and their arrays together after them.
func (r *Reader) Chain(off uint64, want Want) ([]*IFD, error) {
	var (
		out     []*IFD
		pending []outOfLine
	)
	for off != 0 {
		d, p, err := r.readEntries(off, want)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		pending = append(pending, p...)
		off = d.Next
	}
	if err := r.load(pending); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadIFD reads the IFD at off and loads the values want asks for.
func (r *Reader) ReadIFD(off uint64, want Want) (*IFD, error) {
	d, pending, err := r.readEntries(off, want)
	if err != nil {
		return nil, err
	}
	if err := r.load(pending); err != nil {
		return nil, err
	}
	return d, nil
}

// readEntries reads the IFD at off, and lists the values stored away from
// its entries that want asks for.
func (r *Reader) readEntries(off uint64, want Want) (*IFD, []outOfLine, error) {
	if r.seen[off] {
		return nil, nil, fmt.Errorf("IFD at %d reached twice (a loop)", off)
	}
	if len(r.seen) >= r.lim.MaxIFDs {
		return nil, nil, &LimitError{"IFDs", uint64(len(r.seen)) + 1, uint64(r.lim.MaxIFDs)}
	}
	r.seen[off] = true
	if off < uint64(r.Len()) || off > uint64(r.size) {
		return nil, nil, fmt.Errorf("IFD offset %d outside the file (%d bytes)", off, r.size)
	}
	countLen, entLen, nextLen := int64(2), int64(12), int64(4)
	if r.Big {
		countLen, entLen, nextLen = 8, 20, 8
	}
	window := max(r.lim.Window, r.last)
	b, err := r.fetch(int64(off), countLen, window)
	if err != nil {
		return nil, nil, fmt.Errorf("IFD at %d: %w", off, err)
	}
	n := uint64(r.Order.Uint16(b))
	if r.Big {
		n = r.Order.Uint64(b)
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("IFD at %d has no entries", off)
	}
	if n > uint64(r.lim.MaxEntries) {
		return nil, nil, &LimitError{"entries in one IFD", n, uint64(r.lim.MaxEntries)}
	}
	total := countLen + int64(n)*entLen + nextLen
	if b, err = r.fetch(int64(off), total, window); err != nil {
		return nil, nil, fmt.Errorf("IFD at %d: %w", off, err)
	}
	d := &IFD{Offset: off, Entries: make(map[uint16]Value, n)}
	pending, err := r.parseEntries(d, b[countLen:countLen+int64(n)*entLen], want)
	if err != nil {
		return nil, nil, fmt.Errorf("IFD at %d: %w", off, err)
	}
	if next := b[countLen+int64(n)*entLen:]; r.Big {
		d.Next = r.Order.Uint64(next)
	} else {
		d.Next = uint64(r.Order.Uint32(next))
	}
	r.last = total
	for _, p := range pending {
		r.last += p.n
	}
	return d, pending, nil
}

// outOfLine is a value stored away from its entry, waiting to be loaded.
type outOfLine struct {
	d      *IFD
	tag    uint16
	off, n int64
}

// parseEntries decodes the entries in b into d, the values that fit in
// their entries directly, and lists those stored elsewhere that want asks for.
func (r *Reader) parseEntries(d *IFD, b []byte, want Want) ([]outOfLine, error) {
	entLen, fieldLen := 12, 4
	if r.Big {
		entLen, fieldLen = 20, 8
	}
	var pending []outOfLine
	for i := 0; i+entLen <= len(b); i += entLen {
		e := b[i : i+entLen]
		tag, typ := r.Order.Uint16(e), r.Order.Uint16(e[2:])
		var count uint64
		var field []byte
		if r.Big {
			count, field = r.Order.Uint64(e[4:]), e[12:20]
		} else {
			count, field = uint64(r.Order.Uint32(e[4:])), e[8:12]
		}
		size := typeSize(typ)
		if size == 0 {
			continue // unknown types are to be skipped (TIFF 6.0, section 2)
		}
		if _, dup := d.Entries[tag]; dup {
			continue
		}
		v := Value{Type: typ, Count: count, Order: r.Order}
		if count > math.MaxInt64/size {
			return nil, fmt.Errorf("tag %d: count %d overflows", tag, count)
		}
		n := count * size
		switch {
		case n <= uint64(fieldLen):
			v.Raw = field[:n:n]
		case want(tag, n):
			off := uint64(r.Order.Uint32(field))
			if r.Big {
				off = r.Order.Uint64(field)
			}
			if off > uint64(r.size) || n > uint64(r.size)-off {
				return nil, fmt.Errorf("tag %d: %d bytes at %d past the end of the file (%d bytes)", tag, n, off, r.size)
			}
			pending = append(pending, outOfLine{d, tag, int64(off), int64(n)})
		}
		d.Entries[tag] = v
	}
	return pending, nil
}

// mergeGap is the largest gap between two out-of-line values that are
// read together rather than apart.
const mergeGap = 4 << 10

// load reads the pending values, merging those close together, and puts
// them in their IFDs.
func (r *Reader) load(pending []outOfLine) error {
	var missing []outOfLine
	for _, p := range pending {
		if _, ok := r.Cached(p.off, p.n); !ok {
			missing = append(missing, p)
		}
	}
	slices.SortFunc(missing, func(a, b outOfLine) int { return cmp.Compare(a.off, b.off) })
	for i := 0; i < len(missing); {
		start, end := missing[i].off, missing[i].off+missing[i].n
		j := i + 1
		for ; j < len(missing) && missing[j].off <= end+mergeGap; j++ {
			end = max(end, missing[j].off+missing[j].n)
		}
		if _, err := r.fetch(start, end-start, 0); err != nil {
			return fmt.Errorf("values of the IFD at %d: %w", missing[i].d.Offset, err)
		}
		i = j
	}
	for _, p := range pending {
		b, ok := r.Cached(p.off, p.n)
		if !ok {
			return fmt.Errorf("IFD at %d: tag %d: value not loaded", p.d.Offset, p.tag)
		}
		v := p.d.Entries[p.tag]
		v.Raw = b
		p.d.Entries[p.tag] = v
	}
	return nil
}
