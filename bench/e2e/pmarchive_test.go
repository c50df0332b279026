package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gopm "github.com/protomaps/go-pmtiles/pmtiles"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// goPMTilesServer is go-pmtiles' own server (the code `pmtiles serve`
// runs) over the archives in dir.
func goPMTilesServer(t *testing.T, dir string) *gopm.Server {
	t.Helper()
	srv, err := gopm.NewServerWithBucket(gopm.NewFileBucket(dir), "", log.New(os.Stderr, "", 0), 16, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	return srv
}

// TestWritePMTilesRoundTrip writes an archive and reads tiles back through
// go-pmtiles' server, as the benchmark's `pmtiles serve` reads them.
func TestWritePMTilesRoundTrip(t *testing.T) {
	t.Parallel()
	// 7: 21,845 tiles whose random lengths keep their directory from
	// compressing into the 16 KiB root, so leaf directories.
	for _, maxZoom := range []uint8{3, 7} {
		t.Run(fmt.Sprintf("z0-%d", maxZoom), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(maxZoom), 1))
			var tiles []archiveTile
			for z := uint8(0); z <= maxZoom; z++ {
				for x := range uint32(1) << z {
					for y := range uint32(1) << z {
						body := fmt.Appendf(nil, "\xff\xd8jpeg %d/%d/%d %s", z, x, y, strings.Repeat("x", rng.IntN(200)))
						tiles = append(tiles, archiveTile{z, x, y, body})
					}
				}
			}
			dir := t.TempDir()
			if err := writePMTiles(filepath.Join(dir, "t.pmtiles"), tiles, pmtiles.TileTypeJPEG, "t"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "t.pmtiles"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := gopm.DeserializeHeader(b[:gopm.HeaderV3LenBytes])
			if err != nil {
				t.Fatal(err)
			}
			if h.TileEntriesCount != uint64(len(tiles)) || h.MaxZoom != maxZoom || h.TileType != gopm.Jpeg {
				t.Errorf("header: %+v", h)
			}
			if maxZoom == 7 && h.LeafDirectoryLength == 0 {
				t.Errorf("expected leaf directories for %d tiles", len(tiles))
			}
			srv := goPMTilesServer(t, dir)
			step := max(1, len(tiles)/500)
			for i := 0; i < len(tiles); i += step {
				tl := tiles[i]
				status, _, body := srv.Get(context.Background(), fmt.Sprintf("/t/%d/%d/%d.jpg", tl.z, tl.x, tl.y))
				if status != 200 || !bytes.Equal(body, tl.body) {
					t.Fatalf("tile %d/%d/%d: status %d, body %q, want %q", tl.z, tl.x, tl.y, status, body, tl.body)
				}
			}
			if status, _, _ := srv.Get(context.Background(), fmt.Sprintf("/t/%d/0/0.jpg", maxZoom+1)); status != 204 && status != 404 {
				t.Errorf("tile beyond max zoom: status %d", status)
			}
		})
	}
}

// TestWritePMTilesErrors: a file that cannot be created, tiles that cannot
// become an archive and a tile given twice are the writer's errors, and
// leave no file behind.
func TestWritePMTilesErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		path  string
		tiles []archiveTile
	}{
		{"no such directory", filepath.Join(dir, "missing", "t.pmtiles"), []archiveTile{{0, 0, 0, []byte("a")}}},
		{"no tiles", filepath.Join(dir, "empty.pmtiles"), nil},
		{"a tile twice", filepath.Join(dir, "twice.pmtiles"), []archiveTile{{1, 0, 0, []byte("a")}, {1, 0, 0, []byte("b")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := writePMTiles(tc.path, tc.tiles, pmtiles.TileTypeJPEG, "t")
			if err == nil || !strings.HasPrefix(err.Error(), "pmwrite: ") {
				t.Errorf("got %v, want a pmwrite error", err)
			}
			if _, err := os.Stat(tc.path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("file after the error: got %v, want none", err)
			}
		})
	}
}

// TestWritePMTilesDeduplicates: identical tiles are stored once, and each
// reads back whole through go-pmtiles' server.
func TestWritePMTilesDeduplicates(t *testing.T) {
	t.Parallel()
	shared := bytes.Repeat([]byte("shared "), 1000)
	tiles := []archiveTile{{0, 0, 0, []byte("own")}}
	for x := range uint32(4) {
		tiles = append(tiles, archiveTile{2, x, 0, shared})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "d.pmtiles")
	if err := writePMTiles(path, tiles, pmtiles.TileTypePNG, "d"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := gopm.DeserializeHeader(b[:gopm.HeaderV3LenBytes])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.TileDataLength, uint64(len(shared)+len("own")); got != want {
		t.Errorf("tile data: got %d bytes, want %d", got, want)
	}
	if got, want := h.TileContentsCount, uint64(2); got != want {
		t.Errorf("tile contents: got %d, want %d", got, want)
	}
	srv := goPMTilesServer(t, dir)
	for _, tl := range tiles {
		status, _, body := srv.Get(context.Background(), fmt.Sprintf("/d/%d/%d/%d.png", tl.z, tl.x, tl.y))
		if status != 200 || !bytes.Equal(body, tl.body) {
			t.Errorf("tile %d/%d/%d: got status %d, %d bytes, want 200, %d bytes", tl.z, tl.x, tl.y, status, len(body), len(tl.body))
		}
	}
}
