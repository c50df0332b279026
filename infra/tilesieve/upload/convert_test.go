package upload_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/infra/tilesieve/upload"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles/sqlitetest"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

type tileKey struct {
	z    uint8
	x, y uint32 // XYZ rows
}

// sqliteDB writes an MBTiles database with the sqlite3 tool from tiles
// keyed by XYZ rows (stored as TMS rows).
func sqliteDB(t *testing.T, path string, tiles map[tileKey][]byte, meta map[string]string) {
	t.Helper()
	var s strings.Builder
	s.WriteString("BEGIN;\nCREATE TABLE metadata (name text, value text);\n")
	for k, v := range meta {
		fmt.Fprintf(&s, "INSERT INTO metadata VALUES ('%s', '%s');\n", k, strings.ReplaceAll(v, "'", "''"))
	}
	s.WriteString("CREATE TABLE tiles (zoom_level integer, tile_column integer, tile_row integer, tile_data blob);\n")
	for k, b := range tiles {
		fmt.Fprintf(&s, "INSERT INTO tiles VALUES (%d, %d, %d, X'%x');\n", k.z, k.x, (1<<k.z-1)-k.y, b)
	}
	s.WriteString("COMMIT;\n")
	sqlitetest.Run(t, path, s.String())
}

// sqliteTiles is every tile of db as the sqlite3 tool reads it, keyed by
// XYZ rows.
func sqliteTiles(t *testing.T, db string) map[tileKey][]byte {
	t.Helper()
	out := sqlitetest.Run(t, db, "SELECT zoom_level || ' ' || tile_column || ' ' || tile_row || ' ' || hex(tile_data) FROM tiles;\n")
	tiles := map[tileKey][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := append(strings.Fields(line), "")
		z, _ := strconv.Atoi(f[0])
		x, _ := strconv.Atoi(f[1])
		row, _ := strconv.Atoi(f[2])
		b, err := hex.DecodeString(f[3])
		if err != nil {
			t.Fatal(err)
		}
		tiles[tileKey{uint8(z), uint32(x), uint32((1<<z - 1) - row)}] = b
	}
	return tiles
}

// readArchive opens an archive's bytes with the product's reader.
func readArchive(t *testing.T, b []byte) *pmtiles.Reader {
	t.Helper()
	return pmtilestest.Open(t, b)
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestToPMTilesDatabase(t *testing.T) {
	t.Parallel()
	vector := map[tileKey][]byte{}
	raster := map[tileKey][]byte{}
	for z := uint8(0); z <= 2; z++ {
		for x := uint32(0); x < 1<<z; x++ {
			for y := uint32(0); y < 1<<z; y++ {
				vector[tileKey{z, x, y}] = gz([]byte(fmt.Sprintf("mvt %d/%d/%d", z, x, y)))
				raster[tileKey{z, x, y}] = []byte(fmt.Sprintf("\x89PNG\r\n\x1a\n %d/%d/%d", z, x, y))
			}
		}
	}
	vector[tileKey{2, 3, 3}] = vector[tileKey{2, 0, 0}] // stored once in the archive
	raster[tileKey{2, 1, 2}] = nil                      // an empty tile: left out
	for _, tc := range []struct {
		name         string
		tiles        map[tileKey][]byte
		meta         map[string]string
		wantType     pmtiles.TileType
		wantComp     pmtiles.Compression
		wantBounds   [4]float64
		wantCenter   [3]float64
		wantMeta     map[string]any
		wantContents uint64
		wantEmpty    uint64
	}{
		{
			name:  "vector tiles, tippecanoe metadata",
			tiles: vector,
			meta: map[string]string{"name": "Roads", "format": "pbf", "bounds": "-10,-20,30,40", "center": "1,2,1", "minzoom": "0", "maxzoom": "2",
				"attribution": "© us", "json": `{"vector_layers":[{"id":"roads","fields":{}}],"tilestats":{"layerCount":1}}`},
			wantType: pmtiles.TileTypeMVT, wantComp: pmtiles.CompressionGzip,
			wantBounds: [4]float64{-10, -20, 30, 40}, wantCenter: [3]float64{1, 2, 1},
			wantMeta: map[string]any{"name": "Roads", "attribution": "© us",
				"vector_layers": []any{map[string]any{"id": "roads", "fields": map[string]any{}}}, "tilestats": map[string]any{"layerCount": 1.0}},
			wantContents: 20,
		},
		{
			name:     "raster tiles, no format row, center without zoom",
			tiles:    raster,
			meta:     map[string]string{"name": "Sat", "center": "5,6"},
			wantType: pmtiles.TileTypePNG, wantComp: pmtiles.CompressionNone,
			wantBounds: [4]float64{-180, -85.0511288, 180, 85.0511288}, wantCenter: [3]float64{5, 6, 0},
			wantMeta:     map[string]any{"name": "Sat"},
			wantContents: 20, wantEmpty: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := s3localtest.Start(t, bucket)
			path := filepath.Join(t.TempDir(), "in.mbtiles")
			sqliteDB(t, path, tc.tiles, tc.meta)
			want := sqliteTiles(t, path)
			tmp := t.TempDir()
			dst := upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "roads"}
			var progress bytes.Buffer
			rep := run(t, ep.Client, path, dst, upload.Options{ToPMTiles: true, TempDir: tmp, Progress: &progress})
			if rep.Uploaded != 1 || rep.Converted == nil || rep.Converted.Stats.Contents != tc.wantContents || rep.Converted.Stats.Empty != tc.wantEmpty {
				t.Errorf("got %+v (converted %+v), want 1 uploaded, %d distinct tiles, %d empty", rep, rep.Converted, tc.wantContents, tc.wantEmpty)
			}
			if !strings.Contains(progress.String(), "converted "+path+" to PMTiles") {
				t.Errorf("progress: got %q, want a line about the conversion", progress.String())
			}
			if got := keys(t, ep.Client); len(got) != 1 || got[0] != "tiles/roads.pmtiles" {
				t.Fatalf("objects: got %v, want only tiles/roads.pmtiles", got)
			}
			o := get(t, ep.Client, "tiles/roads.pmtiles")
			if o.ctype != "application/vnd.pmtiles" || o.cenc != "" || o.sha256hex != sum(o.body) {
				t.Errorf("got Content-Type %q, Content-Encoding %q, want application/vnd.pmtiles, none, with its SHA-256", o.ctype, o.cenc)
			}
			r := readArchive(t, o.body)
			for k, b := range want {
				got, ok, err := r.ReadTile(context.Background(), k.z, k.x, k.y)
				if err != nil || ok != (len(b) > 0) || !bytes.Equal(got, b) {
					t.Errorf("tile %d/%d/%d: got %d bytes (%v, %v), want sqlite3's %d bytes", k.z, k.x, k.y, len(got), ok, err, len(b))
				}
			}
			h := r.Header()
			if h.TileType != tc.wantType || h.TileCompression != tc.wantComp || h.MinZoom != 0 || h.MaxZoom != 2 {
				t.Errorf("header: got %v tiles, %v, zooms %d-%d, want %v, %v, 0-2", h.TileType, h.TileCompression, h.MinZoom, h.MaxZoom, tc.wantType, tc.wantComp)
			}
			if got := h.Bounds(); got != tc.wantBounds {
				t.Errorf("bounds: got %v, want %v", got, tc.wantBounds)
			}
			if got := h.Center(); got != tc.wantCenter {
				t.Errorf("center: got %v, want %v", got, tc.wantCenter)
			}
			raw, err := r.Metadata(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var meta map[string]any
			if err := json.Unmarshal(raw, &meta); err != nil || fmt.Sprint(meta) != fmt.Sprint(tc.wantMeta) {
				t.Errorf("metadata: got %s, want %v", raw, tc.wantMeta)
			}
			// The conversion is deterministic: a second run uploads nothing.
			rep, err = upload.Run(context.Background(), ep.Client, path, dst, upload.Options{ToPMTiles: true, TempDir: tmp})
			if err != nil || rep.Uploaded != 0 || rep.Skips[upload.SkipUnchanged] != 1 {
				t.Errorf("second run: got %+v, %v, want it skipped as unchanged", rep, err)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left: got %v, want none", left)
			}
		})
	}
}

func TestToPMTilesDirectory(t *testing.T) {
	t.Parallel()
	ep := s3localtest.Start(t, bucket)
	dir := t.TempDir()
	files := map[string][]byte{
		"0/0/0.pbf":     []byte("\x1a\x05water"),
		"1/0/0.pbf":     []byte("\x1a\x04land"),
		"1/1/1.pbf":     gz([]byte("\x1a\x04gzip")),
		"metadata.json": []byte(`{"name":"Osm","bounds":"-180,-85,180,85","json":"{\"vector_layers\":[{\"id\":\"water\"}]}"}`),
		"style.json":    []byte(`{"version":8,"sources":{},"layers":[]}`),
		"sprite.png":    []byte("\x89PNG\r\n\x1a\n sprite"),
	}
	filetree.Write(t, dir, files)
	dst := upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "osm"}
	rep := run(t, ep.Client, dir, dst, upload.Options{ToPMTiles: true, GzipVectorTiles: true, TempDir: t.TempDir()})
	if got, want := strings.Join(keys(t, ep.Client), " "), "tiles/osm.pmtiles tiles/osm/sprite.png tiles/osm/style.json"; got != want || rep.Uploaded != 3 {
		t.Fatalf("objects: got %v (%d uploaded), want %v", got, rep.Uploaded, want)
	}
	r := readArchive(t, get(t, ep.Client, "tiles/osm.pmtiles").body)
	if h := r.Header(); h.TileType != pmtiles.TileTypeMVT || h.TileCompression != pmtiles.CompressionGzip || h.Bounds() != [4]float64{-180, -85, 180, 85} {
		t.Errorf("header: got %v, %v, bounds %v, want mvt, gzip, the metadata's bounds", h.TileType, h.TileCompression, h.Bounds())
	}
	for rel, b := range files {
		var z uint8
		var x, y uint32
		if _, err := fmt.Sscanf(rel, "%d/%d/%d.pbf", &z, &x, &y); err != nil {
			continue
		}
		got, ok, err := r.ReadTile(context.Background(), z, x, y)
		if err != nil || !ok {
			t.Fatalf("%s: %v, %v", rel, ok, err)
		}
		if upload.IsGzip(b) {
			b = gunzip(t, b)
		}
		if g := gunzip(t, got); !bytes.Equal(g, b) {
			t.Errorf("%s: got %q decompressed, want %q", rel, g, b)
		}
	}
	meta, _ := r.Metadata(context.Background())
	if !bytes.Contains(meta, []byte(`"vector_layers":[{"id":"water"}]`)) || bytes.Contains(meta, []byte(`"json"`)) {
		t.Errorf("metadata: got %s, want vector_layers at the top level", meta)
	}
}

func TestToPMTilesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   map[string][]byte
		gzip    bool
		wantErr string
	}{
		{"two formats", map[string][]byte{"0/0/0.png": []byte("\x89PNG"), "1/0/0.jpg": []byte("\xff\xd8\xff")}, false, "tiles of two formats (png and jpg)"},
		{"two compressions", map[string][]byte{"0/0/0.pbf": gz([]byte("a")), "1/0/0.pbf": []byte("b")}, false, "tile 1/0/0 is stored with compression none, earlier tiles with gzip"},
		{"metadata not an object", map[string][]byte{"0/0/0.png": []byte("\x89PNG"), "metadata.json": []byte(`[]`)}, false, "metadata.json: not a JSON object"},
		{"bad bounds", map[string][]byte{"0/0/0.png": []byte("\x89PNG"), "metadata.json": []byte(`{"bounds":"a,b"}`)}, false, `bounds: "a,b": not numbers`},
		{"bounds reversed", map[string][]byte{"0/0/0.png": []byte("\x89PNG"), "metadata.json": []byte(`{"bounds":[10,0,5,1]}`)}, false, "bounds [10 0 5 1]"},
		{"only a style", map[string][]byte{"style.json": []byte(`{}`)}, false, "no z/x/y.ext tiles to convert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := s3localtest.Start(t, bucket)
			dir, tmp := t.TempDir(), t.TempDir()
			filetree.Write(t, dir, tc.files)
			_, err := upload.Run(context.Background(), ep.Client, dir, upload.Destination{Bucket: bucket, Prefix: "tiles/", Name: "x"}, upload.Options{ToPMTiles: true, GzipVectorTiles: tc.gzip, TempDir: tmp})
			if !errors.Is(err, upload.ErrSource) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want ErrSource saying %q", err, tc.wantErr)
			}
			if n := strings.Count(err.Error(), "upload: "); n != 1 {
				t.Errorf("%q: got %d upload: prefixes, want 1", err, n)
			}
			if got := keys(t, ep.Client); len(got) != 0 {
				t.Errorf("objects: got %v, want none", got)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left: got %v, want none", left)
			}
		})
	}
}
