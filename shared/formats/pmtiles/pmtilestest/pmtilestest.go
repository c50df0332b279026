// Package pmtilestest builds small PMTiles v3 archives in memory for tests.
// Build writes them through pmwrite, the project's one PMTiles writer, so
// tests read what the upload tool writes. The kit keeps only what that
// writer must not do, each saying why: Options.Edit rewrites a header after
// the fact, the default of Options.LeafEntries cuts the small leaves tests
// need, and EncodeHeader and EncodeDirectory hand-make broken sections.
// Cross-checks against go-pmtiles live in the bench module (bench/pmcheck).
package pmtilestest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

// Options shape the archive. The zero value writes an unclustered PNG
// archive without dedup, with uncompressed directories and a root of at
// most pmtiles.RootWindow-pmtiles.HeaderLen bytes.
type Options struct {
	Clustered bool // tile data in tile-id order (else in reverse order)
	// Dedup stores identical tiles once and joins consecutive tile ids with
	// identical bytes into one run-length entry.
	Dedup               bool
	InternalCompression pmtiles.Compression // none (the zero value), gzip, brotli or zstd
	TileCompression     pmtiles.Compression // recorded in the header; tiles are stored as given
	TileType            pmtiles.TileType    // default PNG
	Metadata            any                 // JSON-encoded into the metadata section; nil writes {}
	// MaxRootBytes is the stored size the root directory may have before
	// the entries move to leaf directories; default RootWindow - HeaderLen.
	MaxRootBytes int
	// LeafEntries is the number of entries per leaf directory when leaves
	// are needed; default the smallest power of two from 16 that lets the
	// root fit. (pmwrite's own sizing starts at 4096 entries a leaf, as
	// go-pmtiles does, so a test archive would get one leaf; tests want
	// several.)
	LeafEntries int
	// Edit, when set, changes the header after the archive is written, for
	// tests of what a reader makes of headers no writer would write (the
	// archive's sections are not moved to match).
	Edit func(*pmtiles.Header)
}

// Build writes an archive of tiles (at least one: the format has no empty
// directory; an empty tile is left out, as pmwrite leaves it). It panics on
// a tile outside its zoom's grid or zoom above pmtiles.MaxZoom (test input,
// not outside input).
func Build(tiles map[pmtiles.ZXY][]byte, o Options) []byte {
	opts := pmwrite.Options{
		TileType:            cmp.Or(o.TileType, pmtiles.TileTypePNG),
		TileCompression:     o.TileCompression,
		InternalCompression: cmp.Or(o.InternalCompression, pmtiles.CompressionNone),
		// The whole Web Mercator square, centred at the lowest zoom, as
		// tests of TileJSON expect, whatever the tiles cover.
		Bounds:          &[4]float64{-180, -85.0511287, 180, 85.0511287},
		Center:          &[3]float64{0, 0, -1},
		Unclustered:     !o.Clustered,
		NoDeduplication: !o.Dedup,
		MaxRootBytes:    o.MaxRootBytes,
		LeafEntries:     o.LeafEntries,
	}
	if o.Metadata != nil {
		j, err := json.Marshal(o.Metadata)
		if err != nil {
			panic(fmt.Sprintf("pmtilestest: metadata: %v", err))
		}
		opts.Metadata = j
	}
	// In tile-id order, or the reverse: unclustered, pmwrite lays the data
	// out in the order added.
	ids := make([]pmtiles.ZXY, 0, len(tiles))
	for t := range tiles {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, func(a, b pmtiles.ZXY) int { return cmp.Compare(id(a), id(b)) })
	if !o.Clustered {
		slices.Reverse(ids)
	}
	if o.LeafEntries > 0 {
		b, err := write(ids, tiles, opts)
		if err != nil {
			panic(err)
		}
		return edit(b, o.Edit)
	}
	// pmwrite moves entries to leaves only past the root's limit, so a
	// small archive still gets a root alone.
	limit := uint64(cmp.Or(o.MaxRootBytes, pmtiles.RootWindow-pmtiles.HeaderLen))
	for size := 16; ; size *= 2 {
		opts.LeafEntries = size
		b, err := write(ids, tiles, opts)
		if err == nil {
			if h, _ := pmtiles.ParseHeader(b); h.RootLength <= limit {
				return edit(b, o.Edit)
			}
		}
		if size >= len(ids) {
			panic(fmt.Sprintf("pmtilestest: no leaf size keeps the root within %d bytes: %v", limit, err))
		}
	}
}

// id is t's tile id; it panics on a tile outside its grid.
func id(t pmtiles.ZXY) uint64 {
	id, err := t.ID()
	if err != nil {
		panic(fmt.Sprintf("pmtilestest: %v", err))
	}
	return id
}

// write adds tiles in the order of ids to a pmwrite.Writer and returns the
// archive. It panics on a tile pmwrite refuses; the error is an option
// that cannot make an archive (leaves too small for the root's window).
func write(ids []pmtiles.ZXY, tiles map[pmtiles.ZXY][]byte, opts pmwrite.Options) ([]byte, error) {
	w, err := pmwrite.New("")
	if err != nil {
		panic(err)
	}
	defer w.Close()
	for _, t := range ids {
		if err := w.Add(t.Z, t.X, t.Y, tiles[t]); err != nil {
			panic(fmt.Sprintf("pmtilestest: %v", err))
		}
	}
	var out bytes.Buffer
	if _, err := w.Finish(&out, opts); err != nil {
		return nil, fmt.Errorf("pmtilestest: %w", err)
	}
	return out.Bytes(), nil
}

// edit applies f to the archive's header in place.
func edit(b []byte, f func(*pmtiles.Header)) []byte {
	if f == nil {
		return b
	}
	h, err := pmtiles.ParseHeader(b)
	if err != nil {
		panic(fmt.Sprintf("pmtilestest: %v", err))
	}
	f(&h)
	copy(b, EncodeHeader(h))
	return b
}

// EncodeHeader is the 127-byte encoding of h (pmtiles.AppendHeader), for
// hand-made archives no writer would write.
func EncodeHeader(h pmtiles.Header) []byte { return pmtiles.AppendHeader(nil, h) }

// EncodeDirectory is the uncompressed encoding of entries (sorted by
// TileID), with contiguous offsets written as 0 (pmtiles.AppendDirectory),
// for hand-made directories no writer would write (cycles, overlaps).
func EncodeDirectory(entries []pmtiles.Entry) []byte { return pmtiles.AppendDirectory(nil, entries) }

// Compress compresses b with c (none, gzip, brotli or zstd) as pmwrite
// compresses an archive's sections, for metadata and tiles of tests. It
// panics on another compression.
func Compress(b []byte, c pmtiles.Compression) []byte {
	out, err := pmwrite.Compress(b, c)
	if err != nil {
		panic(fmt.Sprintf("pmtilestest: %v", err))
	}
	return out
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
