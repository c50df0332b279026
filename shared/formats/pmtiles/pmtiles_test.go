package pmtiles_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
)

func TestZXYToIDSpecTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		z    uint8
		x, y uint32
		id   uint64
	}{
		{0, 0, 0, 0}, {1, 0, 0, 1}, {1, 0, 1, 2}, {1, 1, 1, 3}, {1, 1, 0, 4}, {2, 0, 0, 5},
		{12, 3423, 1763, 19078479},
	} {
		t.Run(fmt.Sprintf("%d/%d/%d", c.z, c.x, c.y), func(t *testing.T) {
			got, err := pmtiles.ZXYToID(c.z, c.x, c.y)
			if err != nil || got != c.id {
				t.Errorf("ZXYToID: got %v, %v, want %v", got, err, c.id)
			}
			back, err := pmtiles.IDToZXY(c.id)
			if want := (pmtiles.ZXY{Z: c.z, X: c.x, Y: c.y}); err != nil || back != want {
				t.Errorf("IDToZXY: got %v, %v, want %v", back, err, want)
			}
		})
	}
}

func TestHilbertRoundTrip(t *testing.T) {
	t.Parallel()
	// Every tile of zooms 0-6 gets a distinct, consecutive id.
	var next uint64
	for z := uint8(0); z <= 6; z++ {
		seen := map[uint64]bool{}
		for x := range uint32(1) << z {
			for y := range uint32(1) << z {
				id, err := pmtiles.ZXYToID(z, x, y)
				if err != nil {
					t.Fatal(err)
				}
				if seen[id] || id < next || id >= next+uint64(1)<<(2*z) {
					t.Fatalf("%d/%d/%d: id %d repeated or outside zoom %d", z, x, y, id, z)
				}
				seen[id] = true
			}
		}
		next += uint64(1) << (2 * z)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		z := uint8(rng.IntN(pmtiles.MaxZoom + 1))
		n := uint64(1) << z
		tl := pmtiles.ZXY{Z: z, X: uint32(rng.Uint64N(n)), Y: uint32(rng.Uint64N(n))}
		id, err := tl.ID()
		if err != nil {
			t.Fatal(err)
		}
		back, err := pmtiles.IDToZXY(id)
		if err != nil || back != tl {
			t.Fatalf("IDToZXY(ZXYToID(%v)): got %v, %v", tl, back, err)
		}
	}
}

func TestHilbertLimits(t *testing.T) {
	t.Parallel()
	last, err := pmtiles.ZXYToID(31, 1<<31-1, 0) // the last tile of zoom 31 on the curve
	if err != nil {
		t.Fatal(err)
	}
	if got, err := pmtiles.IDToZXY(last); err != nil || got.Z != 31 {
		t.Errorf("IDToZXY(%d): got %v, %v, want zoom 31", last, got, err)
	}
	for _, c := range []struct {
		name string
		z    uint8
		x, y uint32
	}{{"zoom 32", 32, 0, 0}, {"x outside", 3, 8, 0}, {"y outside", 3, 0, 8}, {"zoom 0 x 1", 0, 1, 0}} {
		t.Run(c.name, func(t *testing.T) {
			if id, err := pmtiles.ZXYToID(c.z, c.x, c.y); err == nil {
				t.Errorf("got id %d, want an error", id)
			}
		})
	}
	var zoom32 uint64 = (1<<62 - 1) / 3 * 4 // ids from here on would need zoom 32
	zoom32 = ((1 << 62) - 1) / 3
	zoom32 += 1 << 62
	if got, err := pmtiles.IDToZXY(zoom32); err == nil {
		t.Errorf("IDToZXY(%d): got %v, want an error", zoom32, got)
	}
	if got, err := pmtiles.IDToZXY(zoom32 - 1); err != nil || got.Z != 31 {
		t.Errorf("IDToZXY(%d): got %v, %v, want zoom 31", zoom32-1, got, err)
	}
}

func sampleHeader() pmtiles.Header {
	return pmtiles.Header{
		SpecVersion: 3, RootOffset: 127, RootLength: 10, MetadataOffset: 137, MetadataLength: 20,
		LeafDirectoryOffset: 157, LeafDirectoryLength: 0, TileDataOffset: 157, TileDataLength: 100,
		AddressedTilesCount: 7, TileEntriesCount: 6, TileContentsCount: 5, Clustered: true,
		InternalCompression: pmtiles.CompressionGzip, TileCompression: pmtiles.CompressionNone, TileType: pmtiles.TileTypeWebP,
		MinZoom: 2, MaxZoom: 14, MinLonE7: -1234567890, MinLatE7: -450000000, MaxLonE7: 1234567890, MaxLatE7: 450000001,
		CenterZoom: 5, CenterLonE7: 133713370, CenterLatE7: -4242,
	}
}

func TestParseHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	h := sampleHeader()
	got, err := pmtiles.ParseHeader(pmtilestest.EncodeHeader(h))
	if err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Errorf("got %+v, want %+v", got, h)
	}
	if err := got.Validate(257); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if b, want := got.Bounds(), [4]float64{-123.456789, -45, 123.456789, 45.0000001}; b != want {
		t.Errorf("Bounds: got %v, want %v", b, want)
	}
	if c, want := got.Center(), [3]float64{13.371337, -0.0004242, 5}; c != want {
		t.Errorf("Center: got %v, want %v", c, want)
	}
}

func TestParseHeaderRefuses(t *testing.T) {
	t.Parallel()
	good := pmtilestest.EncodeHeader(sampleHeader())
	edit := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:126], pmtiles.ErrInvalid},
		{"magic", edit(func(b []byte) { b[0] = 'p' }), pmtiles.ErrInvalid},
		{"version 2", edit(func(b []byte) { b[7] = 2 }), pmtiles.ErrUnsupported},
		{"clustered 2", edit(func(b []byte) { b[96] = 2 }), pmtiles.ErrInvalid},
		{"min zoom above max", edit(func(b []byte) { b[100] = 15 }), pmtiles.ErrInvalid},
		{"max zoom 32", edit(func(b []byte) { b[101] = 32 }), pmtiles.ErrInvalid},
		{"tile data overflows", edit(func(b []byte) { binary.LittleEndian.PutUint64(b[64:], ^uint64(0)) }), pmtiles.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pmtiles.ParseHeader(c.b)
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "pmtiles: ") {
				t.Errorf("error %q does not name the package", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		edit func(*pmtiles.Header)
		size int64
		ok   bool
	}{
		{"fits", func(*pmtiles.Header) {}, 257, true},
		{"archive too short for tile data", func(*pmtiles.Header) {}, 256, false},
		{"shorter than a header", func(*pmtiles.Header) {}, 100, false},
		{"root inside the header", func(h *pmtiles.Header) { h.RootOffset = 0 }, 257, false},
		{"empty root", func(h *pmtiles.Header) { h.RootLength = 0 }, 257, false},
		{"root past 16 KiB", func(h *pmtiles.Header) { h.RootLength = 16384 }, 1 << 20, false},
		{"metadata outside", func(h *pmtiles.Header) { h.MetadataOffset = 1 << 40 }, 257, false},
		{"empty section anywhere", func(h *pmtiles.Header) { h.LeafDirectoryOffset = 1 << 50 }, 257, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := sampleHeader()
			c.edit(&h)
			err := h.Validate(c.size)
			if (err == nil) != c.ok || (err != nil && !errors.Is(err, pmtiles.ErrInvalid)) {
				t.Errorf("got %v, want ok=%v", err, c.ok)
			}
		})
	}
}

func uvarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func TestParseDirectory(t *testing.T) {
	t.Parallel()
	entries := []pmtiles.Entry{
		{TileID: 0, Offset: 0, Length: 10, RunLength: 1},
		{TileID: 1, Offset: 10, Length: 5, RunLength: 3}, // contiguous: encoded as 0
		{TileID: 9, Offset: 0, Length: 10, RunLength: 1}, // dedup: points back
		{TileID: 300, Offset: 1 << 40, Length: 1 << 31, RunLength: 0},
	}
	got, err := pmtiles.ParseDirectory(pmtilestest.EncodeDirectory(entries))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(entries) {
		t.Errorf("got %v, want %v", got, entries)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"no entries", uvarints(0)},
		{"count beyond the bytes", uvarints(1000, 1, 1, 1, 1)},
		{"truncated", uvarints(2, 0, 1, 1, 1, 5, 5, 1)},
		{"repeated id", uvarints(2, 0, 0, 1, 1, 5, 5, 1, 0)},
		{"zero length", uvarints(1, 0, 1, 0, 1)},
		{"length past 32 bits", uvarints(1, 0, 1, 1<<32, 1)},
		{"run length past 32 bits", uvarints(1, 0, 1<<32, 1, 1)},
		{"first offset contiguous", uvarints(1, 0, 1, 1, 0)},
		{"id overflows", uvarints(2, 1<<63, 1<<63, 1, 1, 1, 1, 1, 1)},
		{"offset overflows", uvarints(2, 0, 1, 1, 1, 100, 1, ^uint64(0), 0)},
		{"trailing bytes", append(uvarints(1, 0, 1, 1, 1), 7)},
		{"varint past 64 bits", append(uvarints(1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1, 1, 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := pmtiles.ParseDirectory(c.b)
			if !errors.Is(err, pmtiles.ErrInvalid) {
				t.Errorf("got %v, %v, want %v", got, err, pmtiles.ErrInvalid)
			}
		})
	}
}

func TestFindTile(t *testing.T) {
	t.Parallel()
	dir := []pmtiles.Entry{
		{TileID: 5, Length: 1, RunLength: 1},
		{TileID: 10, Length: 1, RunLength: 3},
		{TileID: 20, Length: 1, RunLength: 0},
	}
	for _, c := range []struct {
		id     uint64
		found  bool
		tileID uint64
	}{{0, false, 0}, {5, true, 5}, {6, false, 0}, {10, true, 10}, {12, true, 10}, {13, false, 0}, {20, true, 20}, {1 << 60, true, 20}} {
		t.Run(fmt.Sprint(c.id), func(t *testing.T) {
			e, ok := pmtiles.FindTile(dir, c.id)
			if ok != c.found || (ok && e.TileID != c.tileID) {
				t.Errorf("got %v, %v, want found=%v at %d", e, ok, c.found, c.tileID)
			}
		})
	}
	if _, ok := pmtiles.FindTile(nil, 0); ok {
		t.Errorf("empty directory: got found, want not")
	}
}

// archive is a RangeReader over bytes that counts its reads.
type archive struct {
	b     []byte
	reads atomic.Int64
}

func (a *archive) ReadRange(_ context.Context, off, n int64) ([]byte, error) {
	a.reads.Add(1)
	if off < 0 || n < 0 || off+n > int64(len(a.b)) {
		return nil, fmt.Errorf("test archive: range %d+%d outside %d bytes", off, n, len(a.b))
	}
	return a.b[off : off+n], nil
}

// mapCache is a LeafCache that counts its hits.
type mapCache struct {
	mu   sync.Mutex // guards m
	m    map[pmtiles.Range][]pmtiles.Entry
	hits atomic.Int64
}

func (c *mapCache) Get(r pmtiles.Range) ([]pmtiles.Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[r]
	if ok {
		c.hits.Add(1)
	}
	return d, ok
}

func (c *mapCache) Put(r pmtiles.Range, d []pmtiles.Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[r] = d
}

// pyramid is every tile of zooms 0..maxZoom; with dups, runs of identical
// bodies so dedup and run lengths have work.
func pyramid(maxZoom uint8, dups bool) map[pmtiles.ZXY][]byte {
	tiles := map[pmtiles.ZXY][]byte{}
	for z := uint8(0); z <= maxZoom; z++ {
		for x := range uint32(1) << z {
			for y := range uint32(1) << z {
				body := fmt.Sprintf("tile %d/%d/%d", z, x, y)
				if dups && (x+y)%3 == 0 {
					body = "ocean"
				}
				tiles[pmtiles.ZXY{Z: z, X: x, Y: y}] = []byte(body)
			}
		}
	}
	return tiles
}

func TestReaderReadsEveryTile(t *testing.T) {
	t.Parallel()
	tiles := pyramid(6, true)
	for _, c := range []struct {
		name   string
		opts   pmtilestest.Options
		leaves bool
	}{
		// 5,461 uncompressed entries outgrow the 16 KiB root by themselves.
		{"clustered", pmtilestest.Options{Clustered: true}, true},
		{"unclustered", pmtilestest.Options{}, true},
		{"clustered dedup gzip", pmtilestest.Options{Clustered: true, Dedup: true, InternalCompression: pmtiles.CompressionGzip}, false},
		{"clustered leaves", pmtilestest.Options{Clustered: true, MaxRootBytes: 200}, true},
		{"unclustered dedup gzip leaves", pmtilestest.Options{Dedup: true, InternalCompression: pmtiles.CompressionGzip, MaxRootBytes: 100}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := &archive{b: pmtilestest.Build(tiles, c.opts)}
			cache := &mapCache{m: map[pmtiles.Range][]pmtiles.Entry{}}
			r, err := pmtiles.Open(context.Background(), a, int64(len(a.b)), pmtiles.Options{Leaves: cache})
			if err != nil {
				t.Fatal(err)
			}
			if h := r.Header(); (h.LeafDirectoryLength > 0) != c.leaves || h.MaxZoom != 6 || h.Clustered != c.opts.Clustered {
				t.Fatalf("header %+v: want leaves=%v, max zoom 6, clustered=%v", h, c.leaves, c.opts.Clustered)
			}
			if got := a.reads.Load(); got != 1 {
				t.Errorf("Open: got %d reads, want 1", got)
			}
			for tl, want := range tiles {
				got, ok, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y)
				if err != nil || !ok || !bytes.Equal(got, want) {
					t.Fatalf("tile %v: got %q, %v, %v, want %q", tl, got, ok, err, want)
				}
			}
			if c.leaves && cache.hits.Load() == 0 {
				t.Errorf("leaf cache: no hits after reading %d tiles", len(tiles))
			}
			for _, tl := range []pmtiles.ZXY{{Z: 7}, {Z: 12, X: 5, Y: 9}, {Z: 31, X: 1}} {
				if b, ok, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y); ok || err != nil {
					t.Errorf("absent tile %v: got %q, %v, %v, want not found", tl, b, ok, err)
				}
			}
		})
	}
}

func TestReaderAbsentTilesInsideTheRange(t *testing.T) {
	t.Parallel()
	tiles := map[pmtiles.ZXY][]byte{{Z: 0}: []byte("root"), {Z: 2, X: 1, Y: 1}: []byte("one"), {Z: 2, X: 3, Y: 3}: []byte("two")}
	a := &archive{b: pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true})}
	r, err := pmtiles.Open(context.Background(), a, int64(len(a.b)), pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range []pmtiles.ZXY{{Z: 1}, {Z: 2}, {Z: 2, X: 3, Y: 2}} {
		if _, ok, err := r.Find(context.Background(), tl.Z, tl.X, tl.Y); ok || err != nil {
			t.Errorf("%v: got %v, %v, want not found", tl, ok, err)
		}
	}
}

// withRoot replaces an archive's root directory (which must keep its size)
// and header fields, for hand-made corruption.
func corrupt(t *testing.T, b []byte, edit func(h *pmtiles.Header, rest []byte)) []byte {
	t.Helper()
	b = bytes.Clone(b)
	h, err := pmtiles.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	edit(&h, b[pmtiles.HeaderLen:])
	copy(b, pmtilestest.EncodeHeader(h))
	return b
}

func TestReaderRefusesBadArchives(t *testing.T) {
	t.Parallel()
	tiles := pyramid(4, false)
	leafy := pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true, MaxRootBytes: 40, LeafEntries: 64})
	flat := pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true})

	cycle := cycleArchive()

	for _, c := range []struct {
		name    string
		b       []byte
		openErr bool
		want    error
	}{
		// The root's entries are checked against their sections at Open.
		{"leaf section shrunk under its leaves", corrupt(t, leafy, func(h *pmtiles.Header, _ []byte) { h.LeafDirectoryLength = 3 }), true, pmtiles.ErrInvalid},
		{"tile section shrunk under its tiles", corrupt(t, flat, func(h *pmtiles.Header, _ []byte) { h.TileDataLength = 10 }), true, pmtiles.ErrInvalid},
		{"cycle", cycle, false, pmtiles.ErrInvalid},
		{"brotli claimed, none stored", corrupt(t, flat, func(h *pmtiles.Header, _ []byte) { h.InternalCompression = pmtiles.CompressionBrotli }), true, pmtiles.ErrInvalid},
		{"zstd claimed, none stored", corrupt(t, flat, func(h *pmtiles.Header, _ []byte) { h.InternalCompression = pmtiles.CompressionZstd }), true, pmtiles.ErrInvalid},
		{"unknown directory compression", corrupt(t, flat, func(h *pmtiles.Header, _ []byte) { h.InternalCompression = 9 }), true, pmtiles.ErrUnsupported},
		{"gzip claimed, none stored", corrupt(t, flat, func(h *pmtiles.Header, _ []byte) { h.InternalCompression = pmtiles.CompressionGzip }), true, pmtiles.ErrInvalid},
		{"root garbage", corrupt(t, flat, func(_ *pmtiles.Header, rest []byte) { rest[0] = 0xff; rest[1] = 0xff }), true, pmtiles.ErrInvalid},
		{"truncated archive", flat[:len(flat)-1], true, pmtiles.ErrInvalid},
		{"not an archive", []byte(strings.Repeat("<html>", 40)), true, pmtiles.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := &archive{b: c.b}
			r, err := pmtiles.Open(context.Background(), a, int64(len(c.b)), pmtiles.Options{})
			if c.openErr {
				if !errors.Is(err, c.want) {
					t.Errorf("Open: got %v, want %v", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			var firstErr error
			for tl := range tiles {
				if _, _, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y); err != nil {
					firstErr = err
					break
				}
			}
			t.Logf("ReadTile: %v", firstErr)
			if !errors.Is(firstErr, c.want) {
				t.Errorf("ReadTile: got %v, want %v", firstErr, c.want)
			}
			if n := a.reads.Load(); n > int64(len(tiles))*int64(pmtiles.DefaultMaxDepth) {
				t.Errorf("%d reads: unbounded", n)
			}
		})
	}
}

func TestReaderCaps(t *testing.T) {
	t.Parallel()
	tiles := pyramid(4, false)
	tiles[pmtiles.ZXY{Z: 4, X: 1, Y: 1}] = bytes.Repeat([]byte("x"), 5000)
	b := pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true, MaxRootBytes: 40, LeafEntries: 64, Metadata: map[string]any{"name": strings.Repeat("n", 3000)}})
	a := &archive{b: b}
	r, err := pmtiles.Open(context.Background(), a, int64(len(b)), pmtiles.Options{MaxTileBytes: 4096, MaxDirectoryBytes: 100, MaxMetadataBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ReadTile(context.Background(), 4, 1, 1); !errors.Is(err, pmtiles.ErrInvalid) {
		t.Errorf("big tile: got %v, want %v", err, pmtiles.ErrInvalid)
	}
	if _, err := r.Metadata(context.Background()); !errors.Is(err, pmtiles.ErrInvalid) {
		t.Errorf("big metadata: got %v, want %v", err, pmtiles.ErrInvalid)
	}
	if _, _, err := r.ReadTile(context.Background(), 4, 15, 15); !errors.Is(err, pmtiles.ErrInvalid) {
		t.Errorf("big leaf: got %v, want %v", err, pmtiles.ErrInvalid)
	}
}

func TestReaderWrapsReadErrors(t *testing.T) {
	t.Parallel()
	b := pmtilestest.Build(pyramid(4, false), pmtilestest.Options{Clustered: true, MaxRootBytes: 40, LeafEntries: 64})
	errChanged := errors.New("precondition failed")
	fail := false
	src := pmtiles.RangeReaderFunc(func(_ context.Context, off, n int64) ([]byte, error) {
		if fail {
			return nil, errChanged
		}
		return b[off : off+n], nil
	})
	r, err := pmtiles.Open(context.Background(), src, int64(len(b)), pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fail = true
	_, _, err = r.ReadTile(context.Background(), 4, 3, 3)
	if !errors.Is(err, errChanged) || errors.Is(err, pmtiles.ErrInvalid) {
		t.Errorf("got %v, want it to wrap %v only", err, errChanged)
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	tiles := pyramid(1, false)
	for _, c := range []struct {
		name string
		opts pmtilestest.Options
		want string
	}{
		{"none", pmtilestest.Options{}, "{}"},
		{"plain", pmtilestest.Options{Metadata: map[string]any{"name": "n"}}, `{"name":"n"}`},
		{"gzip", pmtilestest.Options{Metadata: map[string]any{"name": "g"}, InternalCompression: pmtiles.CompressionGzip}, `{"name":"g"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := pmtilestest.Build(tiles, c.opts)
			r, err := pmtiles.Open(context.Background(), &archive{b: b}, int64(len(b)), pmtiles.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Metadata(context.Background())
			if err != nil || string(got) != c.want {
				t.Errorf("got %s, %v, want %s", got, err, c.want)
			}
		})
	}
	array := pmtilestest.Compress([]byte(`[1,2]`), pmtiles.CompressionGzip)
	if _, err := pmtiles.DecodeMetadata(array, pmtiles.CompressionGzip, 100); !errors.Is(err, pmtiles.ErrInvalid) {
		t.Errorf("array metadata: got %v, want %v", err, pmtiles.ErrInvalid)
	}
	bomb := pmtilestest.Compress(make([]byte, 1<<20), pmtiles.CompressionGzip)
	if _, err := pmtiles.DecodeMetadata(bomb, pmtiles.CompressionGzip, 1000); !errors.Is(err, pmtiles.ErrInvalid) {
		t.Errorf("gzip bomb: got %v, want %v", err, pmtiles.ErrInvalid)
	}
}

func TestEnumNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    fmt.Stringer
		want string
	}{
		{pmtiles.CompressionUnknown, "unknown"},
		{pmtiles.CompressionBrotli, "br"},
		{pmtiles.CompressionZstd, "zstd"},
		{pmtiles.Compression(5), "compression(5)"},
		{pmtiles.TileTypeMVT, "mvt"},
		{pmtiles.TileTypeMLT, "mlt"},
		{pmtiles.TileType(7), "tiletype(7)"},
		{pmtiles.TileType(255), "tiletype(255)"},
	} {
		t.Run(c.want, func(t *testing.T) {
			if got := c.v.String(); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestTileTypes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tt         pmtiles.TileType
		ext, ctype string
		vector     bool
	}{
		{pmtiles.TileTypeMVT, "pbf", "application/vnd.mapbox-vector-tile", true},
		{pmtiles.TileTypePNG, "png", "image/png", false},
		{pmtiles.TileTypeJPEG, "jpg", "image/jpeg", false},
		{pmtiles.TileTypeWebP, "webp", "image/webp", false},
		{pmtiles.TileTypeAVIF, "avif", "image/avif", false},
		{pmtiles.TileTypeUnknown, "", "application/octet-stream", false},
	} {
		t.Run(c.tt.String(), func(t *testing.T) {
			if got := c.tt.Ext(); got != c.ext {
				t.Errorf("Ext: got %v, want %v", got, c.ext)
			}
			if got := c.tt.ContentType(); got != c.ctype {
				t.Errorf("ContentType: got %v, want %v", got, c.ctype)
			}
			if got := c.tt.Vector(); got != c.vector {
				t.Errorf("Vector: got %v, want %v", got, c.vector)
			}
		})
	}
	if got := pmtiles.CompressionGzip.ContentEncoding(); got != "gzip" {
		t.Errorf("gzip ContentEncoding: got %v, want gzip", got)
	}
	if got := pmtiles.CompressionNone.ContentEncoding(); got != "" {
		t.Errorf("none ContentEncoding: got %q, want empty", got)
	}
}

// cycleArchive is an archive whose root's one leaf entry points at the root
// itself, placed as the leaf section: a cycle.
func cycleArchive() []byte {
	root := pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Offset: 0, Length: 1}})
	root = pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Offset: 0, Length: uint32(len(root))}})
	return append(pmtilestest.EncodeHeader(pmtiles.Header{
		SpecVersion: 3, RootOffset: 127, RootLength: uint64(len(root)),
		LeafDirectoryOffset: 127, LeafDirectoryLength: uint64(len(root)),
		InternalCompression: pmtiles.CompressionNone, TileType: pmtiles.TileTypePNG, MaxZoom: 5,
	}), root...)
}

// nestedArchive holds tile 0/0/0 ("abc") behind two levels of leaves: the
// root points at leaf 1, leaf 1 at leaf 2, leaf 2 at the tile.
func nestedArchive() []byte {
	leaf2 := pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Offset: 0, Length: 3, RunLength: 1}})
	leaf1 := pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Offset: 0, Length: uint32(len(leaf2))}})
	root := pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Offset: uint64(len(leaf2)), Length: uint32(len(leaf1))}})
	h := pmtiles.Header{SpecVersion: 3, RootOffset: 127, RootLength: uint64(len(root)),
		InternalCompression: pmtiles.CompressionNone, TileType: pmtiles.TileTypePNG}
	h.MetadataOffset = h.RootOffset + h.RootLength
	h.LeafDirectoryOffset = h.MetadataOffset
	h.LeafDirectoryLength = uint64(len(leaf2) + len(leaf1))
	h.TileDataOffset = h.LeafDirectoryOffset + h.LeafDirectoryLength
	h.TileDataLength = 3
	b := pmtilestest.EncodeHeader(h)
	for _, p := range [][]byte{root, leaf2, leaf1, []byte("abc")} {
		b = append(b, p...)
	}
	return b
}

func TestReaderDepthLimit(t *testing.T) {
	t.Parallel()
	b := nestedArchive()
	for _, c := range []struct {
		depth int
		ok    bool
	}{{3, true}, {2, false}, {0, true}} { // 0: the default, 4
		t.Run(fmt.Sprint(c.depth), func(t *testing.T) {
			a := &archive{b: b}
			r, err := pmtiles.Open(context.Background(), a, int64(len(b)), pmtiles.Options{MaxDepth: c.depth})
			if err != nil {
				t.Fatal(err)
			}
			got, found, err := r.ReadTile(context.Background(), 0, 0, 0)
			if c.ok && (err != nil || !found || string(got) != "abc") {
				t.Errorf("got %q, %v, %v, want abc", got, found, err)
			}
			if !c.ok && !errors.Is(err, pmtiles.ErrInvalid) {
				t.Errorf("got %q, %v, %v, want %v", got, found, err, pmtiles.ErrInvalid)
			}
		})
	}
}

func TestReaderAtStagedFile(t *testing.T) {
	t.Parallel()
	tiles := pyramid(5, true)
	path := filepath.Join(t.TempDir(), "a.pmtiles")
	if err := os.WriteFile(path, pmtilestest.Build(tiles, pmtilestest.Options{Dedup: true, InternalCompression: pmtiles.CompressionGzip, MaxRootBytes: 200}), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(f), st.Size(), pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for tl, want := range tiles {
		if got, ok, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y); err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("tile %v: got %q, %v, %v, want %q", tl, got, ok, err, want)
		}
	}
	// A file shorter than the size the caller claims: the read error, not a
	// short tile.
	r, err = pmtiles.Open(context.Background(), pmtiles.ReaderAt(f), st.Size()+100, pmtiles.Options{})
	if err == nil {
		_, _, err = r.ReadTile(context.Background(), 5, 31, 31)
	}
	if err == nil {
		t.Errorf("size past the file's end: got no error")
	}
}
