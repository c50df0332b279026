// Package pmwrite writes PMTiles v3 archives: tiles in, in any order, one
// archive out. It is the project's one PMTiles writer (the upload tool's
// conversions and the test kit pmtilestest both write through it), and it
// lives apart from package pmtiles so that what only writers need is not
// linked into the tile function.
//
// What it promises:
//
//   - Tiles are streamed to a temporary file as they are added; memory holds
//     only an entry per tile and a hash per distinct tile (about 145 bytes
//     a distinct tile, BenchmarkWriteDistinctTiles), never the archive.
//   - Identical tile bytes are stored once (by SHA-256), and consecutive tile
//     ids with identical bytes become one run-length entry, unless
//     Options.NoDeduplication.
//   - By default the archive is clustered (tile data in tile-id order), its
//     directories and metadata gzip-compressed, its root directory within
//     the first pmtiles.RootWindow bytes, with leaf directories (one level,
//     ascending) when the entries do not fit the root. Options choose the
//     other layouts the spec allows: unclustered data, no deduplication,
//     directories compressed otherwise, a smaller root, leaf sizes.
//   - The header records the tile type and compression given, the zooms of
//     the tiles added, and the bounds and center given (else those of the
//     tiles). Equal input (for an unclustered archive, in equal order)
//     writes equal bytes, so a second conversion of the same tiles uploads
//     nothing new.
//   - Bad input (a tile outside its zoom's grid, a tile added twice,
//     metadata that is not a JSON object, no tiles) is an error, never a
//     partial archive; an empty tile, which the format cannot hold, is
//     counted and left out.
package pmwrite

import (
	"bufio"
	"bytes"
	"cmp"
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

// maxRoot is the most a root directory may take: the spec's first read,
// less the header.
const maxRoot = pmtiles.RootWindow - pmtiles.HeaderLen

// Options describe the archive, given to Finish: what the header and
// metadata say is often known only once every tile is. Zero values take the
// defaults.
type Options struct {
	TileType pmtiles.TileType // required
	// TileCompression is the compression of the tile bytes as they are
	// added (they are stored as given); default none.
	TileCompression pmtiles.Compression
	// InternalCompression compresses the directories and the metadata:
	// gzip (the default), none, brotli or zstd.
	InternalCompression pmtiles.Compression
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

	// Unclustered lays the tile data out in the order the tiles were added
	// instead of tile-id order, and the header says so (readers then cannot
	// take neighbouring tiles for neighbouring bytes).
	Unclustered bool
	// NoDeduplication stores every tile's bytes apart, identical or not,
	// each under its own entry (no run lengths), as go-pmtiles' convert
	// --no-deduplication does.
	NoDeduplication bool
	// MaxRootBytes is the stored size past which a root holding every
	// entry gives way to leaf directories; default and at most
	// pmtiles.RootWindow-pmtiles.HeaderLen. A smaller root makes an
	// archive's first read smaller.
	MaxRootBytes int
	// LeafEntries is the number of entries a leaf directory holds once
	// leaves are needed. 0 sizes them as go-pmtiles does: 4096 entries, or
	// a 3500th of them, grown by a fifth until the root fits MaxRootBytes.
	// A size given is kept as long as the root fits the spec's window.
	LeafEntries int
}

// Stats count what an archive holds.
type Stats struct {
	Tiles    uint64 // addressed tiles
	Entries  uint64 // directory entries of tiles, after run-length encoding
	Contents uint64 // tile blobs stored (distinct ones, unless NoDeduplication)
	Empty    uint64 // empty tiles left out
	Leaves   int    // leaf directories
	Bytes    int64  // the archive's size
}

// rec is one tile added: its id and where its bytes are in the temp file
// (in the data section, once laid out).
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
	tmp   *os.File
	buf   *bufio.Writer
	size  uint64 // bytes written to tmp
	recs  []rec  // in the order added
	blobs map[[sha256.Size]byte]blob
	empty uint64
	zooms [pmtiles.MaxZoom + 1]extent
	done  bool
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
		tmp:   tmp,
		buf:   bufio.NewWriterSize(tmp, 1<<20),
		blobs: map[[sha256.Size]byte]blob{},
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
	if !known(opts.TileCompression) {
		return opts, badInput("tile compression %v", opts.TileCompression)
	}
	if opts.InternalCompression == pmtiles.CompressionUnknown {
		opts.InternalCompression = pmtiles.CompressionGzip
	}
	if !known(opts.InternalCompression) {
		return opts, badInput("internal compression %v: want none, gzip, br or zstd", opts.InternalCompression)
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
	if opts.MaxRootBytes == 0 {
		opts.MaxRootBytes = maxRoot
	}
	if opts.MaxRootBytes < 0 || opts.MaxRootBytes > maxRoot {
		return opts, badInput("root of at most %d bytes: want 1 to %d", opts.MaxRootBytes, maxRoot)
	}
	if opts.LeafEntries < 0 {
		return opts, badInput("%d entries a leaf", opts.LeafEntries)
	}
	return opts, nil
}

// known is a compression the writer can store and record.
func known(c pmtiles.Compression) bool {
	switch c {
	case pmtiles.CompressionNone, pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd:
		return true
	}
	return false
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
	entries, order, dataLen, err := w.layout(opts)
	if err != nil {
		return st, err
	}
	st.Tiles, st.Entries, st.Contents = uint64(len(w.recs)), uint64(len(entries)), uint64(len(order))

	enc, err := newEncoder(opts.InternalCompression)
	if err != nil {
		return st, err
	}
	root, leaves, n, err := directories(entries, enc, opts)
	if err != nil {
		return st, err
	}
	st.Leaves = n
	meta, err := enc.encode(opts.Metadata)
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

// layout places the tile data, each blob where the first tile holding it
// falls (every tile's bytes apart without deduplication), in tile-id order
// or, unclustered, in the order added. It returns the directory entries in
// tile-id order, the blobs to copy in data order and the data's length.
func (w *Writer) layout(opts Options) (entries []pmtiles.Entry, order []blob, dataLen uint64, err error) {
	byID := func(a, b rec) int { return cmp.Compare(a.id, b.id) }
	if !opts.Unclustered {
		slices.SortFunc(w.recs, byID)
	}
	dedup := !opts.NoDeduplication
	final := make(map[uint64]uint64, len(w.blobs)) // temp offset → data offset
	order = make([]blob, 0, len(w.blobs))
	for i := range w.recs {
		r := &w.recs[i]
		off, ok := final[r.off]
		if !ok || !dedup {
			off = dataLen
			if dedup {
				final[r.off] = off
			}
			order = append(order, blob{off: r.off, length: r.length})
			dataLen += uint64(r.length)
		}
		r.off = off
	}
	if opts.Unclustered {
		slices.SortFunc(w.recs, byID)
	}
	for i, r := range w.recs {
		if i > 0 && w.recs[i-1].id == r.id {
			t, _ := pmtiles.IDToZXY(r.id)
			return nil, nil, 0, badInput("tile %v added twice", t)
		}
		if n := len(entries); dedup && n > 0 {
			last := &entries[n-1]
			if last.Offset == r.off && last.TileID+uint64(last.RunLength) == r.id && last.RunLength < math.MaxUint32 {
				last.RunLength++
				continue
			}
		}
		entries = append(entries, pmtiles.Entry{TileID: r.id, Offset: r.off, Length: r.length, RunLength: 1})
	}
	return entries, order, dataLen, nil
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
		Clustered:           !opts.Unclustered,
		InternalCompression: opts.InternalCompression,
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
// opts.MaxRootBytes stored, as leaves of opts.LeafEntries entries (or of
// equal entry counts grown until the root of pointers to them fits) and a
// root of those pointers.
func directories(entries []pmtiles.Entry, enc *encoder, opts Options) (root, leaves []byte, n int, err error) {
	if root, err = enc.encode(pmtiles.AppendDirectory(nil, entries)); err != nil {
		return nil, nil, 0, err
	}
	if len(root) <= opts.MaxRootBytes {
		return root, nil, 0, nil
	}
	if opts.LeafEntries > 0 {
		if root, leaves, n, err = leafDirectories(entries, opts.LeafEntries, enc); err == nil && len(root) > maxRoot {
			err = badInput("leaves of %d entries: a root of %d bytes, more than %d", opts.LeafEntries, len(root), maxRoot)
		}
		return root, leaves, n, err
	}
	// As go-pmtiles does: start from 4096 entries a leaf (or what makes
	// about 3500 leaves) and grow by a fifth until the root fits.
	size := max(4096, float64(len(entries))/3500)
	for {
		per := max(int(size), 1)
		if root, leaves, n, err = leafDirectories(entries, per, enc); err != nil {
			return nil, nil, 0, err
		}
		if len(root) <= opts.MaxRootBytes {
			return root, leaves, n, nil
		}
		if per >= len(entries) {
			return nil, nil, 0, badInput("root of at most %d bytes: a root of one leaf takes %d", opts.MaxRootBytes, len(root))
		}
		size = max(size*1.2, size+1)
	}
}

// leafDirectories encodes entries as leaves of per entries each and a root
// of pointers to them, returning root, leaves and the number of leaves.
func leafDirectories(entries []pmtiles.Entry, per int, enc *encoder) ([]byte, []byte, int, error) {
	var ptrs []pmtiles.Entry
	var leaves []byte
	for i := 0; i < len(entries); i += per {
		leaf, err := enc.encode(pmtiles.AppendDirectory(nil, entries[i:min(i+per, len(entries))]))
		if err != nil {
			return nil, nil, 0, err
		}
		ptrs = append(ptrs, pmtiles.Entry{TileID: entries[i].TileID, Offset: uint64(len(leaves)), Length: uint32(len(leaf))})
		leaves = append(leaves, leaf...)
	}
	root, err := enc.encode(pmtiles.AppendDirectory(nil, ptrs))
	if err != nil {
		return nil, nil, 0, err
	}
	return root, leaves, len(ptrs), nil
}
