package pmtiles_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
)

var writeSeeds = flag.Bool("write-seeds", false, "rewrite the seed corpora under testdata/fuzz")

// seedArchives are small valid archives of every shape the reader handles.
func seedArchives() [][]byte {
	tiles := pyramid(3, true)
	var out [][]byte
	for _, o := range []pmtilestest.Options{
		{Clustered: true},
		{Dedup: true, InternalCompression: pmtiles.CompressionGzip, Metadata: map[string]any{"name": "n", "vector_layers": []any{}}},
		{Clustered: true, Dedup: true, MaxRootBytes: 20, LeafEntries: 8},
		{InternalCompression: pmtiles.CompressionGzip, MaxRootBytes: 20, LeafEntries: 8},
		{Clustered: true, InternalCompression: pmtiles.CompressionBrotli, MaxRootBytes: 20, LeafEntries: 8, Metadata: map[string]any{"name": "br"}},
		{Dedup: true, InternalCompression: pmtiles.CompressionZstd, MaxRootBytes: 20, LeafEntries: 8, Metadata: map[string]any{"name": "zstd"}},
	} {
		out = append(out, pmtilestest.Build(tiles, o))
	}
	return append(out, cycleArchive(), nestedArchive())
}

func seedDirectories() [][]byte {
	return [][]byte{
		pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Length: 3, RunLength: 1}, {TileID: 1, Offset: 3, Length: 4, RunLength: 2}, {TileID: 9, Offset: 0, Length: 3, RunLength: 1}}),
		pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 5, Offset: 100, Length: 40}, {TileID: 900, Offset: 140, Length: 41}}),
		uvarints(1, 0, 1, 1, 0),
	}
}

// TestWriteFuzzSeeds writes the seed corpora with -write-seeds; plain
// `go test` then runs every fuzz target over them.
func TestWriteFuzzSeeds(t *testing.T) {
	if !*writeSeeds {
		t.Skip("run with -write-seeds to rewrite testdata/fuzz")
	}
	write := func(target string, seeds [][]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	archives := seedArchives()
	var headers [][]byte
	for _, a := range archives {
		headers = append(headers, a[:pmtiles.HeaderLen])
	}
	write("FuzzParseHeader", headers)
	write("FuzzParseDirectory", seedDirectories())
	write("FuzzReader", archives)
	write("FuzzDecompress", seedCompressed())
}

// seedCompressed are inputs of FuzzDecompress: a compression byte, then
// the stored bytes.
func seedCompressed() [][]byte {
	plain := pmtilestest.EncodeDirectory([]pmtiles.Entry{{TileID: 0, Length: 3, RunLength: 1}, {TileID: 1, Offset: 3, Length: 4, RunLength: 2}})
	var out [][]byte
	for _, c := range compressions {
		out = append(out, append([]byte{byte(c)}, pmtilestest.Compress(plain, c)...))
	}
	return out
}

// FuzzDecompress decodes arbitrary bytes with every compression: no panic,
// never more than the cap, and only the package's own errors.
func FuzzDecompress(f *testing.F) {
	for _, s := range seedCompressed() {
		f.Add(s)
	}
	const limit = 1 << 16
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c := pmtiles.Compression(b[0] % 6)
		out, err := pmtiles.Decompress(b[1:], c, limit)
		if err != nil {
			if !errors.Is(err, pmtiles.ErrInvalid) && !errors.Is(err, pmtiles.ErrUnsupported) {
				t.Fatalf("%v: error %v is neither ErrInvalid nor ErrUnsupported", c, err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("%v: %d bytes out, past the cap of %d", c, len(out), limit)
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	for _, a := range seedArchives() {
		f.Add(a[:pmtiles.HeaderLen])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := pmtiles.ParseHeader(b)
		if err != nil {
			if !errors.Is(err, pmtiles.ErrInvalid) && !errors.Is(err, pmtiles.ErrUnsupported) {
				t.Fatalf("error %v is neither ErrInvalid nor ErrUnsupported", err)
			}
			return
		}
		// Every field is kept: encoding the header gives the bytes back.
		if got := pmtilestest.EncodeHeader(h); !bytes.Equal(got, b[:pmtiles.HeaderLen]) {
			t.Fatalf("re-encoded header differs:\n got %x\nwant %x", got, b[:pmtiles.HeaderLen])
		}
		_ = h.Validate(int64(len(b)))
	})
}

func FuzzParseDirectory(f *testing.F) {
	for _, d := range seedDirectories() {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := pmtiles.ParseDirectory(b)
		if err != nil {
			if !errors.Is(err, pmtiles.ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		again, err := pmtiles.ParseDirectory(pmtilestest.EncodeDirectory(entries))
		if err != nil {
			t.Fatalf("re-encoded directory does not parse: %v", err)
		}
		if fmt.Sprint(again) != fmt.Sprint(entries) {
			t.Fatalf("round trip: got %v, want %v", again, entries)
		}
		for _, e := range entries {
			if got, ok := pmtiles.FindTile(entries, e.TileID); !ok || got != e {
				t.Fatalf("FindTile(%d): got %v, %v, want %v", e.TileID, got, ok, e)
			}
		}
	})
}

// FuzzReader resolves tiles of an arbitrary byte archive: no panic, no read
// outside the archive, a bounded number of reads, and only the package's own
// errors.
func FuzzReader(f *testing.F) {
	for _, a := range seedArchives() {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		reads := 0
		var read int64 // bytes
		src := pmtiles.RangeReaderFunc(func(_ context.Context, off, n int64) ([]byte, error) {
			reads++
			read += n
			if off < 0 || n < 0 || off+n > int64(len(b)) {
				t.Fatalf("read %d+%d outside the %d-byte archive", off, n, len(b))
			}
			return b[off : off+n], nil
		})
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, pmtiles.ErrInvalid) && !errors.Is(err, pmtiles.ErrUnsupported) {
				t.Fatalf("%s: error %v is neither ErrInvalid nor ErrUnsupported", what, err)
			}
		}
		ctx := context.Background()
		r, err := pmtiles.Open(ctx, src, int64(len(b)), pmtiles.Options{Leaves: &mapCache{m: map[pmtiles.Range][]pmtiles.Entry{}}})
		check("Open", err)
		if err != nil {
			return
		}
		_, err = r.Metadata(ctx)
		check("Metadata", err)
		read = 0
		check("Verify", r.Verify(ctx))
		if limit := int64(r.Header().LeafDirectoryLength); read > limit {
			t.Fatalf("Verify: read %d bytes, more than the %d-byte leaf section", read, limit)
		}
		ids := []uint64{0, 1, 5, 21, 84, 1 << 40}
		for _, e := range r.Root() {
			ids = append(ids, e.TileID, e.TileID+1)
		}
		for _, id := range ids {
			before := reads
			_, _, err := r.FindID(ctx, id)
			check("FindID", err)
			if reads-before > pmtiles.DefaultMaxDepth {
				t.Fatalf("FindID(%d): %d reads", id, reads-before)
			}
			if tl, err := pmtiles.IDToZXY(id); err == nil {
				_, _, err := r.ReadTile(ctx, tl.Z, tl.X, tl.Y)
				check("ReadTile", err)
			}
		}
	})
}
