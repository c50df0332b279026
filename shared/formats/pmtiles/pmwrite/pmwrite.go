// Package pmwrite writes PMTiles v3 archives: tiles in, in any order, one
// clustered archive out. It lives apart from package pmtiles so that what
// only the upload tool needs is not linked into the tile function.
//
// What it promises:
//
//   - Tiles are streamed to a temporary file as they are added; memory holds
//     only an entry per tile and a hash per distinct tile (about 145 bytes
//     a distinct tile, BenchmarkWriteDistinctTiles), never the archive.
//   - Identical tile bytes are stored once (by SHA-256), and consecutive tile
//     ids with identical bytes become one run-length entry.
//   - The archive is clustered (tile data in tile-id order), its directories
//     and metadata gzip-compressed, its root directory within the first
//     pmtiles.RootWindow bytes, with leaf directories (one level, ascending)
//     when the entries do not fit the root.
//   - The header records the tile type and compression given, the zooms of
//     the tiles added, and the bounds and center given (else those of the
//     tiles). Equal input writes equal bytes, so a second conversion of the
//     same tiles uploads nothing new.
//   - Bad input (a tile outside its zoom's grid, a tile added twice,
//     metadata that is not a JSON object, no tiles) is an error, never a
//     partial archive; an empty tile, which the format cannot hold, is
//     counted and left out.
package pmwrite

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// ErrInput is input that cannot become an archive. Match it with errors.Is.
var ErrInput = errors.New("pmwrite: bad input")

func badInput(format string, args ...any) error {
	return fmt.Errorf("pmwrite: "+format+": %w", append(args, ErrInput)...)
}

// Options describe the archive, given to Finish: what the header and
// metadata say is often known only once every tile is. Zero values take the
// defaults.
type Options struct {
	TileType pmtiles.TileType // required
	// TileCompression is the compression of the tile bytes as they are
	// added (they are stored as given); default none.
	TileCompression pmtiles.Compression
	// Metadata is the archive's JSON metadata, one JSON object; nil or
	// empty writes {}.
	Metadata []byte
	// Bounds is [west, south, east, north] in degrees; nil takes the extent
	// of the tiles added.
	Bounds *[4]float64
	// Center is [longitude, latitude, zoom], a negative zoom standing for
	// the lowest zoom of the tiles and one outside their zooms taken to
	// the nearest of them; nil takes the middle of the bounds at the
	// lowest zoom.
	Center *[3]float64
}

// Stats count what an archive holds.
type Stats struct {
	Tiles    uint64 // addressed tiles
	Entries  uint64 // directory entries of tiles, after run-length encoding
	Contents uint64 // distinct tile blobs stored
	Empty    uint64 // empty tiles left out
	Leaves   int    // leaf directories
	Bytes    int64  // the archive's size
}

// rec is one tile added: its id and where its bytes are in the temp file.
type rec struct {
	id     uint64
	off    uint64
	length uint32
}

// blob is a distinct tile's place in the temp file.
type blob struct {
	off    uint64
	length uint32
}

// Writer collects tiles and writes the archive. It is not safe for
// concurrent use.
type Writer struct {
	tmp       *os.File
	buf       *bufio.Writer
	size      uint64 // bytes written to tmp
	recs      []rec
	blobs     map[[sha256.Size]byte]blob
	empty     uint64
	zooms     [pmtiles.MaxZoom + 1]extent
	rootLimit int // the root directory's stored size limit
	done      bool
}

// extent is the tile rows and columns a zoom covers.
type extent struct {
	any        bool
	minX, maxX uint32
	minY, maxY uint32
}

// New starts an archive whose tile data is kept, until Finish, in a
// temporary file in dir ("" is os.TempDir()).
func New(dir string) (*Writer, error) {
	tmp, err := os.CreateTemp(dir, "pmwrite-*.tiles")
	if err != nil {
		return nil, fmt.Errorf("pmwrite: %w", err)
	}
	return &Writer{
		tmp:       tmp,
		buf:       bufio.NewWriterSize(tmp, 1<<20),
		blobs:     map[[sha256.Size]byte]blob{},
		rootLimit: pmtiles.RootWindow - pmtiles.HeaderLen,
	}, nil
}

// check validates opts and fills the defaults.
func (opts Options) check() (Options, error) {
	if opts.TileType == pmtiles.TileTypeUnknown || opts.TileType.Ext() == "" {
		return opts, badInput("tile type %v: want mvt, png, jpeg, webp, avif or mlt", opts.TileType)
	}
	if opts.TileCompression == pmtiles.CompressionUnknown {
		opts.TileCompression = pmtiles.CompressionNone
	}
	switch opts.TileCompression {
	case pmtiles.CompressionNone, pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd:
	default:
		return opts, badInput("tile compression %v", opts.TileCompression)
	}
	if len(bytes.TrimSpace(opts.Metadata)) == 0 {
		opts.Metadata = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(opts.Metadata, &obj); err != nil || obj == nil {
		return opts, badInput("metadata: not a JSON object")
	}
	if b := opts.Bounds; b != nil && !(b[0] >= -180 && b[0] <= b[2] && b[2] <= 180 && b[1] >= -90 && b[1] <= b[3] && b[3] <= 90) {
		return opts, badInput("bounds %v: want west ≤ east in [-180, 180], south ≤ north in [-90, 90]", *b)
	}
	if c := opts.Center; c != nil && !(c[0] >= -180 && c[0] <= 180 && c[1] >= -90 && c[1] <= 90 && c[2] <= pmtiles.MaxZoom) {
		return opts, badInput("center %v: want a longitude, a latitude and a zoom up to %d", *c, pmtiles.MaxZoom)
	}
	return opts, nil
}

// Add adds tile z/x/y (XYZ rows, y grows southwards) with its stored bytes,
// which it copies. An empty tile is counted and left out: the format cannot
// hold one.
func (w *Writer) Add(z uint8, x, y uint32, data []byte) error {
	if w.done {
		return errors.New("pmwrite: add after Finish or Close")
	}
	id, err := pmtiles.ZXYToID(z, x, y)
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrInput)
	}
	if len(data) == 0 {
		w.empty++
		return nil
	}
	if uint64(len(data)) > math.MaxUint32 {
		return badInput("tile %d/%d/%d: %d bytes, more than 2^32-1", z, x, y, len(data))
	}
	sum := sha256.Sum256(data)
	b, ok := w.blobs[sum]
	if !ok {
		if _, err := w.buf.Write(data); err != nil {
			return fmt.Errorf("pmwrite: temporary file: %w", err)
		}
		b = blob{off: w.size, length: uint32(len(data))}
		w.blobs[sum] = b
		w.size += uint64(len(data))
	}
	w.recs = append(w.recs, rec{id: id, off: b.off, length: b.length})
	e := &w.zooms[z]
	if !e.any {
		*e = extent{any: true, minX: x, maxX: x, minY: y, maxY: y}
	} else {
		e.minX, e.maxX = min(e.minX, x), max(e.maxX, x)
		e.minY, e.maxY = min(e.minY, y), max(e.maxY, y)
	}
	return nil
}

// Finish writes the archive described by opts to out and removes the
// temporary file; on bad input it writes nothing. The Writer cannot be used
// afterwards.
func (w *Writer) Finish(out io.Writer, opts Options) (Stats, error) {
	if w.done {
		return Stats{}, errors.New("pmwrite: Finish after Finish or Close")
	}
	defer w.Close()
	st := Stats{Empty: w.empty}
	opts, err := opts.check()
	if err != nil {
		return st, err
	}
	if len(w.recs) == 0 {
		return st, badInput("no tiles (%d empty ones left out)", w.empty)
	}
	if err := w.buf.Flush(); err != nil {
		return st, fmt.Errorf("pmwrite: temporary file: %w", err)
	}
	slices.SortFunc(w.recs, func(a, b rec) int { return cmp.Compare(a.id, b.id) })

	// Lay tile data out in tile-id order, each distinct blob once, where
	// the first tile holding it falls.
	var entries []pmtiles.Entry
	final := make(map[uint64]uint64, len(w.blobs)) // temp offset → data offset
	order := make([]blob, 0, len(w.blobs))         // blobs in data order
	var dataLen uint64
	for i, r := range w.recs {
		if i > 0 && w.recs[i-1].id == r.id {
			t, _ := pmtiles.IDToZXY(r.id)
			return st, badInput("tile %v added twice", t)
		}
		off, ok := final[r.off]
		if !ok {
			off = dataLen
			final[r.off] = off
			order = append(order, blob{off: r.off, length: r.length})
			dataLen += uint64(r.length)
		}
		if n := len(entries); n > 0 {
			last := &entries[n-1]
			if last.Offset == off && last.TileID+uint64(last.RunLength) == r.id && last.RunLength < math.MaxUint32 {
				last.RunLength++
				continue
			}
		}
		entries = append(entries, pmtiles.Entry{TileID: r.id, Offset: off, Length: r.length, RunLength: 1})
	}
	st.Tiles, st.Entries, st.Contents = uint64(len(w.recs)), uint64(len(entries)), uint64(len(order))

	root, leaves, n, err := directories(entries, w.rootLimit)
	if err != nil {
		return st, err
	}
	st.Leaves = n
	meta, err := gzipBytes(opts.Metadata)
	if err != nil {
		return st, err
	}
	h := w.header(st, opts)
	h.RootOffset, h.RootLength = pmtiles.HeaderLen, uint64(len(root))
	h.MetadataOffset, h.MetadataLength = h.RootOffset+h.RootLength, uint64(len(meta))
	h.LeafDirectoryOffset, h.LeafDirectoryLength = h.MetadataOffset+h.MetadataLength, uint64(len(leaves))
	h.TileDataOffset, h.TileDataLength = h.LeafDirectoryOffset+h.LeafDirectoryLength, dataLen

	bw := bufio.NewWriterSize(out, 1<<20)
	head := pmtiles.AppendHeader(nil, h)
	for _, b := range [][]byte{head, root, meta, leaves} {
		if _, err := bw.Write(b); err != nil {
			return st, fmt.Errorf("pmwrite: write: %w", err)
		}
	}
	for _, b := range order {
		if _, err := io.Copy(bw, io.NewSectionReader(w.tmp, int64(b.off), int64(b.length))); err != nil {
			return st, fmt.Errorf("pmwrite: copy tile data: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("pmwrite: write: %w", err)
	}
	st.Bytes = int64(h.TileDataOffset + h.TileDataLength)
	return st, nil
}

// Close removes the temporary file; after Finish it does nothing.
func (w *Writer) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	w.recs, w.blobs = nil, nil
	return errors.Join(w.tmp.Close(), os.Remove(w.tmp.Name()))
}

// header fills what the tiles and options tell.
func (w *Writer) header(st Stats, opts Options) pmtiles.Header {
	h := pmtiles.Header{
		SpecVersion:         3,
		AddressedTilesCount: st.Tiles,
		TileEntriesCount:    st.Entries,
		TileContentsCount:   st.Contents,
		Clustered:           true,
		InternalCompression: pmtiles.CompressionGzip,
		TileCompression:     opts.TileCompression,
		TileType:            opts.TileType,
	}
	first := true
	var west, south, east, north float64
	for z, e := range w.zooms {
		if !e.any {
			continue
		}
		if first {
			h.MinZoom = uint8(z)
		}
		h.MaxZoom = uint8(z)
		n := float64(uint64(1) << z)
		tw, te := float64(e.minX)/n*360-180, float64(e.maxX+1)/n*360-180
		tn, ts := lat(float64(e.minY)/n), lat(float64(e.maxY+1)/n)
		if first {
			west, south, east, north = tw, ts, te, tn
		} else {
			west, south, east, north = min(west, tw), min(south, ts), max(east, te), max(north, tn)
		}
		first = false
	}
	b := [4]float64{west, south, east, north}
	if opts.Bounds != nil {
		b = *opts.Bounds
	}
	c := [3]float64{(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, float64(h.MinZoom)}
	if opts.Center != nil {
		c = *opts.Center
		if c[2] < 0 {
			c[2] = float64(h.MinZoom)
		}
	}
	h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7 = e7(b[0]), e7(b[1]), e7(b[2]), e7(b[3])
	// A center zoom outside the tiles' zooms is one no client could show
	// (go-pmtiles' verify refuses it): the nearest zoom of the tiles.
	cz := uint8(min(max(math.Round(c[2]), float64(h.MinZoom)), float64(h.MaxZoom)))
	h.CenterLonE7, h.CenterLatE7, h.CenterZoom = e7(c[0]), e7(c[1]), cz
	return h
}

// lat is the latitude of the Web Mercator row at fraction f of the grid
// from the top.
func lat(f float64) float64 {
	return math.Atan(math.Sinh(math.Pi*(1-2*f))) * 180 / math.Pi
}

func e7(v float64) int32 { return int32(math.Round(v * 1e7)) }

// directories encodes entries as one root, or, when that does not fit in
// limit bytes stored, as leaves of equal entry counts (grown until the
// root of pointers to them fits) and a root of those pointers.
func directories(entries []pmtiles.Entry, limit int) (root, leaves []byte, n int, err error) {
	if root, err = gzipBytes(pmtiles.AppendDirectory(nil, entries)); err != nil {
		return nil, nil, 0, err
	}
	if len(root) <= limit {
		return root, nil, 0, nil
	}
	// As go-pmtiles does: start from 4096 entries a leaf (or what makes
	// about 3500 leaves) and grow by a fifth until the root fits.
	size := max(4096, float64(len(entries))/3500)
	if limit < pmtiles.RootWindow-pmtiles.HeaderLen {
		size = 1 // a lowered limit (tests) starts from the smallest leaves
	}
	for {
		per := max(int(size), 1)
		var ptrs []pmtiles.Entry
		leaves = leaves[:0]
		for i := 0; i < len(entries); i += per {
			leaf, err := gzipBytes(pmtiles.AppendDirectory(nil, entries[i:min(i+per, len(entries))]))
			if err != nil {
				return nil, nil, 0, err
			}
			ptrs = append(ptrs, pmtiles.Entry{TileID: entries[i].TileID, Offset: uint64(len(leaves)), Length: uint32(len(leaf))})
			leaves = append(leaves, leaf...)
		}
		if root, err = gzipBytes(pmtiles.AppendDirectory(nil, ptrs)); err != nil {
			return nil, nil, 0, err
		}
		if len(root) <= limit {
			return root, leaves, len(ptrs), nil
		}
		if per >= len(entries) {
			return nil, nil, 0, fmt.Errorf("pmwrite: a root of one leaf takes %d bytes, more than %d", len(root), limit)
		}
		size = max(size*1.2, size+1)
	}
}

// gzipBytes compresses b with gzip, without a name or a time in the header,
// so equal bytes compress to equal bytes.
func gzipBytes(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("pmwrite: gzip: %w", err)
	}
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("pmwrite: gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("pmwrite: gzip: %w", err)
	}
	return out.Bytes(), nil
}
