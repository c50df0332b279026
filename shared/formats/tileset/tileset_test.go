package tileset_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
)

// tippecanoeMetadata is metadata.json as tippecanoe -e writes it: every
// value a string, vector_layers inside "json".
const tippecanoeMetadata = `{
  "name": "roads.mbtiles",
  "description": "Roads of the city",
  "version": "2",
  "minzoom": "0",
  "maxzoom": "14",
  "center": "-122.419416,37.774929,14",
  "bounds": "-122.515,37.708,-122.356,37.832",
  "type": "overlay",
  "format": "pbf",
  "attribution": "<a href=\"https://www.openstreetmap.org/copyright\">© OpenStreetMap</a>",
  "generator": "tippecanoe v2.53.0",
  "generator_options": "tippecanoe -e roads roads.geojson",
  "json": "{\"vector_layers\":[{\"id\":\"roads\",\"description\":\"\",\"minzoom\":0,\"maxzoom\":14,\"fields\":{\"name\":\"String\"}}],\"tilestats\":{\"layerCount\":1}}"
}`

func TestFromMetadataTippecanoe(t *testing.T) {
	t.Parallel()
	got, err := tileset.FromMetadata("https://tiles.example.com/", "city/roads", []byte(tippecanoeMetadata))
	if err != nil {
		t.Fatal(err)
	}
	want := tileset.TileJSON{
		TileJSON:     "3.0.0",
		Name:         "roads.mbtiles",
		Description:  "Roads of the city",
		Version:      "2",
		Attribution:  `<a href="https://www.openstreetmap.org/copyright">© OpenStreetMap</a>`,
		Scheme:       "xyz",
		Tiles:        []string{"https://tiles.example.com/city/roads/{z}/{x}/{y}.pbf"},
		MinZoom:      0,
		MaxZoom:      14,
		Bounds:       []float64{-122.515, 37.708, -122.356, 37.832},
		Center:       []float64{-122.419416, 37.774929, 14},
		VectorLayers: json.RawMessage(`[{"id":"roads","description":"","minzoom":0,"maxzoom":14,"fields":{"name":"String"}}]`),
		Format:       "pbf",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// The document is valid JSON with the TileJSON field names, URLs unescaped.
	var doc map[string]any
	if err := json.Unmarshal(got.Marshal(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["tilejson"] != "3.0.0" || doc["tiles"].([]any)[0] != want.Tiles[0] || doc["vector_layers"] == nil {
		t.Errorf("marshalled: got %s", got.Marshal())
	}
}

func TestFromMetadataVariants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, meta string
		wantExt    string
		wantMaxZ   int
		wantErr    error
	}{
		{"raster with numbers", `{"format":"png","minzoom":2,"maxzoom":9,"bounds":[-10,-10,10,10],"center":[0,0,4]}`, "png", 9, nil},
		{"jpeg", `{"format":"jpeg"}`, "jpg", pmtiles.MaxZoom, nil},
		{"vector_layers at the top, no format", `{"vector_layers":[]}`, "pbf", pmtiles.MaxZoom, nil},
		{"no format", `{"name":"x"}`, "", 0, tileset.ErrMetadata},
		{"unknown format", `{"format":"tiff"}`, "", 0, tileset.ErrMetadata},
		{"not an object", `[1]`, "", 0, tileset.ErrMetadata},
		{"not JSON", `{"format":`, "", 0, tileset.ErrMetadata},
		{"bad bounds", `{"format":"png","bounds":"1,2,3"}`, "", 0, tileset.ErrMetadata},
		{"bad zoom", `{"format":"png","maxzoom":"fourteen"}`, "", 0, tileset.ErrMetadata},
		{"zooms reversed", `{"format":"png","minzoom":"5","maxzoom":"4"}`, "", 0, tileset.ErrMetadata},
		{"bad json field", `{"format":"pbf","json":"{"}`, "", 0, tileset.ErrMetadata},
		{"vector_layers not an array", `{"format":"pbf","vector_layers":{}}`, "", 0, tileset.ErrMetadata},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := tileset.FromMetadata("http://localhost:8080", "t", []byte(c.meta))
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("got %v, want %v", err, c.wantErr)
			}
			if err != nil {
				return
			}
			if want := "http://localhost:8080/t/{z}/{x}/{y}." + c.wantExt; got.Tiles[0] != want || got.MaxZoom != c.wantMaxZ {
				t.Errorf("got %v zooms ..%d, want %v ..%d", got.Tiles, got.MaxZoom, want, c.wantMaxZ)
			}
		})
	}
}

func TestTileURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		base, name, want string
		ok               bool
	}{
		{"https://d1.cloudfront.net", "osm", "https://d1.cloudfront.net/osm/{z}/{x}/{y}.png", true},
		{"https://h/tiles/", "a b/c", "https://h/tiles/a%20b/c/{z}/{x}/{y}.png", true},
		// The base is checked by the one rule for it (internal/httpurl, tested
		// there): user info is refused by that rule and not by a bare parse.
		{"https://user:secret@h", "osm", "", false},
		{"https://h", "/osm", "", false},
		{"https://h", "a/../b", "", false},
		{"https://h", "", "", false},
	} {
		t.Run(c.base+" "+c.name, func(t *testing.T) {
			got, err := tileset.TileURL(c.base, c.name, "png")
			if (err == nil) != c.ok || got != c.want {
				t.Errorf("got %q, %v, want %q (ok=%v)", got, err, c.want, c.ok)
			}
		})
	}
}

func TestFromArchive(t *testing.T) {
	t.Parallel()
	tiles := map[pmtiles.ZXY][]byte{{Z: 3, X: 1, Y: 2}: []byte("a"), {Z: 5, X: 4, Y: 9}: []byte("b")}
	for _, c := range []struct {
		name   string
		tt     pmtiles.TileType
		meta   any
		ext    string
		layers string
	}{
		{"vector with layers", pmtiles.TileTypeMVT, map[string]any{"name": "Base", "attribution": "© OSM", "description": "d", "vector_layers": []any{map[string]any{"id": "water", "fields": map[string]any{}}}}, "pbf", `[{"fields":{},"id":"water"}]`},
		{"vector without layers", pmtiles.TileTypeMVT, nil, "pbf", `[]`},
		{"webp", pmtiles.TileTypeWebP, map[string]any{"name": "Imagery"}, "webp", ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := pmtilestest.Build(tiles, pmtilestest.Options{Clustered: true, TileType: c.tt, Metadata: c.meta, InternalCompression: pmtiles.CompressionGzip,
				Edit: func(h *pmtiles.Header) { h.CenterLonE7, h.CenterLatE7, h.CenterZoom = 100000000, -200000000, 4 }})
			r := pmtilestest.Open(t, b)
			meta, err := r.Metadata(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, err := tileset.FromArchive("https://cdn.example", "sat", r.Header(), meta)
			if err != nil {
				t.Fatal(err)
			}
			if want := "https://cdn.example/sat/{z}/{x}/{y}." + c.ext; got.Tiles[0] != want {
				t.Errorf("tiles: got %v, want %v", got.Tiles, want)
			}
			if got.MinZoom != 3 || got.MaxZoom != 5 {
				t.Errorf("zooms: got %d-%d, want 3-5", got.MinZoom, got.MaxZoom)
			}
			if want := []float64{-180, -85.0511287, 180, 85.0511287}; !reflect.DeepEqual(got.Bounds, want) {
				t.Errorf("bounds: got %v, want %v", got.Bounds, want)
			}
			if want := []float64{10, -20, 4}; !reflect.DeepEqual(got.Center, want) {
				t.Errorf("center: got %v, want %v", got.Center, want)
			}
			if string(got.VectorLayers) != c.layers {
				t.Errorf("vector_layers: got %s, want %s", got.VectorLayers, c.layers)
			}
			if m, _ := c.meta.(map[string]any); m != nil && got.Name != m["name"] {
				t.Errorf("name: got %q, want %q", got.Name, m["name"])
			}
			if c.meta == nil && got.Name != "sat" {
				t.Errorf("name: got %q, want the tileset's name", got.Name)
			}
		})
	}
	if _, err := tileset.FromArchive("https://h", "x", pmtiles.Header{TileType: pmtiles.TileTypeUnknown}, nil); !errors.Is(err, tileset.ErrMetadata) {
		t.Errorf("unknown tile type: got %v, want %v", err, tileset.ErrMetadata)
	}
}

// FuzzFromMetadata: any metadata.json is refused with ErrMetadata or gives a
// TileJSON that encodes to JSON with one absolute tile URL.
func FuzzFromMetadata(f *testing.F) {
	for _, s := range []string{tippecanoeMetadata, `{"format":"png","bounds":[1,2,3,4]}`, `{"vector_layers":[]}`, `{"json":"{\"vector_layers\":[]}"}`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		tj, err := tileset.FromMetadata("https://h", "n", meta)
		if err != nil {
			if !errors.Is(err, tileset.ErrMetadata) {
				t.Fatalf("error %v is not ErrMetadata", err)
			}
			return
		}
		var doc map[string]any
		if err := json.Unmarshal(tj.Marshal(), &doc); err != nil {
			t.Fatalf("TileJSON does not decode: %v", err)
		}
		if len(tj.Tiles) != 1 || tj.MinZoom > tj.MaxZoom {
			t.Fatalf("got %+v", tj)
		}
	})
}
