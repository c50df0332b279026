package pmtiles

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tilesieve/tilesieve/shared/formats"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
)

// RangeReader reads bytes of one version of an archive. A server pins the
// version it read the header from (S3 If-Match on the ETag), so every range
// comes from the same bytes; an error it returns reaches the caller wrapped.
type RangeReader = formats.RangeReader

// RangeReaderFunc adapts a function to RangeReader.
type RangeReaderFunc = formats.RangeReaderFunc

// ReaderAt reads ranges from r: an archive staged to a local file
// (*os.File), or bytes in memory (bytes.NewReader).
func ReaderAt(r io.ReaderAt) RangeReader { return formats.ReaderAt(r) }

// Range is a byte range of the archive, from its first byte.
type Range struct {
	Offset, Length int64
}

// LeafCache keeps decoded leaf directories for a Reader, keyed by the leaf's
// range in the archive. One cache may serve several archives only if the
// caller keys it per archive version (wrap it). Implementations must be safe
// for concurrent use; EntryBytes helps bound them in bytes. Entries handed to
// Put and returned by Get are shared: neither side modifies them.
type LeafCache interface {
	Get(leaf Range) ([]Entry, bool)
	Put(leaf Range, entries []Entry)
}

// Defaults of Options.
const (
	DefaultMaxDepth = 4 // the root and three levels of leaves; writers use one
	// DefaultMaxDirectoryBytes caps a directory stored and decompressed. A
	// planet-scale archive's leaves are well under 1 MiB; decoded entries
	// take at most six times the decompressed bytes, so a leaf costs at most
	// 24 MiB of memory.
	DefaultMaxDirectoryBytes = 4 << 20
	DefaultMaxMetadataBytes  = 4 << 20 // stored and decompressed
	DefaultMaxTileBytes      = 64 << 20
)

// Options bound what a Reader will read. Zero values take the defaults.
type Options struct {
	MaxDepth          int   // directories on the path to a tile, the root included
	MaxDirectoryBytes int64 // cap of one leaf directory, stored and decompressed
	MaxMetadataBytes  int64 // cap of the JSON metadata, stored and decompressed
	MaxTileBytes      int64 // cap of one tile that ReadTile reads
	Leaves            LeafCache
}

func (o Options) withDefaults() Options {
	o.MaxDepth = defaults.Positive(o.MaxDepth, DefaultMaxDepth)
	o.MaxDirectoryBytes = defaults.Positive(o.MaxDirectoryBytes, DefaultMaxDirectoryBytes)
	o.MaxMetadataBytes = defaults.Positive(o.MaxMetadataBytes, DefaultMaxMetadataBytes)
	o.MaxTileBytes = defaults.Positive(o.MaxTileBytes, DefaultMaxTileBytes)
	return o
}

// Reader resolves tiles of one archive version through its root and leaf
// directories. It holds the header and the decoded root; it is safe for
// concurrent use (as safe as its RangeReader and LeafCache).
type Reader struct {
	src    RangeReader
	size   int64
	header Header
	root   []Entry
	opts   Options
}

// Open reads the header and root directory in one range (the first
// RootWindow bytes, or the whole archive when smaller) and returns a Reader
// of an archive of size bytes.
func Open(ctx context.Context, src RangeReader, size int64, opts Options) (*Reader, error) {
	if size < HeaderLen {
		return nil, invalid("archive of %d bytes is shorter than its header", size)
	}
	b, err := src.ReadRange(ctx, 0, min(size, RootWindow))
	if err != nil {
		return nil, fmt.Errorf("pmtiles: read header: %w", err)
	}
	return NewReader(b, size, src, opts)
}

// NewReader is Open for a caller that already holds the archive's first
// bytes (at least through the root directory's end; the first RootWindow
// bytes always are), for example from the ranged GET that also told it the
// archive's size.
func NewReader(first []byte, size int64, src RangeReader, opts Options) (*Reader, error) {
	h, err := ParseHeader(first)
	if err != nil {
		return nil, err
	}
	if err := h.Validate(size); err != nil {
		return nil, err
	}
	if e, _ := end(h.RootOffset, h.RootLength); e > uint64(len(first)) {
		return nil, invalid("root directory ends at byte %d, past the %d bytes given", e, len(first))
	}
	opts = opts.withDefaults()
	root, err := DecodeDirectory(first[h.RootOffset:h.RootOffset+h.RootLength], h.InternalCompression, opts.MaxDirectoryBytes)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: root directory: %w", err)
	}
	if err := checkEntries(h, root); err != nil {
		return nil, fmt.Errorf("pmtiles: root directory: %w", err)
	}
	return &Reader{src: src, size: size, header: h, root: root, opts: opts}, nil
}

// Header returns the archive's header.
func (r *Reader) Header() Header { return r.header }

// Size returns the archive's size in bytes.
func (r *Reader) Size() int64 { return r.size }

// Root returns the decoded root directory (shared: do not modify it).
func (r *Reader) Root() []Entry { return r.root }

// Find resolves tile z/x/y to its bytes' range in the archive; false when
// the archive does not hold it (including zooms outside the header's range).
func (r *Reader) Find(ctx context.Context, z uint8, x, y uint32) (Range, bool, error) {
	id, err := ZXYToID(z, x, y)
	if err != nil {
		return Range{}, false, nil // no such tile in any archive
	}
	if z < r.header.MinZoom || z > r.header.MaxZoom {
		return Range{}, false, nil
	}
	return r.FindID(ctx, id)
}

// FindID is Find by tile id.
func (r *Reader) FindID(ctx context.Context, id uint64) (Range, bool, error) {
	dir := r.root
	for depth := 1; ; depth++ {
		e, ok := FindTile(dir, id)
		if !ok {
			return Range{}, false, nil
		}
		if !e.IsLeaf() {
			rg, err := r.inSection("tile data", e, r.header.TileDataOffset, r.header.TileDataLength)
			return rg, err == nil, err
		}
		if depth >= r.opts.MaxDepth {
			return Range{}, false, invalid("tile %d: leaf directories nested deeper than %d (a cycle?)", id, r.opts.MaxDepth)
		}
		leaf, err := r.inSection("leaf directory", e, r.header.LeafDirectoryOffset, r.header.LeafDirectoryLength)
		if err != nil {
			return Range{}, false, err
		}
		if dir, err = r.Leaf(ctx, leaf); err != nil {
			return Range{}, false, err
		}
	}
}

// inSection places entry e (offset relative to a section) in the archive,
// refusing it unless it lies inside that section.
func (r *Reader) inSection(what string, e Entry, secOff, secLen uint64) (Range, error) {
	if e.Offset >= secLen || uint64(e.Length) > secLen-e.Offset {
		return Range{}, invalid("tile id %d: %s at %d+%d lies outside its section (%d bytes)", e.TileID, what, e.Offset, e.Length, secLen)
	}
	// Validate put the section inside the archive, so this cannot overflow.
	return Range{Offset: int64(secOff + e.Offset), Length: int64(e.Length)}, nil
}

// Leaf returns the decoded leaf directory at leaf (a range FindID derived
// from a leaf entry), from the LeafCache when it has it, else read, decoded
// and put there.
func (r *Reader) Leaf(ctx context.Context, leaf Range) ([]Entry, error) {
	if c := r.opts.Leaves; c != nil {
		if d, ok := c.Get(leaf); ok {
			return d, nil
		}
	}
	if leaf.Length > r.opts.MaxDirectoryBytes {
		return nil, invalid("leaf directory at %d: %d bytes, more than the cap of %d", leaf.Offset, leaf.Length, r.opts.MaxDirectoryBytes)
	}
	raw, err := r.read(ctx, "leaf directory", leaf)
	if err != nil {
		return nil, err
	}
	d, err := DecodeDirectory(raw, r.header.InternalCompression, r.opts.MaxDirectoryBytes)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: leaf directory at %d+%d: %w", leaf.Offset, leaf.Length, err)
	}
	if c := r.opts.Leaves; c != nil {
		c.Put(leaf, d)
	}
	return d, nil
}

// read reads rg, which must lie inside the archive, and checks that the
// RangeReader returned exactly its length.
func (r *Reader) read(ctx context.Context, what string, rg Range) ([]byte, error) {
	if rg.Offset < 0 || rg.Length < 0 || rg.Offset > r.size || rg.Length > r.size-rg.Offset {
		return nil, invalid("%s at %d+%d lies outside the archive (%d bytes)", what, rg.Offset, rg.Length, r.size)
	}
	b, err := r.src.ReadRange(ctx, rg.Offset, rg.Length)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: read %s at %d+%d: %w", what, rg.Offset, rg.Length, err)
	}
	if int64(len(b)) != rg.Length {
		return nil, invalid("read %s at %d+%d: got %d bytes", what, rg.Offset, rg.Length, len(b))
	}
	return b, nil
}

// ReadTile returns the stored bytes of tile z/x/y (still in the header's
// TileCompression), false when the archive lacks it.
func (r *Reader) ReadTile(ctx context.Context, z uint8, x, y uint32) ([]byte, bool, error) {
	rg, ok, err := r.Find(ctx, z, x, y)
	if err != nil || !ok {
		return nil, ok, err
	}
	if rg.Length > r.opts.MaxTileBytes {
		return nil, false, invalid("tile %d/%d/%d: %d bytes, more than the cap of %d", z, x, y, rg.Length, r.opts.MaxTileBytes)
	}
	b, err := r.read(ctx, "tile", rg)
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// MetadataRange is where the archive's JSON metadata is stored (Length 0
// when it has none).
func (r *Reader) MetadataRange() Range {
	return Range{Offset: int64(r.header.MetadataOffset), Length: int64(r.header.MetadataLength)}
}

// Metadata reads the archive's JSON metadata, decompressed and checked to be
// a JSON object; "{}" when the archive has none.
func (r *Reader) Metadata(ctx context.Context) ([]byte, error) {
	rg := r.MetadataRange()
	if rg.Length == 0 {
		return []byte("{}"), nil
	}
	if rg.Length > r.opts.MaxMetadataBytes {
		return nil, invalid("metadata: %d bytes, more than the cap of %d", rg.Length, r.opts.MaxMetadataBytes)
	}
	raw, err := r.read(ctx, "metadata", rg)
	if err != nil {
		return nil, err
	}
	return DecodeMetadata(raw, r.header.InternalCompression, r.opts.MaxMetadataBytes)
}

// DecodeMetadata decompresses stored metadata and checks that it is one JSON
// object.
func DecodeMetadata(raw []byte, c Compression, max int64) ([]byte, error) {
	b, err := Decompress(raw, c, max)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: metadata: %w", err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, invalid("metadata: not a JSON object")
	}
	return b, nil
}
