package pmcheck

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	gopm "github.com/protomaps/go-pmtiles/pmtiles"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

// writeOurs writes tiles with the product's writer, in map order (random).
func writeOurs(t *testing.T, tiles map[pmtiles.ZXY][]byte, opts pmwrite.Options) []byte {
	t.Helper()
	w, err := pmwrite.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for tl, b := range tiles {
		if err := w.Add(tl.Z, tl.X, tl.Y, b); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if _, err := w.Finish(&out, opts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestWriterReadByGoPmtiles: archives of the product's writer pass
// go-pmtiles' verify, and go-pmtiles' server answers every tile with the
// bytes given, byte for byte; the header's counts (what dedup and run
// lengths made of the tiles) equal those of go-pmtiles' own converter on
// the same tiles.
func TestWriterReadByGoPmtiles(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	random := func(uint8, uint32, uint32) []byte {
		b := make([]byte, 1+rng.IntN(60))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for _, c := range []struct {
		name       string
		tiles      map[pmtiles.ZXY][]byte
		opts       pmwrite.Options
		format     string
		wantLeaves bool
	}{
		{"png with runs, root only", pyramid(6, true, pngBody), pmwrite.Options{TileType: pmtiles.TileTypePNG}, "png", false},
		{"gzip mvt with runs", pyramid(5, true, mvtBody), pmwrite.Options{TileType: pmtiles.TileTypeMVT, TileCompression: pmtiles.CompressionGzip}, "pbf", false},
		{"distinct tiles, leaf directories", pyramid(7, false, random), pmwrite.Options{TileType: pmtiles.TileTypePNG}, "png", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := writeOurs(t, c.tiles, c.opts)
			h := readAll(t, b, c.tiles, c.wantLeaves)
			dir := t.TempDir()
			path := filepath.Join(dir, "t.pmtiles")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := gopm.Verify(log.New(io.Discard, "", 0), path); err != nil {
				t.Fatalf("go-pmtiles verify: %v", err)
			}
			srv, err := gopm.NewServerWithBucket(gopm.NewFileBucket(dir), "", log.New(io.Discard, "", 0), 16, "")
			if err != nil {
				t.Fatal(err)
			}
			srv.Start()
			ext := map[string]string{"png": "png", "pbf": "mvt"}[c.format]
			for tl, want := range c.tiles {
				status, _, body := srv.Get(context.Background(), fmt.Sprintf("/t/%d/%d/%d.%s", tl.Z, tl.X, tl.Y, ext))
				if status != 200 || !bytes.Equal(body, want) {
					t.Fatalf("tile %v: go-pmtiles answered %d with %d bytes, want 200 with the %d bytes written", tl, status, len(body), len(want))
				}
			}
			if status, _, _ := srv.Get(context.Background(), fmt.Sprintf("/t/%d/0/0.%s", h.MaxZoom+1, ext)); status != 204 && status != 404 {
				t.Errorf("tile past the max zoom: got %d, want 204 or 404", status)
			}
			ref, err := gopm.DeserializeHeader(convert(t, c.tiles, map[string]string{"format": c.format}, true)[:gopm.HeaderV3LenBytes])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(h.AddressedTilesCount, h.TileEntriesCount, h.TileContentsCount, h.MinZoom, h.MaxZoom, uint8(h.TileType), h.Clustered),
				fmt.Sprint(ref.AddressedTilesCount, ref.TileEntriesCount, ref.TileContentsCount, ref.MinZoom, ref.MaxZoom, uint8(ref.TileType), ref.Clustered); got != want {
				t.Errorf("tiles, entries, contents, zooms, type, clustered: got %v, want go-pmtiles convert's %v", got, want)
			}
		})
	}
}
