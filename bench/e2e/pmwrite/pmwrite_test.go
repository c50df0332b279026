package pmwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protomaps/go-pmtiles/pmtiles"
)

// TestRoundTrip writes an archive and reads every tile back through
// go-pmtiles' own server (the code `pmtiles serve` runs).
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, maxZoom := range []uint8{3, 7} { // 7: 21,845 tiles, so leaf directories
		t.Run(fmt.Sprintf("z0-%d", maxZoom), func(t *testing.T) {
			t.Parallel()
			var tiles []Tile
			for z := uint8(0); z <= maxZoom; z++ {
				for x := range uint32(1) << z {
					for y := range uint32(1) << z {
						tiles = append(tiles, Tile{Z: z, X: x, Y: y, Body: []byte(fmt.Sprintf("\xff\xd8jpeg %d/%d/%d", z, x, y))})
					}
				}
			}
			dir := t.TempDir()
			if err := WriteFile(filepath.Join(dir, "t.pmtiles"), tiles, pmtiles.Jpeg, "t"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "t.pmtiles"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := pmtiles.DeserializeHeader(b[:pmtiles.HeaderV3LenBytes])
			if err != nil {
				t.Fatal(err)
			}
			if h.TileEntriesCount != uint64(len(tiles)) || h.MaxZoom != maxZoom || h.TileType != pmtiles.Jpeg {
				t.Errorf("header: %+v", h)
			}
			if maxZoom == 7 && h.LeafDirectoryLength == 0 {
				t.Errorf("expected leaf directories for %d tiles", len(tiles))
			}
			srv, err := pmtiles.NewServerWithBucket(pmtiles.NewFileBucket(dir), "", log.New(os.Stderr, "", 0), 16, "")
			if err != nil {
				t.Fatal(err)
			}
			srv.Start()
			step := max(1, len(tiles)/500)
			for i := 0; i < len(tiles); i += step {
				tl := tiles[i]
				status, _, body := srv.Get(context.Background(), fmt.Sprintf("/t/%d/%d/%d.jpg", tl.Z, tl.X, tl.Y))
				if status != 200 || !bytes.Equal(body, tl.Body) {
					t.Fatalf("tile %d/%d/%d: status %d, body %q, want %q", tl.Z, tl.X, tl.Y, status, body, tl.Body)
				}
			}
			if status, _, _ := srv.Get(context.Background(), fmt.Sprintf("/t/%d/0/0.jpg", maxZoom+1)); status != 204 && status != 404 {
				t.Errorf("tile beyond max zoom: status %d", status)
			}
		})
	}
}

func TestDuplicate(t *testing.T) {
	t.Parallel()
	err := Write(&bytes.Buffer{}, []Tile{{Z: 1, Body: []byte("a")}, {Z: 1, Body: []byte("b")}}, pmtiles.Jpeg, "t")
	if err == nil {
		t.Errorf("duplicate tile accepted")
	}
}

// TestWriteFileErrors: a file that cannot be created and tiles that cannot
// become an archive are errors of the package.
func TestWriteFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		path  string
		tiles []Tile
	}{
		{"no such directory", filepath.Join(dir, "missing", "t.pmtiles"), []Tile{{Z: 0, Body: []byte("a")}}},
		{"no tiles", filepath.Join(dir, "empty.pmtiles"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFile(tc.path, tc.tiles, pmtiles.Jpeg, "t")
			if err == nil || !strings.HasPrefix(err.Error(), "pmwrite: ") {
				t.Errorf("got %v, want a pmwrite error", err)
			}
			if _, err := os.Stat(tc.path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("file after the error: got %v, want none", err)
			}
		})
	}
}

// TestDeduplicates: tiles sharing one Body are stored once, and each reads
// back whole through go-pmtiles' server.
func TestDeduplicates(t *testing.T) {
	t.Parallel()
	shared := bytes.Repeat([]byte("shared "), 1000)
	tiles := []Tile{{Z: 0, X: 0, Y: 0, Body: []byte("own")}}
	for x := range uint32(4) {
		tiles = append(tiles, Tile{Z: 2, X: x, Y: 0, Body: shared})
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := Write(&buf, tiles, pmtiles.Png, "d"); err != nil {
		t.Fatal(err)
	}
	h, err := pmtiles.DeserializeHeader(buf.Bytes()[:pmtiles.HeaderV3LenBytes])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.TileDataLength, uint64(len(shared)+len("own")); got != want {
		t.Errorf("tile data: got %d bytes, want %d", got, want)
	}
	if got, want := h.TileContentsCount, uint64(2); got != want {
		t.Errorf("tile contents: got %d, want %d", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "d.pmtiles"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := pmtiles.NewServerWithBucket(pmtiles.NewFileBucket(dir), "", log.New(os.Stderr, "", 0), 16, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	for _, tl := range tiles {
		status, _, body := srv.Get(context.Background(), fmt.Sprintf("/d/%d/%d/%d.png", tl.Z, tl.X, tl.Y))
		if status != 200 || !bytes.Equal(body, tl.Body) {
			t.Errorf("tile %d/%d/%d: got status %d, %d bytes, want 200, %d bytes", tl.Z, tl.X, tl.Y, status, len(body), len(tl.Body))
		}
	}
}
