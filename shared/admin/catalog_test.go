package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// newCatalogHandler is the admin API with a catalog of the given lists.
func newCatalogHandler(t *testing.T, tilesets func(context.Context) ([]docs.CatalogEntry, error), images func(context.Context) ([]docs.ImageEntry, error)) *admin.Handler {
	t.Helper()
	ep := s3localtest.Start(t, "tiles")
	mem, err := memory.New(memory.Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := tiers.New(tiers.Config{}, tiers.Deps{Memory: mem, Origin: origin.NewWithS3(ep.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"})})
	if err != nil {
		t.Fatal(err)
	}
	h, err := admin.New(admin.Config{}, admin.Deps{Engine: eng, Memory: mem, Catalog: tilesets, Images: images,
		BaseURL: func(*http.Request) string { return "https://tiles.example" }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCatalogLists: the catalog gives each tileset's TileJSON and each
// image's info.json (3.0 and 2.1) and manifest under the base URL, the
// image id kept escaped as one path segment; without an image lister the
// images are an empty list; a failed listing is a 502.
func TestCatalogLists(t *testing.T) {
	t.Parallel()
	tilesets := func(context.Context) ([]docs.CatalogEntry, error) {
		return []docs.CatalogEntry{{Name: "geo", Kind: "tiff", TileJSON: "geo.json"}}, nil
	}
	images := func(context.Context) ([]docs.ImageEntry, error) {
		return []docs.ImageEntry{{ID: "a/b", Kind: "tiff", Info: "iiif/3/a%2Fb/info.json", Info2: "iiif/2/a%2Fb/info.json", Manifest: "iiif/3/a%2Fb/manifest.json"}}, nil
	}
	var c docs.Catalog
	w := do(newCatalogHandler(t, tilesets, images), "GET", "/_tilesieve/catalog", "")
	if err := json.Unmarshal(w.Body.Bytes(), &c); err != nil || w.Code != 200 {
		t.Fatalf("got %d %s (%v), want 200", w.Code, w.Body, err)
	}
	wantTS := docs.CatalogEntry{Name: "geo", Kind: "tiff", TileJSON: "https://tiles.example/geo.json"}
	wantIm := docs.ImageEntry{ID: "a/b", Kind: "tiff", Info: "https://tiles.example/iiif/3/a%2Fb/info.json",
		Info2: "https://tiles.example/iiif/2/a%2Fb/info.json", Manifest: "https://tiles.example/iiif/3/a%2Fb/manifest.json"}
	if len(c.Tilesets) != 1 || c.Tilesets[0] != wantTS || len(c.Images) != 1 || c.Images[0] != wantIm {
		t.Errorf("got %+v, want tileset %+v and image %+v", c, wantTS, wantIm)
	}

	w = do(newCatalogHandler(t, tilesets, nil), "GET", "/_tilesieve/catalog", "")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &raw); err != nil || string(raw["images"]) != "[]" {
		t.Errorf("without images: got %s (%v), want \"images\": []", w.Body, err)
	}

	failing := func(context.Context) ([]docs.ImageEntry, error) { return nil, errors.New("S3 down") }
	if w := do(newCatalogHandler(t, tilesets, failing), "GET", "/_tilesieve/catalog", ""); w.Code != http.StatusBadGateway {
		t.Errorf("a failed image listing: got %d, want 502", w.Code)
	}
}
