package pmwrite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

// TestLayoutOptions writes the layouts the options choose and reads every
// tile back; each case checks what its option promises.
func TestLayoutOptions(t *testing.T) {
	t.Parallel()
	ocean := func(z uint8, x, y uint32) []byte {
		if (x+y)%3 == 0 {
			return []byte("ocean")
		}
		return []byte(fmt.Sprintf("tile %d/%d/%d", z, x, y))
	}
	tiles, keys := pyramid(5, ocean)
	rand.New(rand.NewPCG(5, 6)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var all, distinct uint64
	seen := map[string]bool{}
	var addOrder []byte // distinct bodies, in the order first added
	for _, k := range keys {
		b := tiles[k]
		all += uint64(len(b))
		if !seen[string(b)] {
			seen[string(b)] = true
			distinct++
			addOrder = append(addOrder, b...)
		}
	}
	for _, tc := range []struct {
		name  string
		opts  pmwrite.Options
		limit int
		check func(t *testing.T, archive []byte, h pmtiles.Header, st pmwrite.Stats)
	}{
		{"unclustered: data in the order added", pmwrite.Options{Unclustered: true}, 0, func(t *testing.T, archive []byte, h pmtiles.Header, _ pmwrite.Stats) {
			if h.Clustered {
				t.Errorf("header: clustered, want not")
			}
			if got := archive[h.TileDataOffset:]; !bytes.Equal(got, addOrder) {
				t.Errorf("tile data: got %d bytes not in the order added, want the %d distinct bodies as added", len(got), len(addOrder))
			}
		}},
		{"no deduplication: every tile apart", pmwrite.Options{NoDeduplication: true}, 0, func(t *testing.T, _ []byte, h pmtiles.Header, st pmwrite.Stats) {
			if h.TileContentsCount != h.AddressedTilesCount || h.TileEntriesCount != h.AddressedTilesCount || st.Contents != st.Tiles {
				t.Errorf("counts: got %d tiles, %d entries, %d contents, want all equal", h.AddressedTilesCount, h.TileEntriesCount, h.TileContentsCount)
			}
			if h.TileDataLength != all {
				t.Errorf("tile data: got %d bytes, want every tile's %d", h.TileDataLength, all)
			}
		}},
		{"unclustered without deduplication", pmwrite.Options{Unclustered: true, NoDeduplication: true}, 0, func(t *testing.T, _ []byte, h pmtiles.Header, _ pmwrite.Stats) {
			if h.Clustered || h.TileContentsCount != h.AddressedTilesCount || h.TileDataLength != all {
				t.Errorf("header: got clustered %v, %d contents of %d tiles, %d data bytes, want unclustered, one content a tile, %d bytes", h.Clustered, h.TileContentsCount, h.AddressedTilesCount, h.TileDataLength, all)
			}
		}},
		{"deduplicated", pmwrite.Options{}, 0, func(t *testing.T, _ []byte, h pmtiles.Header, _ pmwrite.Stats) {
			if h.TileContentsCount != distinct || h.TileEntriesCount >= h.AddressedTilesCount {
				t.Errorf("counts: got %d contents, %d entries of %d tiles, want %d contents and run lengths", h.TileContentsCount, h.TileEntriesCount, h.AddressedTilesCount, distinct)
			}
		}},
		{"leaves of 16 entries", pmwrite.Options{LeafEntries: 16}, 100, func(t *testing.T, _ []byte, h pmtiles.Header, st pmwrite.Stats) {
			if want := int((st.Entries + 15) / 16); st.Leaves != want {
				t.Errorf("leaves: got %d, want %d of 16 entries", st.Leaves, want)
			}
		}},
		{"a small root", pmwrite.Options{}, 60, func(t *testing.T, _ []byte, h pmtiles.Header, st pmwrite.Stats) {
			if h.RootLength > 60 || st.Leaves == 0 {
				t.Errorf("root: got %d bytes and %d leaves, want at most 60 and leaves", h.RootLength, st.Leaves)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			archive, st := write(t, tiles, keys, tc.opts, tc.limit)
			r := readBack(t, archive, tiles, 6)
			tc.check(t, archive, r.Header(), st)
		})
	}
}

// TestInternalCompressions: directories (with leaves) and metadata in each
// compression read back, and the header names it.
func TestInternalCompressions(t *testing.T) {
	t.Parallel()
	tiles, keys := pyramid(4, func(z uint8, x, y uint32) []byte { return []byte(fmt.Sprintf("tile %d/%d/%d", z, x, y)) })
	for _, c := range []pmtiles.Compression{pmtiles.CompressionNone, pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			meta := []byte(`{"name":"` + c.String() + `"}`)
			archive, st := write(t, tiles, keys, pmwrite.Options{InternalCompression: c, LeafEntries: 32, Metadata: meta}, 40)
			r := readBack(t, archive, tiles, 5)
			if got := r.Header().InternalCompression; got != c || st.Leaves == 0 {
				t.Errorf("header: got %v with %d leaves, want %v with leaves", got, st.Leaves, c)
			}
			if got, err := r.Metadata(context.Background()); err != nil || !bytes.Equal(got, meta) {
				t.Errorf("metadata: got %s, %v, want %s", got, err, meta)
			}
		})
	}
}

// TestLeavesPastTheWindow: leaves of a size given whose root would not fit
// the spec's window are refused, not written.
func TestLeavesPastTheWindow(t *testing.T) {
	t.Parallel()
	tiles, keys := pyramid(6, func(z uint8, x, y uint32) []byte { return []byte(fmt.Sprintf("tile %d/%d/%d", z, x, y)) })
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
	_, err = w.Finish(&out, pmwrite.Options{TileType: pmtiles.TileTypePNG, InternalCompression: pmtiles.CompressionNone, LeafEntries: 1})
	if !errors.Is(err, pmwrite.ErrInput) || out.Len() != 0 {
		t.Fatalf("got %v after %d bytes, want pmwrite.ErrInput and nothing written", err, out.Len())
	}
}

func TestCompress(t *testing.T) {
	t.Parallel()
	plain := bytes.Repeat([]byte("tilesieve "), 500)
	for _, c := range []pmtiles.Compression{pmtiles.CompressionNone, pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			a, err := pmwrite.Compress(plain, c)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := pmwrite.Compress(plain, c)
			if !bytes.Equal(a, b) {
				t.Errorf("two encodings of the same bytes differ")
			}
			back, err := pmtiles.Decompress(a, c, int64(len(plain)))
			if err != nil || !bytes.Equal(back, plain) {
				t.Errorf("round trip: got %d bytes, %v, want the %d given", len(back), err, len(plain))
			}
		})
	}
	if _, err := pmwrite.Compress(plain, 9); !errors.Is(err, pmwrite.ErrInput) {
		t.Errorf("unknown compression: got %v, want pmwrite.ErrInput", err)
	}
}
