package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// runTool runs a GDAL tool; GDAL writes warnings to stderr, so only its
// exit status counts.
func runTool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", filepath.Base(args[0]), err, out)
	}
}

// TestUploadToPMTilesServed converts databases written by sqlite3 and by
// GDAL with `upload -to-pmtiles` and serves every tile through the tile
// function, byte for byte against sqlite3's own reading.
func TestUploadToPMTilesServed(t *testing.T) {
	dir := t.TempDir()
	sqliteDB := func(t *testing.T) (string, string) {
		db := filepath.Join(dir, "roads.mbtiles")
		var s strings.Builder
		s.WriteString("BEGIN;\nCREATE TABLE metadata (name text, value text);\n")
		s.WriteString("INSERT INTO metadata VALUES ('name', 'Roads'), ('format', 'pbf'), ('bounds', '-10,-20,30,40'), ('center', '1,2,1'),\n" +
			`  ('json', '{"vector_layers":[{"id":"roads","fields":{}}]}');` + "\n")
		s.WriteString("CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\n")
		for z := 0; z <= 3; z++ {
			for x := 0; x < 1<<z; x++ {
				for row := 0; row < 1<<z; row++ {
					fmt.Fprintf(&s, "INSERT INTO tiles VALUES (%d, %d, %d, X'%x');\n", z, x, row, gzBytes(fmt.Sprintf("mvt %d/%d/%d", z, x, row)))
				}
			}
		}
		s.WriteString("COMMIT;\n")
		sqlitetest.Run(t, db, s.String())
		return db, "pbf"
	}
	gdalDB := func(t *testing.T) (string, string) {
		create, translate := sqlitetest.Need(t, "gdal_create", "gdal-bin"), sqlitetest.Need(t, "gdal_translate", "gdal-bin")
		tif, db := filepath.Join(dir, "in.tif"), filepath.Join(dir, "sat.mbtiles")
		runTool(t, create, "-of", "GTiff", "-outsize", "512", "512", "-bands", "3", "-burn", "200", "-burn", "100", "-burn", "50",
			"-a_srs", "EPSG:3857", "-a_ullr", "-20037508.34", "20037508.34", "20037508.34", "-20037508.34", tif)
		runTool(t, translate, "-q", "-of", "MBTILES", tif, db)
		return db, "png"
	}
	for _, tc := range []struct {
		name  string
		build func(t *testing.T) (string, string)
		ctype string
		cenc  string
	}{
		{"sqlite3", sqliteDB, "application/vnd.mapbox-vector-tile", "gzip"},
		{"gdal_translate", gdalDB, "image/png", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, ext := tc.build(t)
			want := sqlitetest.ReadTiles(t, db)
			ep := s3localtest.Start(t, "tiles")
			env := localEnv(t, ep)
			var out, errOut bytes.Buffer
			if code := run(context.Background(), []string{"upload", "-quiet", "-to-pmtiles", db, "s3://tiles/tiles/" + tc.name}, func(k string) string { return env[k] }, &out, &errOut); code != 0 {
				t.Fatalf("upload: code %d: %s%s", code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), "converted to PMTiles: "+strconv.Itoa(len(want))+" tiles") {
				t.Errorf("stdout %q: want the conversion reported with %d tiles", out.String(), len(want))
			}
			vars := map[string]string{"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "16MiB"}
			cfg, err := config.LoadTiles(func(k string) string { return vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(ep.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"}), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			for at, b := range want {
				k := fmt.Sprintf("%d/%d/%d", at.Z, at.X, at.Y)
				req := httptest.NewRequest("GET", "/"+tc.name+"/"+k+"."+ext, nil)
				req.Header.Set("Accept-Encoding", "gzip")
				rec := httptest.NewRecorder()
				a.Handler.ServeHTTP(rec, req)
				if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), b) || rec.Header().Get("Content-Type") != tc.ctype || rec.Header().Get("Content-Encoding") != tc.cenc {
					t.Errorf("%s: got %d, %d bytes, %q, %q; want 200, sqlite3's %d bytes, %q, %q", k, rec.Code, rec.Body.Len(),
						rec.Header().Get("Content-Type"), rec.Header().Get("Content-Encoding"), len(b), tc.ctype, tc.cenc)
				}
			}
			rec := httptest.NewRecorder()
			a.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/"+tc.name+".json", nil))
			var tj struct {
				Tiles  []string  `json:"tiles"`
				Bounds []float64 `json:"bounds"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &tj); rec.Code != 200 || err != nil || len(tj.Tiles) != 1 || !strings.HasSuffix(tj.Tiles[0], "/"+tc.name+"/{z}/{x}/{y}."+ext) || len(tj.Bounds) != 4 {
				t.Errorf("TileJSON: got %d %s, want tiles of .%s and bounds", rec.Code, rec.Body.Bytes(), ext)
			}
		})
	}
}

func gzBytes(s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}
