package pmwrite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

type tileAt struct {
	z    uint8
	x, y uint32
}

// write builds an archive of tiles (added in the order of keys) with the
// root limited to limit bytes (0: the spec's).
func write(t testing.TB, tiles map[tileAt][]byte, keys []tileAt, opts pmwrite.Options, limit int) ([]byte, pmwrite.Stats) {
	t.Helper()
	if opts.TileType == pmtiles.TileTypeUnknown {
		opts.TileType = pmtiles.TileTypePNG
	}
	if limit > 0 {
		opts.MaxRootBytes = limit
	}
	w, err := pmwrite.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := w.Add(k.z, k.x, k.y, tiles[k]); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	st, err := w.Finish(&out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != int64(out.Len()) {
		t.Fatalf("Stats.Bytes %d, wrote %d", st.Bytes, out.Len())
	}
	return out.Bytes(), st
}

// readBack checks the archive against tiles with the product's reader: every
// non-empty tile byte-identical, no other tile present.
func readBack(t testing.TB, archive []byte, tiles map[tileAt][]byte, maxZ uint8) *pmtiles.Reader {
	t.Helper()
	ctx := context.Background()
	r, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(archive)), int64(len(archive)), pmtiles.Options{Leaves: &pmtilestest.LeafCache{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	for z := uint8(0); z <= maxZ; z++ {
		for x := uint32(0); x < 1<<z; x++ {
			for y := uint32(0); y < 1<<z; y++ {
				got, ok, err := r.ReadTile(ctx, z, x, y)
				if err != nil {
					t.Fatalf("%d/%d/%d: %v", z, x, y, err)
				}
				want, has := tiles[tileAt{z, x, y}]
				has = has && len(want) > 0
				if ok != has || !bytes.Equal(got, want) {
					t.Fatalf("%d/%d/%d: got %q (%v), want %q (%v)", z, x, y, got, ok, want, has)
				}
			}
		}
	}
	return r
}

func pyramid(maxZ uint8, body func(z uint8, x, y uint32) []byte) (map[tileAt][]byte, []tileAt) {
	tiles := map[tileAt][]byte{}
	var keys []tileAt
	for z := uint8(0); z <= maxZ; z++ {
		for x := uint32(0); x < 1<<z; x++ {
			for y := uint32(0); y < 1<<z; y++ {
				k := tileAt{z, x, y}
				tiles[k] = body(z, x, y)
				keys = append(keys, k)
			}
		}
	}
	return tiles, keys
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	distinct := func(z uint8, x, y uint32) []byte { return []byte(fmt.Sprintf("tile %d/%d/%d", z, x, y)) }
	ocean := func(z uint8, x, y uint32) []byte {
		if z >= 3 && x != 0 {
			return []byte("ocean") // runs along the curve, and repeats across them
		}
		return distinct(z, x, y)
	}
	withEmpty := func(z uint8, x, y uint32) []byte {
		if (x+y)%3 == 0 && z > 0 {
			return nil
		}
		return distinct(z, x, y)
	}
	for _, tc := range []struct {
		name       string
		maxZ       uint8
		body       func(z uint8, x, y uint32) []byte
		shuffle    bool
		limit      int
		wantLeaves bool
		dedup      bool
	}{
		{name: "one tile", maxZ: 0, body: distinct},
		{name: "distinct tiles in zoom order", maxZ: 4, body: distinct},
		{name: "distinct tiles in random order", maxZ: 4, body: distinct, shuffle: true},
		{name: "repeated tiles", maxZ: 5, body: ocean, shuffle: true, dedup: true},
		{name: "empty tiles left out", maxZ: 3, body: withEmpty},
		{name: "leaf directories", maxZ: 5, body: distinct, shuffle: true, limit: 64, wantLeaves: true},
		{name: "leaf directories of repeated tiles", maxZ: 5, body: ocean, limit: 64, wantLeaves: true, dedup: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tiles, keys := pyramid(tc.maxZ, tc.body)
			if tc.shuffle {
				rand.New(rand.NewPCG(1, 2)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			}
			meta := []byte(`{"name":"t","vector_layers":[]}`)
			archive, st := write(t, tiles, keys, pmwrite.Options{Metadata: meta}, tc.limit)
			r := readBack(t, archive, tiles, tc.maxZ+1)
			h := r.Header()
			var nonEmpty, distinctBlobs = 0, map[string]bool{}
			var minZ, maxZ uint8 = pmtiles.MaxZoom, 0
			for k, b := range tiles {
				if len(b) > 0 {
					nonEmpty++
					distinctBlobs[string(b)] = true
					minZ, maxZ = min(minZ, k.z), max(maxZ, k.z)
				}
			}
			if got, want := h.AddressedTilesCount, uint64(nonEmpty); got != want || st.Tiles != want {
				t.Errorf("addressed tiles: got %v (stats %v), want %v", got, st.Tiles, want)
			}
			if got, want := h.TileContentsCount, uint64(len(distinctBlobs)); got != want {
				t.Errorf("tile contents: got %v, want %v", got, want)
			}
			if got, want := st.Empty, uint64(len(tiles)-nonEmpty); got != want {
				t.Errorf("empty: got %v, want %v", got, want)
			}
			if tc.dedup && h.TileEntriesCount >= h.AddressedTilesCount {
				t.Errorf("entries: got %v, want fewer than the %v tiles (run lengths)", h.TileEntriesCount, h.AddressedTilesCount)
			}
			if got, want := st.Leaves > 0, tc.wantLeaves; got != want {
				t.Errorf("leaves: got %v, want some: %v", st.Leaves, want)
			}
			if !h.Clustered || h.InternalCompression != pmtiles.CompressionGzip || h.TileType != pmtiles.TileTypePNG || h.TileCompression != pmtiles.CompressionNone {
				t.Errorf("header: got %+v, want clustered, gzip directories, png tiles stored as given", h)
			}
			if h.MinZoom != minZ || h.MaxZoom != maxZ {
				t.Errorf("zooms: got %v-%v, want %v-%v", h.MinZoom, h.MaxZoom, minZ, maxZ)
			}
			if e := h.RootOffset + h.RootLength; e > pmtiles.RootWindow {
				t.Errorf("root ends at %v, want within %v", e, pmtiles.RootWindow)
			}
			got, err := r.Metadata(context.Background())
			if err != nil || !bytes.Equal(got, meta) {
				t.Errorf("metadata: got %s, %v, want %s", got, err, meta)
			}
			checkClustered(t, r)
		})
	}
}

// checkClustered walks every entry: tile data in tile-id order, each offset
// contiguous with the data before it or a repeat of earlier data.
func checkClustered(t *testing.T, r *pmtiles.Reader) {
	t.Helper()
	var entries []pmtiles.Entry
	for _, e := range r.Root() {
		if !e.IsLeaf() {
			entries = append(entries, e)
			continue
		}
		h := r.Header()
		leaf, err := r.Leaf(context.Background(), pmtiles.Range{Offset: int64(h.LeafDirectoryOffset + e.Offset), Length: int64(e.Length)})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, leaf...)
	}
	var next uint64
	for i, e := range entries {
		if i > 0 && e.TileID < entries[i-1].TileID+uint64(entries[i-1].RunLength) {
			t.Fatalf("entry %d: tile id %d overlaps the run before it", i, e.TileID)
		}
		switch {
		case e.Offset == next:
			next += uint64(e.Length)
		case e.Offset > next:
			t.Fatalf("entry %d: offset %d past the end of the data before it (%d): not clustered", i, e.Offset, next)
		}
	}
	if got, want := next, r.Header().TileDataLength; got != want {
		t.Fatalf("tile data: entries reach %d, want %d", got, want)
	}
}

// TestLeavesAtScale writes enough tiles that the root of the spec's size
// cannot hold them, so the default leaf sizing is what runs.
func TestLeavesAtScale(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	tiles, keys := pyramid(8, func(z uint8, x, y uint32) []byte {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	})
	archive, st := write(t, tiles, keys, pmwrite.Options{}, 0)
	if st.Leaves == 0 {
		t.Fatalf("leaves: got 0 for %d entries, want some", st.Entries)
	}
	r := readBack(t, archive, tiles, 8)
	if e := r.Header().RootOffset + r.Header().RootLength; e > pmtiles.RootWindow {
		t.Errorf("root ends at %v, want within %v", e, pmtiles.RootWindow)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	tiles, keys := pyramid(4, func(z uint8, x, y uint32) []byte { return []byte{byte(x), byte(y % 3), z} })
	a, _ := write(t, tiles, keys, pmwrite.Options{}, 0)
	rev := make([]tileAt, len(keys))
	for i, k := range keys {
		rev[len(keys)-1-i] = k
	}
	b, _ := write(t, tiles, rev, pmwrite.Options{}, 0)
	if !bytes.Equal(a, b) {
		t.Fatalf("two writes of the same tiles in other orders: got %d and %d differing bytes, want equal archives", len(a), len(b))
	}
}

func TestHeaderBoundsAndCenter(t *testing.T) {
	t.Parallel()
	one := map[tileAt][]byte{{1, 0, 0}: []byte("nw"), {2, 1, 1}: []byte("in nw")}
	keys := []tileAt{{1, 0, 0}, {2, 1, 1}}
	for _, tc := range []struct {
		name       string
		opts       pmwrite.Options
		wantBounds [4]float64
		wantCenter [3]float64
	}{
		{"from the tiles", pmwrite.Options{}, [4]float64{-180, 0, 0, 85.0511288}, [3]float64{-90, 42.5255644, 1}},
		{"given", pmwrite.Options{Bounds: &[4]float64{5.5, 45, 10.5, 48}, Center: &[3]float64{8.5, 47.3, 2}}, [4]float64{5.5, 45, 10.5, 48}, [3]float64{8.5, 47.3, 2}},
		{"bounds given, center from them", pmwrite.Options{Bounds: &[4]float64{0, 0, 10, 20}}, [4]float64{0, 0, 10, 20}, [3]float64{5, 10, 1}},
		{"center given without its zoom", pmwrite.Options{Center: &[3]float64{8.5, 47.3, -1}}, [4]float64{-180, 0, 0, 85.0511288}, [3]float64{8.5, 47.3, 1}},
		{"center zoom past the tiles", pmwrite.Options{Center: &[3]float64{8.5, 47.3, 14}}, [4]float64{-180, 0, 0, 85.0511288}, [3]float64{8.5, 47.3, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			archive, _ := write(t, one, keys, tc.opts, 0)
			h := readBack(t, archive, one, 2).Header()
			if got := h.Bounds(); got != tc.wantBounds {
				t.Errorf("bounds: got %v, want %v", got, tc.wantBounds)
			}
			if got := h.Center(); got != tc.wantCenter {
				t.Errorf("center: got %v, want %v", got, tc.wantCenter)
			}
		})
	}
}

func TestTileCompressionRecorded(t *testing.T) {
	t.Parallel()
	tiles := map[tileAt][]byte{{0, 0, 0}: {0x1f, 0x8b, 1}}
	archive, _ := write(t, tiles, []tileAt{{0, 0, 0}}, pmwrite.Options{TileType: pmtiles.TileTypeMVT, TileCompression: pmtiles.CompressionGzip}, 0)
	h := readBack(t, archive, tiles, 0).Header()
	if h.TileType != pmtiles.TileTypeMVT || h.TileCompression != pmtiles.CompressionGzip {
		t.Fatalf("got %v tiles compressed %v, want mvt compressed gzip", h.TileType, h.TileCompression)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts pmwrite.Options
		add  func(w *pmwrite.Writer) error
	}{
		{name: "no tile type", opts: pmwrite.Options{TileType: pmtiles.TileTypeUnknown}},
		{name: "unknown tile compression", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, TileCompression: 9}},
		{name: "metadata not an object", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, Metadata: []byte(`[1]`)}},
		{name: "metadata not JSON", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, Metadata: []byte(`{"a":`)}},
		{name: "bounds reversed", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, Bounds: &[4]float64{10, 0, 5, 1}}},
		{name: "center zoom too deep", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, Center: &[3]float64{0, 0, 40}}},
		{name: "center outside the world", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, Center: &[3]float64{200, 0, 1}}},
		{name: "unknown internal compression", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, InternalCompression: 9}},
		{name: "root past the spec's window", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, MaxRootBytes: pmtiles.RootWindow}},
		{name: "negative root size", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, MaxRootBytes: -1}},
		{name: "root too small for one leaf", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, MaxRootBytes: 1}},
		{name: "negative leaf size", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG, LeafEntries: -1}},
		{name: "tile outside its grid", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG}, add: func(w *pmwrite.Writer) error { return w.Add(1, 2, 0, []byte("x")) }},
		{name: "zoom too deep", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG}, add: func(w *pmwrite.Writer) error { return w.Add(32, 0, 0, []byte("x")) }},
		{name: "tile added twice", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG}, add: func(w *pmwrite.Writer) error {
			_ = w.Add(1, 1, 1, []byte("a"))
			return w.Add(1, 1, 1, []byte("b"))
		}},
		{name: "no tiles", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG}, add: func(*pmwrite.Writer) error { return nil }},
		{name: "only empty tiles", opts: pmwrite.Options{TileType: pmtiles.TileTypePNG}, add: func(w *pmwrite.Writer) error { return w.Add(0, 0, 0, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w, err := pmwrite.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.add == nil {
				tc.add = func(w *pmwrite.Writer) error { return w.Add(0, 0, 0, []byte("x")) }
			}
			if err = tc.add(w); err == nil {
				var out bytes.Buffer
				_, err = w.Finish(&out, tc.opts)
				if err != nil && out.Len() != 0 {
					t.Errorf("wrote %d bytes before failing, want none", out.Len())
				}
			}
			w.Close()
			if !errors.Is(err, pmwrite.ErrInput) {
				t.Fatalf("got %v, want an error matching pmwrite.ErrInput", err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("temporary files left: got %v, want none", left)
			}
		})
	}
}

func TestTemporaryFileRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := pmwrite.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(0, 0, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("while writing: got %d temporary files, want 1", len(left))
	}
	if _, err := w.Finish(&bytes.Buffer{}, pmwrite.Options{TileType: pmtiles.TileTypePNG}); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("after Finish: got %v, want no file", left)
	}
	if err := w.Add(0, 0, 0, []byte("x")); err == nil {
		t.Errorf("Add after Finish: got nil error, want one")
	}
}

// TestRandomTileSets is the property: any set of tiles, added in any order,
// reads back as itself.
func TestRandomTileSets(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			tiles, keys := randomSet(rand.New(rand.NewPCG(seed, 7)))
			limit, opts := 0, pmwrite.Options{}
			if seed%2 == 1 {
				limit = 40 + int(seed)
			}
			if seed%4 == 3 {
				opts.LeafEntries = 1 + int(seed%7) // many small leaves
			}
			archive, _ := write(t, tiles, keys, opts, limit)
			readBack(t, archive, tiles, 6)
		})
	}
}

func randomSet(rng *rand.Rand) (map[tileAt][]byte, []tileAt) {
	tiles := map[tileAt][]byte{}
	var keys []tileAt
	pool := [][]byte{[]byte("a"), []byte("bb"), nil, []byte("ccc")}
	for range 1 + rng.IntN(300) {
		z := uint8(rng.IntN(6))
		k := tileAt{z, uint32(rng.IntN(1 << z)), uint32(rng.IntN(1 << z))}
		if _, ok := tiles[k]; ok {
			continue
		}
		var b []byte
		if rng.IntN(2) == 0 {
			b = pool[rng.IntN(len(pool))]
		} else {
			b = []byte(fmt.Sprintf("%v-%d", k, rng.IntN(5)))
		}
		tiles[k] = b
		keys = append(keys, k)
	}
	if len(tiles) == 1 && len(tiles[keys[0]]) == 0 {
		tiles[keys[0]] = []byte("x")
	}
	return tiles, keys
}

// FuzzRoundTrip reads tiles from the fuzzer's bytes: three bytes of zoom
// and position, one of length, then the tile.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 'h', 'i', 1, 1, 0, 1, 'x'})
	f.Add([]byte{3, 5, 2, 1, 'a', 3, 5, 3, 1, 'a', 3, 6, 3, 1, 'a'})
	f.Fuzz(func(t *testing.T, in []byte) {
		tiles := map[tileAt][]byte{}
		var keys []tileAt
		for len(in) >= 4 {
			z := in[0] % 7
			k := tileAt{z, uint32(in[1]) % (1 << z), uint32(in[2]) % (1 << z)}
			n := min(int(in[3]), len(in)-4)
			body := in[4 : 4+n]
			in = in[4+n:]
			if _, ok := tiles[k]; ok {
				continue
			}
			tiles[k] = body
			keys = append(keys, k)
		}
		nonEmpty := 0
		for _, b := range tiles {
			if len(b) > 0 {
				nonEmpty++
			}
		}
		if nonEmpty == 0 {
			return
		}
		archive, _ := write(t, tiles, keys, pmwrite.Options{LeafEntries: 1 + len(keys)%5}, 48)
		readBack(t, archive, tiles, 6)
	})
}
