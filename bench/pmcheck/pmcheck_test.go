package pmcheck

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	gopm "github.com/protomaps/go-pmtiles/pmtiles"
	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
)

// pyramid is every tile of zooms 0..maxZoom. With runs, every third tile of
// a row is one shared body, so dedup and run lengths have work.
func pyramid(maxZoom uint8, runs bool, body func(z uint8, x, y uint32) []byte) map[pmtiles.ZXY][]byte {
	tiles := map[pmtiles.ZXY][]byte{}
	for z := uint8(0); z <= maxZoom; z++ {
		for x := range uint32(1) << z {
			for y := range uint32(1) << z {
				b := body(z, x, y)
				if runs && (x+y)%3 == 0 {
					b = body(0, 0, 0)
				}
				tiles[pmtiles.ZXY{Z: z, X: x, Y: y}] = b
			}
		}
	}
	return tiles
}

func pngBody(z uint8, x, y uint32) []byte { return fmt.Appendf(nil, "\x89PNG %d/%d/%d", z, x, y) }

func gzipped(b []byte) []byte { return pmtilestest.Compress(b, pmtiles.CompressionGzip) }

func mvtBody(z uint8, x, y uint32) []byte { return gzipped(fmt.Appendf(nil, "mvt %d/%d/%d", z, x, y)) }

// writeMBTiles writes tiles into a new MBTiles file (TMS rows, as the format
// has them) with the given metadata rows.
func writeMBTiles(t *testing.T, path string, tiles map[pmtiles.ZXY][]byte, meta map[string]string) {
	t.Helper()
	conn, err := sqlite.OpenConn(path, sqlite.OpenReadWrite|sqlite.OpenCreate)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sqlitex.ExecuteScript(conn, `
		CREATE TABLE metadata (name TEXT, value TEXT);
		CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
		CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);`, nil); err != nil {
		t.Fatal(err)
	}
	end := sqlitex.Transaction(conn)
	for k, v := range meta {
		if err := sqlitex.Execute(conn, "INSERT INTO metadata VALUES (?, ?)", &sqlitex.ExecOptions{Args: []any{k, v}}); err != nil {
			t.Fatal(err)
		}
	}
	for tl, b := range tiles {
		row := (uint32(1) << tl.Z) - 1 - tl.Y
		if err := sqlitex.Execute(conn, "INSERT INTO tiles VALUES (?, ?, ?, ?)", &sqlitex.ExecOptions{Args: []any{int(tl.Z), int(tl.X), int(row), b}}); err != nil {
			t.Fatal(err)
		}
	}
	var txErr error
	end(&txErr)
	if txErr != nil {
		t.Fatal(txErr)
	}
}

// convert writes an archive of tiles with go-pmtiles' own converter (what
// `pmtiles convert` runs) and returns its bytes.
func convert(t *testing.T, tiles map[pmtiles.ZXY][]byte, meta map[string]string, dedup bool) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.mbtiles"), filepath.Join(dir, "out.pmtiles")
	writeMBTiles(t, in, tiles, meta)
	tmp, err := os.CreateTemp(dir, "tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	if err := gopm.Convert(log.New(io.Discard, "", 0), in, out, dedup, tmp); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readAll opens b with shared/formats/pmtiles and checks every tile byte for byte,
// and that tiles around the pyramid are absent.
func readAll(t *testing.T, b []byte, tiles map[pmtiles.ZXY][]byte, wantLeaves bool) pmtiles.Header {
	t.Helper()
	r, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(b)), int64(len(b)),
		pmtiles.Options{Leaves: &pmtilestest.LeafCache{}})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if got := h.LeafDirectoryLength > 0; got != wantLeaves {
		t.Fatalf("leaf directories: got %v, want %v", got, wantLeaves)
	}
	maxZ := uint8(0)
	for tl, want := range tiles {
		got, ok, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("tile %v: got %q, %v, %v, want %q", tl, got, ok, err, want)
		}
		maxZ = max(maxZ, tl.Z)
	}
	for _, tl := range []pmtiles.ZXY{{Z: maxZ + 1}, {Z: maxZ + 1, X: 1, Y: 1}} {
		if _, ok, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y); ok || err != nil {
			t.Errorf("tile %v: got found=%v, %v, want absent", tl, ok, err)
		}
	}
	// The header decodes as go-pmtiles decodes it.
	ref, err := gopm.DeserializeHeader(b[:gopm.HeaderV3LenBytes])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(h.RootOffset, h.RootLength, h.MetadataOffset, h.MetadataLength, h.LeafDirectoryOffset, h.LeafDirectoryLength,
		h.TileDataOffset, h.TileDataLength, h.AddressedTilesCount, h.TileEntriesCount, h.TileContentsCount, h.Clustered,
		uint8(h.InternalCompression), uint8(h.TileCompression), uint8(h.TileType), h.MinZoom, h.MaxZoom,
		h.MinLonE7, h.MinLatE7, h.MaxLonE7, h.MaxLatE7, h.CenterZoom, h.CenterLonE7, h.CenterLatE7),
		fmt.Sprint(ref.RootOffset, ref.RootLength, ref.MetadataOffset, ref.MetadataLength, ref.LeafDirectoryOffset, ref.LeafDirectoryLength,
			ref.TileDataOffset, ref.TileDataLength, ref.AddressedTilesCount, ref.TileEntriesCount, ref.TileContentsCount, ref.Clustered,
			uint8(ref.InternalCompression), uint8(ref.TileCompression), uint8(ref.TileType), ref.MinZoom, ref.MaxZoom,
			ref.MinLonE7, ref.MinLatE7, ref.MaxLonE7, ref.MaxLatE7, ref.CenterZoom, ref.CenterLonE7, ref.CenterLatE7); got != want {
		t.Errorf("header: got %v, want %v", got, want)
	}
	return h
}

// TestConvertedArchives reads archives written by go-pmtiles' converter:
// z0-7 (21,845 tiles) forces leaf directories; dedup adds run lengths and
// shared contents.
func TestConvertedArchives(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		tiles map[pmtiles.ZXY][]byte
		meta  map[string]string
		dedup bool // the input has runs of equal tiles and the converter dedups
	}{
		{"png with leaves", pyramid(7, false, pngBody), map[string]string{"format": "png", "name": "p"}, false},
		{"png with leaves, dedup and runs", pyramid(7, true, pngBody), map[string]string{"format": "png"}, true},
		{"png without leaves", pyramid(4, true, pngBody), map[string]string{"format": "png"}, true},
		{"gzip mvt with leaves", pyramid(7, false, mvtBody), map[string]string{"format": "pbf", "json": `{"vector_layers":[{"id":"roads","fields":{}}]}`}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := convert(t, c.tiles, c.meta, c.dedup)
			h := readAll(t, b, c.tiles, len(c.tiles) > 16384)
			if c.dedup && (h.TileContentsCount >= h.AddressedTilesCount || h.TileEntriesCount >= h.AddressedTilesCount) {
				t.Errorf("dedup: %d contents for %d tiles", h.TileContentsCount, h.AddressedTilesCount)
			}
		})
	}
}

// serialise writes an archive with go-pmtiles' serialisers: tile data in a
// shuffled order when unclustered, directories built with its leaf logic.
func serialise(tiles map[pmtiles.ZXY][]byte, clustered bool, ic gopm.Compression) []byte {
	var ids []idTile
	for tl, b := range tiles {
		ids = append(ids, idTile{gopm.ZxyToID(tl.Z, tl.X, tl.Y), b})
	}
	order := append([]idTile(nil), ids...)
	rng := rand.New(rand.NewPCG(3, 4))
	if clustered {
		sortByID(order)
	} else {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	var data []byte
	offsets := map[uint64]uint64{}
	for _, it := range order {
		offsets[it.id] = uint64(len(data))
		data = append(data, it.body...)
	}
	sortByID(ids)
	entries := make([]gopm.EntryV3, len(ids))
	for i, it := range ids {
		entries[i] = gopm.EntryV3{TileID: it.id, Offset: offsets[it.id], Length: uint32(len(it.body)), RunLength: 1}
	}
	root, leaves, _ := gopm.BuildDirectories(entries, 16384-gopm.HeaderV3LenBytes, ic)
	meta, _ := gopm.SerializeMetadata(map[string]any{"name": "s"}, ic)
	h := gopm.HeaderV3{SpecVersion: 3, RootOffset: gopm.HeaderV3LenBytes, RootLength: uint64(len(root)),
		InternalCompression: ic, TileCompression: gopm.NoCompression, TileType: gopm.Png, Clustered: clustered, MaxZoom: 7}
	return assemble(h, root, meta, leaves, data)
}

// assemble lays the sections out in the order go-pmtiles writes them (root,
// metadata, leaves, tile data), sets h's offsets and lengths to match, and
// returns header and sections as one archive.
func assemble(h gopm.HeaderV3, root, meta, leaves, data []byte) []byte {
	h.MetadataOffset = h.RootOffset + h.RootLength
	h.MetadataLength = uint64(len(meta))
	h.LeafDirectoryOffset = h.MetadataOffset + h.MetadataLength
	h.LeafDirectoryLength = uint64(len(leaves))
	h.TileDataOffset = h.LeafDirectoryOffset + h.LeafDirectoryLength
	h.TileDataLength = uint64(len(data))
	out := gopm.SerializeHeader(h)
	for _, b := range [][]byte{root, meta, leaves, data} {
		out = append(out, b...)
	}
	return out
}

type idTile struct {
	id   uint64
	body []byte
}

func sortByID(s []idTile) {
	slices.SortFunc(s, func(a, b idTile) int { return cmp.Compare(a.id, b.id) })
}

// TestSerialisedArchives covers what the converter does not write:
// unclustered archives and uncompressed directories.
func TestSerialisedArchives(t *testing.T) {
	t.Parallel()
	tiles := pyramid(7, false, pngBody)
	for _, c := range []struct {
		name      string
		clustered bool
		ic        gopm.Compression
	}{
		{"clustered gzip", true, gopm.Gzip},
		{"unclustered gzip", false, gopm.Gzip},
		{"unclustered none", false, gopm.NoCompression},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			readAll(t, serialise(tiles, c.clustered, c.ic), tiles, true)
		})
	}
}

// TestHilbertIDs compares tile ids both ways with go-pmtiles for every tile
// of zooms 0-8 and random tiles of every zoom to 31.
func TestHilbertIDs(t *testing.T) {
	t.Parallel()
	check := func(z uint8, x, y uint32) {
		got, err := pmtiles.ZXYToID(z, x, y)
		if want := gopm.ZxyToID(z, x, y); err != nil || got != want {
			t.Fatalf("ZXYToID(%d, %d, %d): got %d, %v, want %d", z, x, y, got, err, want)
		}
		back, err := pmtiles.IDToZXY(got)
		wz, wx, wy := gopm.IDToZxy(got)
		if want := (pmtiles.ZXY{Z: wz, X: wx, Y: wy}); err != nil || back != want {
			t.Fatalf("IDToZXY(%d): got %v, %v, want %v", got, back, err, want)
		}
	}
	n := 0
	for z := uint8(0); z <= 8; z++ {
		for x := range uint32(1) << z {
			for y := range uint32(1) << z {
				check(z, x, y)
				n++
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for z := uint8(0); z <= pmtiles.MaxZoom; z++ {
		side := uint64(1) << z
		check(z, uint32(side-1), uint32(side-1))
		check(z, uint32(side-1), 0)
		for range 5000 {
			check(z, uint32(rng.Uint64N(side)), uint32(rng.Uint64N(side)))
			n++
		}
	}
	t.Logf("%d tiles agree", n)
}

// TestDirectoryEncodings decodes go-pmtiles' directory encoding and has
// go-pmtiles decode the test writer's.
func TestDirectoryEncodings(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	var ref []gopm.EntryV3
	var ours []pmtiles.Entry
	var id, off uint64
	for i := range 5000 {
		id += 1 + rng.Uint64N(1000)
		e := gopm.EntryV3{TileID: id, Length: uint32(1 + rng.IntN(1<<20)), RunLength: uint32(rng.IntN(4))}
		switch i % 3 {
		case 0: // contiguous
			e.Offset = off
		case 1: // a jump forward
			e.Offset = off + rng.Uint64N(1<<30)
		default: // back to an earlier blob (dedup)
			e.Offset = rng.Uint64N(off + 1)
		}
		off = e.Offset + uint64(e.Length)
		ref = append(ref, e)
		ours = append(ours, pmtiles.Entry{TileID: e.TileID, Offset: e.Offset, Length: e.Length, RunLength: e.RunLength})
	}
	for _, ic := range []gopm.Compression{gopm.NoCompression, gopm.Gzip} {
		got, err := pmtiles.DecodeDirectory(gopm.SerializeEntries(ref, ic), pmtiles.Compression(ic), 1<<30)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(ours) {
			t.Errorf("compression %d: decoded go-pmtiles' directory: %v (equal: %v)", ic, err, fmt.Sprint(got) == fmt.Sprint(ours))
		}
	}
	// go-pmtiles writes brotli and zstd directories by neither name: its
	// encoding, compressed by the reference encoders.
	for _, ic := range []gopm.Compression{gopm.Brotli, gopm.Zstd} {
		got, err := pmtiles.DecodeDirectory(encode(gopm.SerializeEntries(ref, gopm.NoCompression), ic), pmtiles.Compression(ic), 1<<30)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(ours) {
			t.Errorf("compression %d: decoded go-pmtiles' directory: %v (equal: %v)", ic, err, fmt.Sprint(got) == fmt.Sprint(ours))
		}
	}
	back := gopm.DeserializeEntries(bytes.NewBuffer(pmtilestest.EncodeDirectory(ours)), gopm.NoCompression)
	if fmt.Sprint(back) != fmt.Sprint(ref) {
		t.Errorf("go-pmtiles decoded the test writer's directory differently")
	}
}

// TestTestWriterArchives has go-pmtiles read archives of pmtilestest (the
// writer product tests use), so those archives are what real readers accept.
func TestTestWriterArchives(t *testing.T) {
	t.Parallel()
	tiles := pyramid(6, true, pngBody)
	for _, c := range []struct {
		name string
		opts pmtilestest.Options
	}{
		{"clustered dedup gzip leaves", pmtilestest.Options{Clustered: true, Dedup: true, InternalCompression: pmtiles.CompressionGzip, MaxRootBytes: 300}},
		{"unclustered none leaves", pmtilestest.Options{MaxRootBytes: 300}},
		{"clustered dedup gzip root only", pmtilestest.Options{Clustered: true, Dedup: true, InternalCompression: pmtiles.CompressionGzip}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := pmtilestest.Build(tiles, c.opts)
			h, err := gopm.DeserializeHeader(b[:gopm.HeaderV3LenBytes])
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint64][]byte{}
			err = gopm.IterateEntries(h, func(off, n uint64) ([]byte, error) { return b[off : off+n], nil }, func(e gopm.EntryV3) {
				for i := range uint64(e.RunLength) {
					s := h.TileDataOffset + e.Offset
					got[e.TileID+i] = b[s : s+uint64(e.Length)]
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tiles) {
				t.Fatalf("go-pmtiles found %d tiles, want %d", len(got), len(tiles))
			}
			for tl, want := range tiles {
				if b := got[gopm.ZxyToID(tl.Z, tl.X, tl.Y)]; !bytes.Equal(b, want) {
					t.Fatalf("tile %v: go-pmtiles read %q, want %q", tl, b, want)
				}
			}
		})
	}
}

// TestTileJSONOfConvertedArchive builds TileJSON from an archive go-pmtiles
// converted from MBTiles (metadata as tippecanoe's MBTiles output has it).
func TestTileJSONOfConvertedArchive(t *testing.T) {
	t.Parallel()
	tiles := pyramid(3, false, mvtBody)
	b := convert(t, tiles, map[string]string{
		"format":      "pbf",
		"name":        "Roads",
		"attribution": "© OpenStreetMap",
		"bounds":      "-122.5,37.7,-122.3,37.9",
		"center":      "-122.4,37.8,2",
		"json":        `{"vector_layers":[{"id":"roads","fields":{"name":"String"}}]}`,
	}, true)
	r := pmtilestest.Open(t, b)
	meta, err := r.Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tj, err := tileset.FromArchive("https://tiles.example", "roads", r.Header().Tileset(), meta)
	if err != nil {
		t.Fatal(err)
	}
	want := tileset.TileJSON{
		TileJSON: "3.0.0", Name: "Roads", Attribution: "© OpenStreetMap", Scheme: "xyz",
		Tiles:   []string{"https://tiles.example/roads/{z}/{x}/{y}.pbf"},
		MinZoom: 0, MaxZoom: 3,
		Bounds:       []float64{-122.5, 37.7, -122.3, 37.9},
		Center:       []float64{-122.4, 37.8, 2},
		VectorLayers: []byte(`[{"fields":{"name":"String"},"id":"roads"}]`),
		Format:       "pbf",
	}
	if got := tj.Marshal(); string(got) != string(want.Marshal()) {
		t.Errorf("got %s\nwant %s", got, want.Marshal())
	}
	if h := r.Header(); h.TileCompression != pmtiles.CompressionGzip || h.TileType != pmtiles.TileTypeMVT {
		t.Errorf("header: tile compression %v, type %v, want gzip mvt", h.TileCompression, h.TileType)
	}
}
