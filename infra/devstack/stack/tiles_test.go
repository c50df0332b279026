package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

// TestLoadTiles: -tiles loads a tile directory and a .pmtiles archive into
// the embedded S3; both are served, have TileJSON and are in the catalog.
func TestLoadTiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "mine")
	pngTile := []byte("\x89PNG\r\n\x1a\nmine")
	filetree.Write(t, dir, map[string][]byte{
		"1/0/1.png":     pngTile,
		"metadata.json": []byte(`{"format":"png","maxzoom":"1"}`),
	})
	archiveTile := []byte("\x89PNG\r\n\x1a\narchived")
	archive := filepath.Join(t.TempDir(), "arch.pmtiles")
	if err := os.WriteFile(archive, pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 2, X: 1, Y: 3}: archiveTile}, pmtilestest.Options{Clustered: true}), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{Env: mapEnv(nil), Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Tiles: []string{dir, archive}})
	for path, want := range map[string][]byte{"/mine/1/0/1.png": pngTile, "/arch/2/1/3.png": archiveTile} {
		if a := get(t, st.URL+path); a.status != 200 || string(a.body) != string(want) {
			t.Errorf("%s: %d %q", path, a.status, a.body)
		}
	}
	for _, name := range []string{"mine", "arch"} {
		a := get(t, st.URL+"/"+name+".json")
		if a.status != 200 || !strings.Contains(string(a.body), st.URL+"/"+name+"/{z}/{x}/{y}.png") {
			t.Errorf("%s.json: %d %s", name, a.status, a.body)
		}
	}
	a := get(t, st.URL+"/_tilesieve/catalog")
	var c struct {
		Tilesets []struct{ Name, Kind string }
	}
	if err := json.Unmarshal(a.body, &c); err != nil || len(c.Tilesets) != 2 || c.Tilesets[0].Name != "arch" || c.Tilesets[1].Name != "mine" {
		t.Fatalf("catalog: %d %s", a.status, a.body)
	}
	if !strings.Contains(st.Banner(), "/arch.json") {
		t.Errorf("banner does not name the loaded tilesets:\n%s", st.Banner())
	}
}

// TestLoadRefusesBadArchive: -tiles with a truncated archive, or a file of
// random bytes named .pmtiles, stops the stack at start with one line that
// says why, instead of loading it and answering 502 for every tile.
func TestLoadRefusesBadArchive(t *testing.T) {
	t.Parallel()
	whole := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0}: []byte("\x89PNG\r\n\x1a\nzero"), {Z: 1, X: 1}: []byte("\x89PNG\r\n\x1a\none")}, pmtilestest.Options{Clustered: true})
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"cut.pmtiles", whole[:len(whole)-3], fmt.Sprintf("not a valid PMTiles v3 archive: pmtiles: header: tile data at %d+23 lies outside the archive (%d bytes): pmtiles: invalid archive", len(whole)-23, len(whole)-3)},
		{"random.pmtiles", bytes.Repeat([]byte{0xc3, 0x28, 0x07}, 3000), `not a valid PMTiles v3 archive: pmtiles: header: bad magic "\xc3(\a\xc3(\a\xc3": pmtiles: invalid archive`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, c.b, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := stack.Start(ctx, stack.Options{Env: mapEnv(nil), Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Tiles: []string{path}})
			if st != nil {
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					st.Close(ctx)
				})
			}
			want := "devstack: -tiles " + path + ": upload: " + path + ": " + c.want
			if err == nil || err.Error() != want {
				t.Errorf("got %v, want %s", err, want)
			}
		})
	}
}

// TestLoadMBTiles: -tiles ./mine.mbtiles is the tileset "mine", as a
// .pmtiles archive is: stored as TILES_PREFIX/mine.mbtiles, its tiles at
// /mine/{z}/{x}/{y}.png and its TileJSON at /mine.json.
func TestLoadMBTiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mine.mbtiles")
	sqlitetest.Write(t, path,
		`CREATE TABLE metadata (name text, value text)`,
		`INSERT INTO metadata VALUES ('name', 'Mine'), ('format', 'png')`,
		`CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob)`,
		// Row 0 at zoom 1 is the TMS bottom row: XYZ y = 1.
		`INSERT INTO tiles VALUES (1, 0, 0, X'89504e470d0a1a0a6d696e65')`,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{Env: mapEnv(nil), Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Tiles: []string{path}})
	if !slices.Equal(st.Loaded, []string{"mine"}) {
		t.Errorf("loaded %q, want [mine]", st.Loaded)
	}
	var keys []string
	out, err := st.Client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(st.Tiles.Bucket), Prefix: aws.String(st.Tiles.TilesPrefix + "mine")})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if want := []string{st.Tiles.TilesPrefix + "mine.mbtiles"}; !slices.Equal(keys, want) {
		t.Errorf("stored %q, want %q", keys, want)
	}
	if a := get(t, st.URL+"/mine/1/0/1.png"); a.status != 200 || string(a.body) != "\x89PNG\r\n\x1a\nmine" {
		t.Errorf("/mine/1/0/1.png: %d %q", a.status, a.body)
	}
	if a := get(t, st.URL+"/mine.json"); a.status != 200 || !strings.Contains(string(a.body), st.URL+"/mine/{z}/{x}/{y}.png") {
		t.Errorf("/mine.json: %d %s", a.status, a.body)
	}
	if b := st.Banner(); !strings.Contains(b, st.URL+"/mine.json") || strings.Contains(b, "mine.mbtiles") {
		t.Errorf("the banner does not name /mine.json alone:\n%s", b)
	}
}
