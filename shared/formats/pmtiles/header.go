package pmtiles

import (
	"encoding/binary"
	"math"
)

// HeaderLen is the size of the fixed header at the start of every archive.
const HeaderLen = 127

// RootWindow is how far into the archive the header and the root directory
// must end (the spec's 16 KiB), so one ranged read of that size fetches both.
const RootWindow = 16384

// Magic opens every PMTiles archive.
const Magic = "PMTiles"

// Header is the archive's fixed header, every field of the v3 layout. Offsets
// and lengths are in bytes from the start of the archive.
type Header struct {
	SpecVersion         uint8
	RootOffset          uint64
	RootLength          uint64
	MetadataOffset      uint64
	MetadataLength      uint64
	LeafDirectoryOffset uint64
	LeafDirectoryLength uint64
	TileDataOffset      uint64
	TileDataLength      uint64
	AddressedTilesCount uint64 // tiles before run-length encoding; 0 if unknown
	TileEntriesCount    uint64 // entries with a run length > 0; 0 if unknown
	TileContentsCount   uint64 // distinct tile blobs; 0 if unknown
	Clustered           bool
	InternalCompression Compression // of directories and metadata
	TileCompression     Compression
	TileType            TileType
	MinZoom, MaxZoom    uint8
	MinLonE7, MinLatE7  int32 // bounds, degrees × 10^7
	MaxLonE7, MaxLatE7  int32
	CenterZoom          uint8
	CenterLonE7         int32
	CenterLatE7         int32
}

// ParseHeader decodes the first HeaderLen bytes of b. It checks what the
// header alone can tell (magic, version, zoom order, that no section's end
// overflows; bounds and center are left as written); Header.Validate checks it against the
// archive's size.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, invalid("header: %d bytes, want %d", len(b), HeaderLen)
	}
	if string(b[:7]) != Magic {
		return Header{}, invalid("header: bad magic %q", b[:7])
	}
	if b[7] != 3 {
		return Header{}, fmtUnsupported("header: spec version %d, want 3", b[7])
	}
	u64 := func(at int) uint64 { return binary.LittleEndian.Uint64(b[at:]) }
	i32 := func(at int) int32 { return int32(binary.LittleEndian.Uint32(b[at:])) }
	h := Header{
		SpecVersion:         b[7],
		RootOffset:          u64(8),
		RootLength:          u64(16),
		MetadataOffset:      u64(24),
		MetadataLength:      u64(32),
		LeafDirectoryOffset: u64(40),
		LeafDirectoryLength: u64(48),
		TileDataOffset:      u64(56),
		TileDataLength:      u64(64),
		AddressedTilesCount: u64(72),
		TileEntriesCount:    u64(80),
		TileContentsCount:   u64(88),
		Clustered:           b[96] == 1,
		InternalCompression: Compression(b[97]),
		TileCompression:     Compression(b[98]),
		TileType:            TileType(b[99]),
		MinZoom:             b[100],
		MaxZoom:             b[101],
		MinLonE7:            i32(102),
		MinLatE7:            i32(106),
		MaxLonE7:            i32(110),
		MaxLatE7:            i32(114),
		CenterZoom:          b[118],
		CenterLonE7:         i32(119),
		CenterLatE7:         i32(123),
	}
	if b[96] > 1 {
		return Header{}, invalid("header: clustered flag %d, want 0 or 1", b[96])
	}
	if h.MinZoom > h.MaxZoom {
		return Header{}, invalid("header: min zoom %d above max zoom %d", h.MinZoom, h.MaxZoom)
	}
	if h.MaxZoom > MaxZoom {
		return Header{}, invalid("header: max zoom %d above %d", h.MaxZoom, MaxZoom)
	}
	for _, s := range h.sections() {
		if _, ok := end(s.off, s.len); !ok {
			return Header{}, invalid("header: %s at %d+%d overflows", s.name, s.off, s.len)
		}
	}
	return h, nil
}

type section struct {
	name     string
	off, len uint64
}

func (h Header) sections() []section {
	return []section{
		{"root directory", h.RootOffset, h.RootLength},
		{"metadata", h.MetadataOffset, h.MetadataLength},
		{"leaf directories", h.LeafDirectoryOffset, h.LeafDirectoryLength},
		{"tile data", h.TileDataOffset, h.TileDataLength},
	}
}

// Validate checks the header against an archive of size bytes: every section
// lies inside it, after the header, and the root directory is non-empty and
// ends inside the first RootWindow bytes, as the spec requires.
func (h Header) Validate(size int64) error {
	if size < HeaderLen {
		return invalid("archive of %d bytes is shorter than its header", size)
	}
	for _, s := range h.sections() {
		if s.len == 0 {
			continue
		}
		e, ok := end(s.off, s.len)
		if !ok || s.off < HeaderLen || e > uint64(size) {
			return invalid("header: %s at %d+%d lies outside the archive (%d bytes)", s.name, s.off, s.len, size)
		}
	}
	if h.RootLength == 0 {
		return invalid("header: empty root directory")
	}
	if e, _ := end(h.RootOffset, h.RootLength); e > RootWindow {
		return invalid("header: root directory ends at byte %d, past the first %d", e, RootWindow)
	}
	return nil
}

// Bounds is [west, south, east, north] in degrees.
func (h Header) Bounds() [4]float64 {
	return [4]float64{e7(h.MinLonE7), e7(h.MinLatE7), e7(h.MaxLonE7), e7(h.MaxLatE7)}
}

// Center is [longitude, latitude, zoom].
func (h Header) Center() [3]float64 {
	return [3]float64{e7(h.CenterLonE7), e7(h.CenterLatE7), float64(h.CenterZoom)}
}

// e7 decodes a coordinate and rounds away the float noise of the division,
// so 85.0511287 stays 85.0511287.
func e7(v int32) float64 { return math.Round(float64(v)) / 1e7 }

// end is off+n, false when it overflows.
func end(off, n uint64) (uint64, bool) {
	e := off + n
	return e, e >= off
}
