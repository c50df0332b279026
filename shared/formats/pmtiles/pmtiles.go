// Package pmtiles decodes PMTiles v3 archives: the 127-byte header, varint
// directories with run lengths and leaf directories, Hilbert tile ids, and the
// JSON metadata, with every compression of the format (none, gzip, brotli,
// zstd) for directories, metadata and tiles. Besides the standard library it
// uses only the brotli and zstd decoders, so the tile function's bootstrap
// stays small.
//
// What it promises:
//
//   - Nothing it decodes panics or reads without bound, whatever the bytes:
//     every directory, leaf, metadata and tile range is checked against the
//     archive's size and its section before it is read, decompressed sizes
//     are capped (a decompression bomb is ErrTooLarge at the cap, having
//     allocated about the cap), and leaf directories are followed to a fixed
//     depth (so a cycle ends as an error).
//   - An archive is validated when opened: the header, every section inside
//     the archive's size, the root directory decoded and each of its entries
//     inside the section it points into. Reader.Verify checks every leaf
//     directory as well.
//   - A malformed archive is an error matching ErrInvalid, an archive using a
//     compression the format does not name (or another spec version) one
//     matching ErrUnsupported; a server answers both with 502. Errors of the
//     caller's RangeReader are wrapped, not replaced, so their own identity
//     (a timeout, a changed object) survives.
//   - Leaf directories are cacheable by the caller: Reader consults an
//     optional LeafCache keyed by the leaf's byte range.
package pmtiles

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrInvalid is an archive whose bytes break the format: bad magic or
	// version, a section or pointer outside the archive, a corrupt directory,
	// leaves nested deeper than the depth limit, a length past a cap.
	ErrInvalid = errors.New("pmtiles: invalid archive")
	// ErrUnsupported is an archive this package cannot decode: a spec
	// version other than 3, or a compression the format does not name.
	ErrUnsupported = errors.New("pmtiles: unsupported")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("pmtiles: "+format+": %w", append(args, ErrInvalid)...)
}

// Compression is the compression of tiles or of the archive's directories
// and metadata.
type Compression uint8

// Compressions of the v3 format.
const (
	CompressionUnknown Compression = 0
	CompressionNone    Compression = 1
	CompressionGzip    Compression = 2
	CompressionBrotli  Compression = 3
	CompressionZstd    Compression = 4
)

var compressionNames = [...]string{
	CompressionUnknown: "unknown", CompressionNone: "none", CompressionGzip: "gzip",
	CompressionBrotli: "br", CompressionZstd: "zstd",
}

func (c Compression) String() string { return enumName(compressionNames[:], uint8(c), "compression") }

// enumName is names[v], or kind(v) for a value the format does not name.
func enumName(names []string, v uint8, kind string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

// ContentEncoding is the HTTP Content-Encoding of bytes stored with c: ""
// for none and unknown.
func (c Compression) ContentEncoding() string {
	switch c {
	case CompressionGzip, CompressionBrotli, CompressionZstd:
		return c.String()
	}
	return ""
}

// TileType is the format of the archive's tiles.
type TileType uint8

// Tile types of the v3 format.
const (
	TileTypeUnknown TileType = 0
	TileTypeMVT     TileType = 1
	TileTypePNG     TileType = 2
	TileTypeJPEG    TileType = 3
	TileTypeWebP    TileType = 4
	TileTypeAVIF    TileType = 5
	TileTypeMLT     TileType = 6 // MapLibre Tile
)

var tileTypeNames = [...]string{
	TileTypeUnknown: "unknown", TileTypeMVT: "mvt", TileTypePNG: "png", TileTypeJPEG: "jpeg",
	TileTypeWebP: "webp", TileTypeAVIF: "avif", TileTypeMLT: "mlt",
}

func (t TileType) String() string { return enumName(tileTypeNames[:], uint8(t), "tiletype") }

// Ext is the file extension tiles of this type are served under, without a
// dot: "pbf" for MVT (what tippecanoe and MapLibre styles use), "" when the
// type is unknown.
func (t TileType) Ext() string {
	switch t {
	case TileTypeMVT:
		return "pbf"
	case TileTypePNG:
		return "png"
	case TileTypeJPEG:
		return "jpg"
	case TileTypeWebP:
		return "webp"
	case TileTypeAVIF:
		return "avif"
	case TileTypeMLT:
		return "mlt"
	}
	return ""
}

// Exts lists every extension a tile of this type answers to: "pbf" and
// "mvt" for vector tiles, "jpg" and "jpeg" for JPEG.
func (t TileType) Exts() []string {
	switch t {
	case TileTypeMVT:
		return []string{"pbf", "mvt"}
	case TileTypeJPEG:
		return []string{"jpg", "jpeg"}
	}
	if e := t.Ext(); e != "" {
		return []string{e}
	}
	return nil
}

// ContentType is the MIME type of a tile of this type,
// "application/octet-stream" when unknown.
func (t TileType) ContentType() string {
	switch t {
	case TileTypeMVT:
		return "application/vnd.mapbox-vector-tile"
	case TileTypePNG:
		return "image/png"
	case TileTypeJPEG:
		return "image/jpeg"
	case TileTypeWebP:
		return "image/webp"
	case TileTypeAVIF:
		return "image/avif"
	case TileTypeMLT:
		return "application/vnd.maplibre-tile"
	}
	return "application/octet-stream"
}

// Vector reports whether tiles of this type are vector tiles (TileJSON then
// needs vector_layers).
func (t TileType) Vector() bool { return t == TileTypeMVT || t == TileTypeMLT }

func fmtUnsupported(format string, args ...any) error {
	return fmt.Errorf("pmtiles: "+format+": %w", append(args, ErrUnsupported)...)
}
