package pmcheck

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	gopm "github.com/protomaps/go-pmtiles/pmtiles"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// encode compresses b with c: go-pmtiles' own writer has none and gzip;
// brotli and zstd, which go-pmtiles names but does not write, come from
// the reference encoders (andybalholm/brotli, klauspost/compress) through
// the product's test writer.
func encode(b []byte, c gopm.Compression) []byte {
	if c == gopm.Gzip {
		return gzipped(b)
	}
	return pmtilestest.Compress(b, pmtiles.Compression(c))
}

// serialiseCompressed writes a clustered archive with go-pmtiles' header
// and directory serialisers, directories and metadata compressed with ic
// and tiles with tc. With leafSize > 0 the entries go to leaves of that
// many entries (go-pmtiles' BuildDirectories writes gzip or none only, so
// the leaves are cut here as it cuts them).
func serialiseCompressed(tiles map[pmtiles.ZXY][]byte, ic, tc gopm.Compression, leafSize int) []byte {
	var ids []idTile
	for tl, b := range tiles {
		ids = append(ids, idTile{gopm.ZxyToID(tl.Z, tl.X, tl.Y), encode(b, tc)})
	}
	sortByID(ids)
	var data []byte
	entries := make([]gopm.EntryV3, len(ids))
	for i, it := range ids {
		entries[i] = gopm.EntryV3{TileID: it.id, Offset: uint64(len(data)), Length: uint32(len(it.body)), RunLength: 1}
		data = append(data, it.body...)
	}
	root := encode(gopm.SerializeEntries(entries, gopm.NoCompression), ic)
	var leaves []byte
	if leafSize > 0 {
		var ptrs []gopm.EntryV3
		for i := 0; i < len(entries); i += leafSize {
			leaf := encode(gopm.SerializeEntries(entries[i:min(i+leafSize, len(entries))], gopm.NoCompression), ic)
			ptrs = append(ptrs, gopm.EntryV3{TileID: entries[i].TileID, Offset: uint64(len(leaves)), Length: uint32(len(leaf))})
			leaves = append(leaves, leaf...)
		}
		root = encode(gopm.SerializeEntries(ptrs, gopm.NoCompression), ic)
	}
	meta := encode([]byte(`{"name":"c","vector_layers":[{"id":"roads","fields":{}}]}`), ic)
	h := gopm.HeaderV3{SpecVersion: 3, RootOffset: gopm.HeaderV3LenBytes, RootLength: uint64(len(root)),
		InternalCompression: ic, TileCompression: tc, TileType: gopm.Mvt, Clustered: true, MaxZoom: 4,
		AddressedTilesCount: uint64(len(entries)), TileEntriesCount: uint64(len(entries)), TileContentsCount: uint64(len(entries))}
	return assemble(h, root, meta, leaves, data)
}

// TestEveryCompressionServed serves archives whose directories and tiles
// use each compression through the tile server (archives on, over the
// in-process S3): every tile comes back byte for byte as stored to a client
// that accepts the tiles' coding, and as the raw tile to one that does not.
func TestEveryCompressionServed(t *testing.T) {
	t.Parallel()
	raw := pyramid(4, false, func(z uint8, x, y uint32) []byte { return fmt.Appendf(nil, "mvt %d/%d/%d roads and rivers", z, x, y) })
	ep := s3localtest.Start(t, "tiles")
	oc := origin.NewWithS3(ep.Client, origin.Config{Bucket: "tiles"})
	mem, err := memory.New(memory.Config{MaxBytes: 256 << 20})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := servertest.New(servertest.Config{}, servertest.Deps{Memory: mem, Origin: oc, Archives: oc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() }) // after hs.Close (cleanups run last first)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	get := func(path, acceptEncoding string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		req.Header.Set("Accept-Encoding", acceptEncoding) // set, so the client does not add gzip and decode it
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	all := []gopm.Compression{gopm.NoCompression, gopm.Gzip, gopm.Brotli, gopm.Zstd}
	for _, ic := range all[1:] {
		for _, tc := range all {
			name := fmt.Sprintf("d%d-t%d", ic, tc)
			b := serialiseCompressed(raw, ic, tc, 64)
			t.Run(fmt.Sprintf("%v directories, %v tiles", pmtiles.Compression(ic), pmtiles.Compression(tc)), func(t *testing.T) {
				// shared/formats/pmtiles reads the stored bytes back, leaves included.
				stored := map[pmtiles.ZXY][]byte{}
				for tl, r := range raw {
					stored[tl] = encode(r, tc)
				}
				readAll(t, b, stored, true)
				if ic == gopm.Gzip {
					// go-pmtiles reads gzip directories: it finds the same tile bytes.
					h, _ := gopm.DeserializeHeader(b[:gopm.HeaderV3LenBytes])
					n := 0
					err := gopm.IterateEntries(h, func(off, n uint64) ([]byte, error) { return b[off : off+n], nil }, func(e gopm.EntryV3) {
						z, x, y := gopm.IDToZxy(e.TileID)
						tl, s := pmtiles.ZXY{Z: z, X: x, Y: y}, h.TileDataOffset+e.Offset
						if got := b[s : s+uint64(e.Length)]; !bytes.Equal(got, stored[tl]) {
							t.Errorf("go-pmtiles: tile %v: got %d bytes, want the %d stored", tl, len(got), len(stored[tl]))
						}
						n++
					})
					if err != nil || n != len(raw) {
						t.Fatalf("go-pmtiles: %d tiles, %v, want %d", n, err, len(raw))
					}
				}
				s3localtest.Put(t, ep.Client, "tiles", name+".pmtiles", b, "application/vnd.pmtiles", "")
				enc := pmtiles.Compression(tc).ContentEncoding()
				for tl, want := range raw {
					path := fmt.Sprintf("/%s/%d/%d/%d.pbf", name, tl.Z, tl.X, tl.Y)
					resp, got := get(path, "gzip, br, zstd")
					if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != enc || !bytes.Equal(got, stored[tl]) {
						t.Fatalf("%s, accepting client: got %d, %q, %d bytes, want 200, %q, the %d bytes stored", path, resp.StatusCode, resp.Header.Get("Content-Encoding"), len(got), enc, len(stored[tl]))
					}
					resp, got = get(path, "identity")
					if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(got, want) {
						t.Fatalf("%s, identity client: got %d, %q, %q, want 200, no coding, %q", path, resp.StatusCode, resp.Header.Get("Content-Encoding"), got, want)
					}
				}
			})
		}
	}
}
