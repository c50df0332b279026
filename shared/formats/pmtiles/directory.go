package pmtiles

import (
	"encoding/binary"
	"math"
	"sort"
)

// Entry is one directory entry: RunLength tiles from TileID on share the
// bytes at Offset (from the tile data section's start), or, with RunLength 0,
// a leaf directory at Offset from the leaf section's start.
type Entry struct {
	TileID    uint64
	Offset    uint64
	Length    uint32
	RunLength uint32
}

// IsLeaf reports whether the entry points to a leaf directory.
func (e Entry) IsLeaf() bool { return e.RunLength == 0 }

// EntryBytes is what one decoded Entry costs in memory, for callers that
// bound a cache of directories in bytes.
const EntryBytes = 24

// ParseDirectory decodes a decompressed directory. Besides the encoding it
// checks what makes lookups sound: at least one entry, tile ids strictly
// ascending, every length positive and within 32 bits, run lengths within 32
// bits, offsets that do not overflow, and no trailing bytes.
func ParseDirectory(b []byte) ([]Entry, error) {
	r := varintReader{b: b}
	n, err := r.next("entry count")
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("directory: no entries")
	}
	// Each entry takes at least four bytes (one per varint), which bounds
	// the allocation by the input's size.
	if n > uint64(len(b))/4 {
		return nil, invalid("directory: %d entries cannot fit in %d bytes", n, len(b))
	}
	entries := make([]Entry, n)
	// The format stores the entries column by column, in this order.
	for _, c := range directoryColumns(entries) {
		for i := range entries {
			v, err := r.next(c.name)
			if err != nil {
				return nil, err
			}
			if err := c.set(i, v); err != nil {
				return nil, err
			}
		}
	}
	if r.off != len(b) {
		return nil, invalid("directory: %d bytes after the last entry", len(b)-r.off)
	}
	return entries, nil
}

// directoryColumn is one column of a directory: its name, for errors, and
// how a value of it sets entry i.
type directoryColumn struct {
	name string
	set  func(i int, v uint64) error
}

// directoryColumns are the columns of a directory of entries, in the order
// the format stores them, each checking its values.
func directoryColumns(entries []Entry) []directoryColumn {
	return []directoryColumn{
		{"tile id", func(i int, d uint64) error {
			var id uint64
			if i > 0 {
				id = entries[i-1].TileID
				if d == 0 {
					return invalid("directory: entry %d repeats tile id %d", i, id)
				}
			}
			if id+d < id {
				return invalid("directory: entry %d: tile id overflows", i)
			}
			entries[i].TileID = id + d
			return nil
		}},
		{"run length", func(i int, v uint64) error {
			if v > math.MaxUint32 {
				return invalid("directory: entry %d: run length %d above 32 bits", i, v)
			}
			entries[i].RunLength = uint32(v)
			return nil
		}},
		{"length", func(i int, v uint64) error {
			if v == 0 || v > math.MaxUint32 {
				return invalid("directory: entry %d: length %d, want 1 to 2^32-1", i, v)
			}
			entries[i].Length = uint32(v)
			return nil
		}},
		{"offset", func(i int, v uint64) error {
			switch {
			case v != 0:
				entries[i].Offset = v - 1
			case i == 0:
				return invalid("directory: entry 0 has a contiguous offset and no entry before it")
			default:
				// 0 means "right after the previous entry's bytes".
				p := entries[i-1]
				o, ok := end(p.Offset, uint64(p.Length))
				if !ok {
					return invalid("directory: entry %d: offset overflows", i)
				}
				entries[i].Offset = o
			}
			return nil
		}},
	}
}

type varintReader struct {
	b   []byte
	off int
}

func (r *varintReader) next(what string) (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		if n == 0 {
			return 0, invalid("directory: truncated at byte %d (%s)", r.off, what)
		}
		return 0, invalid("directory: varint at byte %d overflows 64 bits (%s)", r.off, what)
	}
	r.off += n
	return v, nil
}

// FindTile looks id up in entries (sorted by TileID, as ParseDirectory
// returns them). It returns the entry whose run covers id, or the leaf entry
// whose range may hold it (e.IsLeaf(): descend into that leaf), and false
// when the directory says the tile is absent.
func FindTile(entries []Entry, id uint64) (Entry, bool) {
	// The last entry starting at or before id.
	i := sort.Search(len(entries), func(i int) bool { return entries[i].TileID > id }) - 1
	if i < 0 {
		return Entry{}, false
	}
	e := entries[i]
	if e.IsLeaf() || id-e.TileID < uint64(e.RunLength) {
		return e, true
	}
	return Entry{}, false
}

// DecodeDirectory decompresses raw (as stored, with the header's internal
// compression c) and parses it; max caps the decompressed size.
func DecodeDirectory(raw []byte, c Compression, max int64) ([]Entry, error) {
	b, err := Decompress(raw, c, max)
	if err != nil {
		return nil, err
	}
	return ParseDirectory(b)
}
