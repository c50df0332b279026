package pmtiles_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
)

var compressions = []pmtiles.Compression{pmtiles.CompressionNone, pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd}

func TestDecompressRoundTrip(t *testing.T) {
	t.Parallel()
	plain := []byte(strings.Repeat("a directory of varints ", 200))
	for _, c := range compressions {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			got, err := pmtiles.Decompress(pmtilestest.Compress(plain, c), c, int64(len(plain)))
			if err != nil || !bytes.Equal(got, plain) {
				t.Errorf("got %d bytes, %v, want %d bytes", len(got), err, len(plain))
			}
			if _, err := pmtiles.Decompress(pmtilestest.Compress(plain, c), c, int64(len(plain))-1); !errors.Is(err, pmtiles.ErrTooLarge) || !errors.Is(err, pmtiles.ErrInvalid) {
				t.Errorf("one byte over the cap: got %v, want %v and %v", err, pmtiles.ErrTooLarge, pmtiles.ErrInvalid)
			}
		})
	}
}

func TestDecompressRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		raw  []byte
		c    pmtiles.Compression
		want error
	}{
		{"gzip garbage", []byte("not gzip at all"), pmtiles.CompressionGzip, pmtiles.ErrInvalid},
		{"brotli garbage", []byte("\xff\xff\xff\xff not brotli"), pmtiles.CompressionBrotli, pmtiles.ErrInvalid},
		{"zstd garbage", []byte("not zstd at all"), pmtiles.CompressionZstd, pmtiles.ErrInvalid},
		{"zstd truncated", pmtilestest.Compress([]byte(strings.Repeat("x", 5000)), pmtiles.CompressionZstd)[:8], pmtiles.CompressionZstd, pmtiles.ErrInvalid},
		{"brotli truncated", pmtilestest.Compress([]byte(strings.Repeat("xy", 5000)), pmtiles.CompressionBrotli)[:5], pmtiles.CompressionBrotli, pmtiles.ErrInvalid},
		{"unknown", []byte("x"), pmtiles.CompressionUnknown, pmtiles.ErrUnsupported},
		{"compression 9", []byte("x"), 9, pmtiles.ErrUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got, err := pmtiles.Decompress(c.raw, c.c, 1<<20); !errors.Is(err, c.want) {
				t.Errorf("got %d bytes, %v, want %v", len(got), err, c.want)
			}
		})
	}
}

// TestDecompressBomb decodes long runs of zeros (256 MiB for gzip and zstd,
// 64 MiB for brotli, whose encoder is slow), stored in a few hundred
// kilobytes at most, under the default directory cap: each is refused
// having allocated a small multiple of the cap, not the bomb's size.
//
// The bombs are built as cheaply as they come under -race: gzip from
// 1 MiB members (the stored size per decoded byte of 16 MiB ones, at a
// sixteenth of the encoding time), brotli at quality 1 (about a third of
// the default's encoding time, 12 KB stored instead of 102 bytes).
func TestDecompressBomb(t *testing.T) {
	const bomb = 256 << 20
	zeros := make([]byte, 16<<20)
	var br bytes.Buffer
	bw := brotli.NewWriterLevel(&br, 1)
	if _, err := bw.Write(make([]byte, bomb/4)); err != nil || bw.Close() != nil {
		t.Fatalf("brotli bomb: %v", err)
	}
	bombs := map[pmtiles.Compression][]byte{
		pmtiles.CompressionGzip:   bytes.Repeat(pmtilestest.Compress(zeros[:1<<20], pmtiles.CompressionGzip), bomb/(1<<20)), // gzip members concatenate
		pmtiles.CompressionZstd:   bytes.Repeat(pmtilestest.Compress(zeros, pmtiles.CompressionZstd), bomb/len(zeros)),      // as do zstd frames
		pmtiles.CompressionBrotli: br.Bytes(),
	}
	for _, c := range []pmtiles.Compression{pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) {
			raw := bombs[c]
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := pmtiles.Decompress(raw, c, pmtiles.DefaultMaxDirectoryBytes)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, pmtiles.ErrTooLarge) {
				t.Errorf("%d stored bytes: got %v, want %v", len(raw), err, pmtiles.ErrTooLarge)
			}
			// The output buffer doubles past the cap once, and a decoder
			// keeps a window of at most 16 MiB (brotli) or the cap (zstd);
			// the race detector's builds allocate about twice that.
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(48<<20); got > limit {
				t.Errorf("allocated %d bytes, want at most %d", got, limit)
			}
			t.Logf("%s bomb: %d stored bytes, refused at the %d-byte cap having allocated %d bytes", c, len(raw), pmtiles.DefaultMaxDirectoryBytes, after.TotalAlloc-before.TotalAlloc)
		})
	}
}

// TestReaderEveryCompression reads every tile of archives whose directories
// and metadata use each compression, with and without leaves.
func TestReaderEveryCompression(t *testing.T) {
	t.Parallel()
	tiles := pyramid(5, true)
	for _, c := range compressions {
		for _, leaves := range []bool{false, true} {
			name := c.String()
			o := pmtilestest.Options{Clustered: true, Dedup: true, InternalCompression: c, Metadata: map[string]any{"name": name}}
			if leaves {
				name += " leaves"
				o.MaxRootBytes = 60
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := pmtilestest.Build(tiles, o)
				r := pmtilestest.Open(t, b)
				if got := r.Header().LeafDirectoryLength > 0; got != leaves {
					t.Fatalf("leaves: got %v, want %v", got, leaves)
				}
				if err := r.Verify(context.Background()); err != nil {
					t.Errorf("Verify: got %v, want nil", err)
				}
				for tl, want := range tiles {
					got, ok, err := r.ReadTile(context.Background(), tl.Z, tl.X, tl.Y)
					if err != nil || !ok || !bytes.Equal(got, want) {
						t.Fatalf("tile %v: got %q, %v, %v, want %q", tl, got, ok, err, want)
					}
				}
				md, err := r.Metadata(context.Background())
				if want := `{"name":"` + c.String() + `"}`; err != nil || string(md) != want {
					t.Errorf("metadata: got %s, %v, want %s", md, err, want)
				}
			})
		}
	}
}

// TestVerify finds what Open cannot see without reading leaves.
func TestVerify(t *testing.T) {
	t.Parallel()
	tiles := pyramid(4, false)
	good := pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true, MaxRootBytes: 40, LeafEntries: 64})
	h, err := pmtiles.ParseHeader(good)
	if err != nil {
		t.Fatal(err)
	}
	// A leaf whose entries point past the tile data: the tile section is
	// cut to the first leaf's tiles, which the root cannot tell.
	short := bytes.Clone(good)
	first, _ := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(good)), int64(len(good)), pmtiles.Options{})
	leaf, _ := first.Leaf(context.Background(), pmtiles.Range{Offset: int64(h.LeafDirectoryOffset + first.Root()[0].Offset), Length: int64(first.Root()[0].Length)})
	last := leaf[len(leaf)-1]
	h.TileDataLength = last.Offset + uint64(last.Length)
	copy(short, pmtilestest.EncodeHeader(h))
	// A leaf of garbage.
	garbage := bytes.Clone(good)
	g, _ := pmtiles.ParseHeader(garbage)
	copy(garbage[g.LeafDirectoryOffset+first.Root()[1].Offset:], "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"good", good, nil},
		{"leaf entries past the tile data", short, pmtiles.ErrInvalid},
		{"leaf garbage", garbage, pmtiles.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(c.b)), int64(len(c.b)), pmtiles.Options{})
			if err != nil {
				t.Fatalf("Open: got %v, want nil (the root is sound)", err)
			}
			if err := r.Verify(context.Background()); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("Verify: got %v, want %v", err, c.want)
			}
		})
	}
}

func TestCompressionOf(t *testing.T) {
	t.Parallel()
	for enc, want := range map[string]pmtiles.Compression{
		"": pmtiles.CompressionNone, "identity": pmtiles.CompressionNone, "gzip": pmtiles.CompressionGzip, "X-GZIP": pmtiles.CompressionGzip,
		"br": pmtiles.CompressionBrotli, "ZSTD": pmtiles.CompressionZstd, "deflate": pmtiles.CompressionUnknown,
	} {
		if got := pmtiles.CompressionOf(enc); got != want {
			t.Errorf("CompressionOf(%q): got %v, want %v", enc, got, want)
		}
	}
	for _, c := range compressions[1:] {
		if got := pmtiles.CompressionOf(c.ContentEncoding()); got != c {
			t.Errorf("round trip of %v: got %v", c, got)
		}
	}
}
