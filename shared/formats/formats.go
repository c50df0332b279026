// Package formats is the seam between the tile origin and the formats of
// tilesets and images stored as one object: NAME.pmtiles, NAME.mbtiles,
// ID.tif.
//
// Table says what every binary knows of a format: its name, its
// extensions, how its object is staged and how a tileset made of it is
// listed. It is data only, so the sync worker, which purges by it, links
// no format's code. Dataset is what an opened object answers; the format
// packages (shared/formats/pmtiles, shared/formats/mbtiles) implement it,
// and shared/formats/registry pairs each Table entry with its opener for
// the binaries that read formats. A dataset that is a pyramidal image also
// implements Pyramid, which the IIIF service (shared/images) reads. Adding a format is its package, its entry
// here and its opener there (TestRegistryMatchesTable keeps the two in
// step).
//
// Precedence: when objects of two formats share a name (NAME.pmtiles and
// NAME.mbtiles, ID.tif and ID.tiff), the one earlier in Table serves it.
package formats

import (
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/tileset"
)

// Staging is how an object of a format reaches the reader.
type Staging uint8

const (
	// Ranged objects are read by range, pinned to their ETag, and copied
	// whole beside the disk tier only when STAGE_PREFIXES names them.
	Ranged Staging = iota
	// Whole objects are copied whole to local disk before they are opened
	// (SQLite reads a file).
	Whole
)

// Spec describes one format.
type Spec struct {
	Name  string // "pmtiles": the catalog's kind of its tilesets
	Title string // "PMTiles": its name in answers and messages
	// Ext is the extension of its objects: TILES_PREFIX + NAME + Ext is
	// the tileset NAME/.
	Ext     string
	Staging Staging
	// ProbeBytes is how much of an object the first read takes: enough for
	// the format's header (and, for PMTiles, its root directory; for a
	// Cloud Optimized GeoTIFF, its IFDs).
	ProbeBytes int64
	// Tiles marks a format of tilesets: NAME+Ext is the tileset NAME/ (a
	// top-level key). Image marks a format of images served as IIIF: any
	// key ID+Ext is the image ID.
	Tiles, Image bool
}

// Table lists the formats, in order of precedence.
var Table = []Spec{
	{Name: "pmtiles", Title: "PMTiles", Ext: ".pmtiles", Staging: Ranged, ProbeBytes: 16 << 10, Tiles: true},
	{Name: "mbtiles", Title: "MBTiles", Ext: ".mbtiles", Staging: Whole, ProbeBytes: 1, Tiles: true},
	{Name: "tiff", Title: "TIFF", Ext: ".tif", Staging: Ranged, ProbeBytes: 64 << 10, Tiles: true, Image: true},
	{Name: "tiff", Title: "TIFF", Ext: ".tiff", Staging: Ranged, ProbeBytes: 64 << 10, Tiles: true, Image: true},
}

// Exts lists the extensions of the formats of tilesets (Tiles), in Table's
// order.
func Exts() []string {
	var exts []string
	for _, s := range Table {
		if s.Tiles {
			exts = append(exts, s.Ext)
		}
	}
	return exts
}

// ImageExts lists the extensions of the formats of images (Image), in
// Table's order.
func ImageExts() []string {
	var exts []string
	for _, s := range Table {
		if s.Image {
			exts = append(exts, s.Ext)
		}
	}
	return exts
}

// Of reports the format whose extension key ends with, and the name before
// it: "osm.pmtiles" is the PMTiles object of "osm", "maps/a.tif" the TIFF of
// the image "maps/a". ok is false when no format's extension ends key or
// nothing is left before it.
func Of(key string) (spec Spec, name string, ok bool) {
	for _, s := range Table {
		if n, found := strings.CutSuffix(key, s.Ext); found && n != "" {
			return s, n, true
		}
	}
	return Spec{}, "", false
}

// Lookup returns the format called name.
func Lookup(name string) (Spec, bool) {
	for _, s := range Table {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// RangeReader reads bytes of one version of an object: ranged GETs pinned
// to its ETag (If-Match), a staged copy, or bytes in memory.
type RangeReader interface {
	ReadRange(ctx context.Context, offset, length int64) ([]byte, error)
}

// RangeReaderFunc adapts a function to RangeReader.
type RangeReaderFunc func(ctx context.Context, offset, length int64) ([]byte, error)

// ReadRange calls f.
func (f RangeReaderFunc) ReadRange(ctx context.Context, offset, length int64) ([]byte, error) {
	return f(ctx, offset, length)
}

// ReaderAt reads ranges from r: an object staged to a local file
// (*os.File), or bytes in memory (bytes.NewReader). A range past the end
// is an error.
func ReaderAt(r io.ReaderAt) RangeReader {
	return RangeReaderFunc(func(_ context.Context, off, n int64) ([]byte, error) {
		b := make([]byte, n)
		if _, err := r.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("formats: read %d+%d: %w", off, n, err)
		}
		return b, nil
	})
}

// Object is the version of a stored object a format opens.
type Object struct {
	Name         string // the tileset or image it is: "osm" for osm.pmtiles
	ETag         string
	Size         int64
	LastModified time.Time
	// First holds the object's first bytes, as the probe read them:
	// Spec.ProbeBytes of them, or fewer when the object is shorter.
	First []byte
	// Range reads any part of this version (Ranged formats).
	Range RangeReader
	// Path is the local copy (Whole formats).
	Path string
}

// Cache keeps what a format decodes of one object version (PMTiles leaf
// directories), byte-bounded, under keys the format chooses; the caller
// scopes it to the version, and drops it with the version.
type Cache interface {
	Get(key string) (any, bool)
	// Put keeps v, which holds cost bytes of heap; values are shared, never
	// modified after Put.
	Put(key string, v any, cost int64)
}

// View is how an object is opened: as a tileset (NAME/z/x/y) or as an
// image (IIIF).
type View uint8

// The views of an object.
const (
	ViewTiles View = iota
	ViewImage
)

// Options bound what an opened object reads.
type Options struct {
	View View
	// MaxTileBytes (MAX_TILE_BYTES; zero or negative: off) refuses a
	// larger tile with tile.ErrTooLarge: from the format's index, before a
	// byte of it is read, where the format has one.
	MaxTileBytes int64
	Cache        Cache // nil: nothing is kept between reads
}

// Opener opens one version of an object of its format, in Options.View.
// An error matching ErrInvalid is the object's fault (malformed, or not of
// the format): the caller refuses it until it changes; one matching
// ErrNotTileset an object that is no tileset (an image without
// georeferencing), which leaves the name to the tiles stored as objects.
// Any other error is passing.
type Opener func(ctx context.Context, obj Object, opts Options) (Dataset, error)

// Tile is a tile a Dataset read.
type Tile struct {
	Body            []byte
	ContentType     string
	ContentEncoding string
	// Version names these bytes within the object's version (a PMTiles
	// tile's range, an MBTiles tile's coordinates): the tile's ETag is the
	// object's ETag and this.
	Version string
}

// TileRequest names a tile of a tileset: NAME/z/x/y.ext, or
// NAME/variant/z/x/y.ext for a tileset with variants (an elevation model's
// encodings).
type TileRequest struct {
	Variant string
	Z       uint8
	X, Y    uint32 // XYZ rows
	Ext     string // "png", "pbf"
}

// Dataset is one version of an object, opened. It is safe for concurrent
// use; Close waits for no read and may be called once all reads ended.
type Dataset interface {
	// Accepts reports whether the dataset has tiles of r's variant and
	// extension, so that a revalidation of another is answered unread.
	Accepts(r TileRequest) bool
	// Tile reads tile r. tile.ErrNotFound: none there; tile.ErrTooLarge:
	// past Options.MaxTileBytes.
	Tile(ctx context.Context, r TileRequest) (Tile, error)
	// TileJSON describes the tileset name with tile URLs under baseURL.
	TileJSON(ctx context.Context, baseURL, name string) (tileset.TileJSON, error)
	Close() error
}

// ErrInvalid matches the errors of an object its format refuses.
var ErrInvalid = errors.New("formats: object refused by its format")

// ErrNotTileset is an object opened as a tileset that is none (an image
// without georeferencing): the name is left to the tiles stored as
// objects.
var ErrNotTileset = errors.New("formats: not a tileset")

// Invalid marks err as the object's fault (ErrInvalid), keeping its
// message.
func Invalid(err error) error { return invalidError{err} }

type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{e.err, ErrInvalid} }

// Prefetched is r with the object's first bytes, already read, answered
// from first: a format that reads its header again through r costs no
// second request for what the probe read.
func Prefetched(first []byte, r RangeReader) RangeReader {
	return RangeReaderFunc(func(ctx context.Context, off, n int64) ([]byte, error) {
		if off >= 0 && n >= 0 && off+n <= int64(len(first)) {
			return first[off : off+n : off+n], nil
		}
		return r.ReadRange(ctx, off, n)
	})
}

// PyramidLevel is one resolution of a pyramidal image: Width×Height pixels
// stored as TileWidth×TileHeight tiles (edge tiles padded), JPEG when each
// stored tile is a JPEG the image's answers may pass on as stored.
type PyramidLevel struct {
	Width, Height, TileWidth, TileHeight int
	JPEG                                 bool
}

// Pyramid is a Dataset that is a pyramidal image (a tiled TIFF), served as
// IIIF by shared/images. It is safe for concurrent use.
type Pyramid interface {
	// Levels are its resolutions, full resolution first, each smaller.
	Levels() []PyramidLevel
	// Bands says whether it is gray, and whether it has an alpha band (or a
	// transparency mask).
	Bands() (gray, alpha bool)
	// StoredJPEG is stored tile at of level l made a complete JPEG, read in
	// one ranged read and never decoded; only for a JPEG level.
	StoredJPEG(ctx context.Context, l int, at image.Point) ([]byte, error)
	// ReadTiles reads the stored tiles at of level l, adjacent tiles in one
	// ranged read, and returns what decodes them: decode(i) is tile at[i],
	// the whole stored tile (edge tiles padded; a tile not stored is
	// transparent), decoded when asked, so a caller bounds its decodes.
	ReadTiles(ctx context.Context, l int, at []image.Point) (decode func(i int) (image.Image, error), err error)
	// Pictured is nil when its tiles decode to 8-bit images, else a
	// *NotPictureError saying why they do not.
	Pictured() error
}

// NotPictureError is a pyramid whose samples are not colours (heights or
// measurements: a float or 16-bit elevation model), served as a map
// tileset, not as an image.
type NotPictureError struct{ Reason string }

func (e *NotPictureError) Error() string { return e.Reason }
