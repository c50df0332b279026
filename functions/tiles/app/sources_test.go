package app_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestArchiveSources: a source that names one archive serves it as its
// tileset: a PMTiles archive staged at start (STAGE_PREFIXES) into a
// directory of its own, and an MBTiles database staged on first use, both
// from the source's requester-pays bucket (every read, the staging's ranged
// downloads too, accepts the charge), while the default bucket's archives
// of the same names are not read.
func TestArchiveSources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var refused atomic.Int64
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{"tiles", "maps-archive"}}, s3localtest.RequesterPays("maps-archive", &refused))
	api := ep.Client
	mb, mbTiles := writeMBTiles(t)
	tiles := map[pmtiles.ZXY][]byte{}
	for x := range uint32(2) {
		for y := range uint32(2) {
			tiles[pmtiles.ZXY{Z: 1, X: x, Y: y}] = []byte(fmt.Sprintf("world 1/%d/%d", x, y))
		}
	}
	shadowed := pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 1}: []byte("the default bucket's")}, pmtilestest.Options{TileType: pmtiles.TileTypePNG})
	for _, o := range []struct {
		bucket, key string
		body        []byte
	}{
		{"maps-archive", "2024/world.pmtiles", pmtilestest.Build(tiles, pmtilestest.Options{TileType: pmtiles.TileTypePNG})},
		{"maps-archive", "db/topo-v2.mbtiles", mb},
		{"tiles", "tiles/world.pmtiles", shadowed},
		{"tiles", "tiles/topo.pmtiles", shadowed},
	} {
		s3localtest.Put(t, api, o.bucket, o.key, o.body, "application/octet-stream", "")
	}
	env := map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "16MiB",
		"SOURCES":        "world=s3://maps-archive/2024/world.pmtiles?requester-pays, topo=s3://maps-archive/db/topo-v2.mbtiles?requester-pays",
		"STAGE_PREFIXES": "world.pmtiles",
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.NewWithOrigin(ctx, cfg, origin.NewWithS3(api, app.OriginConfig(cfg)), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a, cfg) })
	if len(a.StagedArchives) != 1 || a.StagedArchives[0] != "world.pmtiles" {
		t.Fatalf("staged archives %v, want world.pmtiles", a.StagedArchives)
	}
	if files, _ := filepath.Glob(filepath.Join(cfg.DiskDir, "archives", "sources", "world", "*")); len(files) != 1 {
		t.Errorf("the source's staged copy: got %v, want one file in archives/sources/world", files)
	}
	want := map[string][]byte{}
	for zxy, b := range tiles {
		want[fmt.Sprintf("/world/%d/%d/%d.png", zxy.Z, zxy.X, zxy.Y)] = b
	}
	for p, b := range mbTiles {
		want[p] = b
	}
	for p, body := range want {
		rec := get(a, p)
		if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), body) {
			t.Errorf("GET %s: got %d %q, want 200 %q", p, rec.Code, rec.Body, body)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(cfg.DiskDir, "archives", "sources", "topo", "*")); len(files) != 1 {
		t.Errorf("the database's staged copy: got %v, want one file in archives/sources/topo", files)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d reads of the requester-pays bucket without the header, want none", n)
	}
}
