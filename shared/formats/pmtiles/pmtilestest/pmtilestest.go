// Package pmtilestest writes small PMTiles v3 archives for tests, so tests
// of the product module can build archives without another module's writer:
// clustered or not, with run-length dedup, directories compressed with any
// of the format's compressions, and leaf directories once the root would
// grow past a size. It writes what the spec
// allows, not what any one tool writes; cross-checks against go-pmtiles'
// writer live in the bench module.
package pmtilestest

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// Options shape the archive. The zero value writes a clustered PNG archive
// without dedup, with uncompressed directories and a root of at most
// pmtiles.RootWindow-pmtiles.HeaderLen bytes.
type Options struct {
	Clustered bool // tile data in tile-id order (else in reverse order)
	// Dedup stores identical tiles once and joins consecutive tile ids with
	// identical bytes into one run-length entry.
	Dedup               bool
	InternalCompression pmtiles.Compression // none (the zero value), gzip, brotli or zstd
	TileCompression     pmtiles.Compression // recorded in the header; tiles are stored as given
	TileType            pmtiles.TileType    // default PNG
	Metadata            any                 // JSON-encoded into the metadata section; nil writes none
	// MaxRootBytes is the stored size the root directory may have before
	// the entries move to leaf directories; default RootWindow - HeaderLen.
	MaxRootBytes int
	// LeafEntries is the number of entries per leaf directory when leaves
	// are needed; default the smallest power of two from 16 that lets the
	// root fit.
	LeafEntries int
	// Edit, when set, changes the header (bounds, center, counts) before it
	// is written.
	Edit func(*pmtiles.Header)
}

// Build writes an archive of tiles (at least one: the format has no empty
// directory). It panics on a tile outside its zoom's
// grid or zoom above pmtiles.MaxZoom (test input, not outside input).
func Build(tiles map[pmtiles.ZXY][]byte, o Options) []byte {
	if o.TileType == pmtiles.TileTypeUnknown {
		o.TileType = pmtiles.TileTypePNG
	}
	if o.InternalCompression == pmtiles.CompressionUnknown {
		o.InternalCompression = pmtiles.CompressionNone
	}
	if o.TileCompression == pmtiles.CompressionUnknown {
		o.TileCompression = pmtiles.CompressionNone
	}
	if o.MaxRootBytes == 0 {
		o.MaxRootBytes = pmtiles.RootWindow - pmtiles.HeaderLen
	}
	type idTile struct {
		id   uint64
		body []byte
	}
	ids := make([]idTile, 0, len(tiles))
	minZ, maxZ := uint8(pmtiles.MaxZoom), uint8(0)
	for t, b := range tiles {
		id, err := t.ID()
		if err != nil {
			panic(fmt.Sprintf("pmtilestest: %v", err))
		}
		ids = append(ids, idTile{id, b})
		minZ, maxZ = min(minZ, t.Z), max(maxZ, t.Z)
	}
	if len(ids) == 0 {
		minZ = 0
	}
	slices.SortFunc(ids, func(a, b idTile) int { return cmp.Compare(a.id, b.id) })

	// Lay out tile data: in id order when clustered, else reversed.
	order := slices.Clone(ids)
	if !o.Clustered {
		slices.Reverse(order)
	}
	var data bytes.Buffer
	offsets := make(map[uint64]uint64, len(ids)) // tile id → offset
	seen := map[string]uint64{}                  // body → offset, with Dedup
	contents := 0
	for _, it := range order {
		if o.Dedup {
			if off, ok := seen[string(it.body)]; ok {
				offsets[it.id] = off
				continue
			}
			seen[string(it.body)] = uint64(data.Len())
		}
		offsets[it.id] = uint64(data.Len())
		data.Write(it.body)
		contents++
	}

	var entries []pmtiles.Entry
	for _, it := range ids {
		if n := len(entries); o.Dedup && n > 0 {
			last := &entries[n-1]
			if last.TileID+uint64(last.RunLength) == it.id && offsets[it.id] == last.Offset && uint64(len(it.body)) == uint64(last.Length) {
				last.RunLength++
				continue
			}
		}
		entries = append(entries, pmtiles.Entry{TileID: it.id, Offset: offsets[it.id], Length: uint32(len(it.body)), RunLength: 1})
	}

	root, leaves := directories(entries, o)
	var meta []byte
	if o.Metadata != nil {
		j, err := json.Marshal(o.Metadata)
		if err != nil {
			panic(fmt.Sprintf("pmtilestest: metadata: %v", err))
		}
		meta = compress(j, o.InternalCompression)
	}
	h := pmtiles.Header{
		SpecVersion:         3,
		RootOffset:          pmtiles.HeaderLen,
		RootLength:          uint64(len(root)),
		AddressedTilesCount: uint64(len(ids)),
		TileEntriesCount:    uint64(len(entries)),
		TileContentsCount:   uint64(contents),
		Clustered:           o.Clustered,
		InternalCompression: o.InternalCompression,
		TileCompression:     o.TileCompression,
		TileType:            o.TileType,
		MinZoom:             minZ,
		MaxZoom:             maxZ,
		MinLonE7:            -1800000000,
		MinLatE7:            -850511287,
		MaxLonE7:            1800000000,
		MaxLatE7:            850511287,
		CenterZoom:          minZ,
	}
	h.MetadataOffset = h.RootOffset + h.RootLength
	h.MetadataLength = uint64(len(meta))
	h.LeafDirectoryOffset = h.MetadataOffset + h.MetadataLength
	h.LeafDirectoryLength = uint64(len(leaves))
	h.TileDataOffset = h.LeafDirectoryOffset + h.LeafDirectoryLength
	h.TileDataLength = uint64(data.Len())
	if o.Edit != nil {
		o.Edit(&h)
	}
	out := EncodeHeader(h)
	for _, b := range [][]byte{root, meta, leaves, data.Bytes()} {
		out = append(out, b...)
	}
	return out
}

// directories encodes entries as one root, or as a root of leaf pointers and
// the leaves, whichever keeps the root within o.MaxRootBytes.
func directories(entries []pmtiles.Entry, o Options) (root, leaves []byte) {
	root = compress(EncodeDirectory(entries), o.InternalCompression)
	if len(root) <= o.MaxRootBytes || len(entries) == 0 {
		return root, nil
	}
	size := o.LeafEntries
	if size <= 0 {
		size = 16
	}
	for {
		var ptrs []pmtiles.Entry
		leaves = leaves[:0]
		for i := 0; i < len(entries); i += size {
			leaf := compress(EncodeDirectory(entries[i:min(i+size, len(entries))]), o.InternalCompression)
			ptrs = append(ptrs, pmtiles.Entry{TileID: entries[i].TileID, Offset: uint64(len(leaves)), Length: uint32(len(leaf))})
			leaves = append(leaves, leaf...)
		}
		root = compress(EncodeDirectory(ptrs), o.InternalCompression)
		if len(root) <= o.MaxRootBytes || o.LeafEntries > 0 {
			return root, leaves
		}
		size *= 2
	}
}

// EncodeHeader is the 127-byte encoding of h (pmtiles.AppendHeader).
func EncodeHeader(h pmtiles.Header) []byte { return pmtiles.AppendHeader(nil, h) }

// EncodeDirectory is the uncompressed encoding of entries (sorted by
// TileID), with contiguous offsets written as 0 (pmtiles.AppendDirectory).
func EncodeDirectory(entries []pmtiles.Entry) []byte { return pmtiles.AppendDirectory(nil, entries) }

func compress(b []byte, c pmtiles.Compression) []byte { return Compress(b, c) }

// Compress compresses b with c (none, gzip, brotli or zstd), for
// directories, metadata and tiles of test archives. It panics on another
// compression.
func Compress(b []byte, c pmtiles.Compression) []byte {
	var buf bytes.Buffer
	var zw io.WriteCloser
	switch c {
	case pmtiles.CompressionNone:
		return b
	case pmtiles.CompressionGzip:
		zw = gzip.NewWriter(&buf)
	case pmtiles.CompressionBrotli:
		zw = brotli.NewWriterLevel(&buf, brotli.DefaultCompression)
	case pmtiles.CompressionZstd:
		w, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			panic(err)
		}
		zw = w
	default:
		panic(fmt.Sprintf("pmtilestest: cannot write %v", c))
	}
	if _, err := zw.Write(b); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Open opens archive, held in memory, with the product's reader and default
// options; an archive that does not open fails the test.
func Open(tb testing.TB, archive []byte) *pmtiles.Reader {
	tb.Helper()
	r, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(archive)), int64(len(archive)), pmtiles.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// LeafCache keeps every decoded leaf directory (a pmtiles.Options.Leaves),
// as the tile server's directory cache does, so a test that reads every
// tile of an archive back decodes each leaf once, not once per tile.
type LeafCache struct {
	mu sync.Mutex // guards m
	m  map[pmtiles.Range][]pmtiles.Entry
}

// Get returns the leaf at r, if kept.
func (c *LeafCache) Get(r pmtiles.Range) ([]pmtiles.Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[r]
	return e, ok
}

// Put keeps the leaf at r.
func (c *LeafCache) Put(r pmtiles.Range, e []pmtiles.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[pmtiles.Range][]pmtiles.Entry{}
	}
	c.m[r] = e
}
