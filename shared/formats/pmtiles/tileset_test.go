package pmtiles_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
)

// TestFromArchive: the TileJSON of an archive, from its header (Header.Tileset) and metadata.
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
			got, err := tileset.FromArchive("https://cdn.example", "sat", r.Header().Tileset(), meta)
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
	if _, err := tileset.FromArchive("https://h", "x", pmtiles.Header{TileType: pmtiles.TileTypeUnknown}.Tileset(), nil); !errors.Is(err, tileset.ErrMetadata) {
		t.Errorf("unknown tile type: got %v, want %v", err, tileset.ErrMetadata)
	}
}
