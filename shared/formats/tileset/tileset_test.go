package tileset_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
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
