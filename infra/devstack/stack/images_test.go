package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/demoimage"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
	"github.com/tilesieve/tilesieve/infra/internal/imagetools"
	"github.com/tilesieve/tilesieve/shared/docs"
)

// imageFiles writes the TIFFs a user loads with -tiles, as libvips and GDAL
// write them: a COG on the web map grid covering the world (JPEG), an
// elevation model over the world (float32, predictor 3) and a photo (a
// pyramid without georeferencing).
func imageFiles(t *testing.T) (cog, dem, photo string) {
	t.Helper()
	dir := t.TempDir()
	cog = imagetools.COG(t, dir, "world.tif", "EPSG:3857", imagetools.WebMercatorWorld, 1024, 1024,
		"-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "COMPRESS=JPEG")
	dem = imagetools.DEM(t, dir, "relief.tif", "EPSG:3857", imagetools.WebMercatorWorld, 512, 512)
	photo = imagetools.Pyramid(t, dir, "photo.tif", 1500, 1000)
	return cog, dem, photo
}

// TestLoadImages: -tiles takes TIFFs as the upload command does. Each whose
// samples are colours is an IIIF image (info.json, manifest); a
// georeferenced one is a tileset too, and an elevation model only that
// (its IIIF paths say why, 501). The catalog lists the images at the top
// level and the COGs among the tilesets, the photo not; the banner names
// them; the demo image is served at its nested id.
func TestLoadImages(t *testing.T) {
	t.Parallel()
	cog, dem, photo := imageFiles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{Env: mapEnv(nil), Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0",
		Seed: true, SeedMaxZoom: 2, Tiles: []string{cog, dem, photo}})
	if !slices.Equal(st.Loaded, []string{"world", "relief"}) || !slices.Equal(st.Images, []string{"world", "photo"}) {
		t.Errorf("loaded tilesets %q, images %q; want [world relief] and [world photo]", st.Loaded, st.Images)
	}
	if r := get(t, st.URL+"/iiif/3/relief/info.json"); r.status != http.StatusNotImplemented {
		t.Errorf("the elevation model's info.json: %d %s, want 501", r.status, r.body)
	}

	a := get(t, st.URL+"/_tilesieve/catalog")
	var cat docs.Catalog
	if err := json.Unmarshal(a.body, &cat); err != nil || a.status != http.StatusOK {
		t.Fatalf("catalog: %d %s (%v)", a.status, a.body, err)
	}
	var tilesets, images []string
	for _, e := range cat.Tilesets {
		tilesets = append(tilesets, e.Name+":"+e.Kind)
		if e.Error != "" {
			t.Errorf("tileset %s refused: %s", e.Name, e.Error)
		}
	}
	for _, im := range cat.Images {
		images = append(images, im.ID)
		for _, u := range []string{im.Info, im.Info2, im.Manifest} {
			if r := get(t, u); r.status != http.StatusOK || !strings.Contains(string(r.body), st.URL+"/iiif/") {
				t.Errorf("%s: got %d %.200s, want 200 naming the stack", u, r.status, r.body)
			}
		}
	}
	if want := []string{"demo:objects", "relief:tiff", "world:tiff"}; !slices.Equal(tilesets, want) {
		t.Errorf("catalog tilesets %q, want %q", tilesets, want)
	}
	// The demo image is under demo/: a nested id, which the catalog does
	// not list.
	if want := []string{"photo", "world"}; !slices.Equal(images, want) {
		t.Errorf("catalog images %q, want %q", images, want)
	}

	var tj struct {
		Tiles    []string `json:"tiles"`
		Encoding string   `json:"encoding"`
	}
	if r := get(t, st.URL+"/relief.json"); json.Unmarshal(r.body, &tj) != nil || tj.Encoding != "mapbox" {
		t.Errorf("/relief.json: %d %s, want a terrain-RGB TileJSON", r.status, r.body)
	}
	if r := get(t, st.URL+"/world.json"); json.Unmarshal(r.body, &tj) != nil || len(tj.Tiles) != 1 || !strings.HasSuffix(tj.Tiles[0], "/world/{z}/{x}/{y}.jpg") {
		t.Errorf("/world.json: %d %s, want JPEG tiles", r.status, r.body)
	}
	if r := get(t, st.URL+"/photo.json"); r.status != http.StatusNotFound {
		t.Errorf("/photo.json: got %d, want 404: a photo is no tileset", r.status)
	}
	if r := get(t, st.DemoImageTile()); r.status != http.StatusOK || r.cache != "MISS" || len(r.body) < 1000 {
		t.Errorf("%s: got %d %s, %d bytes, want a JPEG", st.DemoImageTile(), r.status, r.cache, len(r.body))
	}

	b := st.Banner()
	for _, want := range []string{
		st.URL + "/iiif/3/demo%2Fimage/info.json", st.URL + "/iiif/3/demo%2Fimage/manifest.json",
		st.URL + viewer.IIIFPageOf(demoimage.ID), st.DemoImageTile(),
		st.URL + "/world.json", st.URL + "/?tileset=relief", st.URL + "/iiif/3/photo/info.json",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the banner lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(b, "/photo.json") {
		t.Errorf("the banner names /photo.json, which is no tileset:\n%s", b)
	}
}

// TestLoadRefusesUnservableTIFF: -tiles with a COG in a CRS the map view
// does not serve stops the stack at start with the upload command's one
// line, which says what to run.
func TestLoadRefusesUnservableTIFF(t *testing.T) {
	t.Parallel()
	path := imagetools.COG(t, t.TempDir(), "lambert.tif", "EPSG:2154", []string{"650000", "6863000", "651500", "6861900"}, 600, 400)
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
	want := "devstack: -tiles " + path + ": upload: " + path + ": georeferenced, but not servable as map tiles: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "gdalwarp -t_srs EPSG:3857") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v, want one line starting %q and naming gdalwarp", err, want)
	}
}

// TestIIIFViewerInChromium: the IIIF page opens the demo image in
// OpenSeadragon through the local stack: every tile of the view loads,
// each asked for by its canonical request under the image's escaped id;
// a second load finds them all in memory, and the screenshot shows the
// image with each tile labelled with its tier.
func TestIIIFViewerInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	st := startEmbeddedEnv(t, nil, map[string]string{"REVALIDATE_AFTER": "1h", "SYNC_TIMEOUT": "30s"})
	page := st.URL + viewer.IIIFPageOf(demoimage.ID)
	settled := func(d map[string]string) bool { return d["state"] != "loading" }
	// OpenSeadragon loads the levels one after the other, frame by frame:
	// more virtual time than the map page needs (the last value wins).
	budget := "--virtual-time-budget=15000"

	// 1. The first load: the tiles of the view, none failed.
	data, _ := settledData(t, bin, page, settled, budget)
	loaded, _ := strconv.Atoi(data["loaded"])
	if data["state"] != "idle" || data["failed"] != "0" || data["errors"] != "[]" || loaded < 6 {
		t.Fatalf("page state: %v, want idle with 6 or more tiles loaded, none failed", data)
	}
	var urls []string
	if err := json.Unmarshal([]byte(data["urls"]), &urls); err != nil || len(urls) == 0 {
		t.Fatalf("data-urls %q: %v", data["urls"], err)
	}
	prefix := st.URL + "/iiif/3/demo%2Fimage/"
	for _, u := range urls {
		if !strings.HasPrefix(u, prefix) || !strings.HasSuffix(u, "/0/default.jpg") {
			t.Errorf("tile URL %s: want one under %s, ending /0/default.jpg", u, prefix)
		}
	}

	// 2. Again: every tile from memory.
	data, _ = settledData(t, bin, page, settled, budget)
	var tiers map[string]int
	if err := json.Unmarshal([]byte(data["tiers"]), &tiers); err != nil {
		t.Fatalf("data-tiers %q: %v", data["tiers"], err)
	}
	if loaded, _ := strconv.Atoi(data["loaded"]); data["state"] != "idle" || tiers["HIT-MEMORY"] != loaded {
		t.Errorf("second load: state %s, tiers %v of %d: want idle, every tile HIT-MEMORY", data["state"], tiers, loaded)
	}

	// 3. A screenshot: the image fills the view beside the panel, and the
	// tier labels are drawn on it.
	screenshot(t, bin, page, "TILESIEVE_IIIF_SCREENSHOT", func(img image.Image) (missing []string) {
		counts := colourCounts(img, map[string]color.RGBA{"HIT label": {0x1A, 0x7F, 0x37, 0xFF}})
		b := img.Bounds()
		drawn, area := 0, 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := 300; x < b.Max.X; x++ { // right of the panel (290 px)
				area++
				c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
				if !near(c.R, 0x2B) || !near(c.G, 0x2D) || !near(c.B, 0x33) {
					drawn++
				}
			}
		}
		if drawn < area/2 {
			missing = append(missing, fmt.Sprintf("%d of %d pixels beside the panel drawn, want half: the image is not on screen", drawn, area))
		}
		if counts["HIT label"] < 50 {
			missing = append(missing, fmt.Sprintf("tier labels not visible (HIT-MEMORY %d px)", counts["HIT label"]))
		}
		return missing
	}, budget)
}

// TestCOGInChromium: a COG loaded with -tiles is drawn by the map page
// (/?tileset=NAME, as its catalog button does), and by the MapLibre page
// from its TileJSON: as a raster layer, and an elevation model as
// MapLibre's raster-dem source (hillshade) with the TileJSON's encoding.
func TestCOGInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	cog, dem, _ := imageFiles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{Env: mapEnv(map[string]string{"REVALIDATE_AFTER": "1h", "SYNC_TIMEOUT": "30s"}),
		Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Seed: true, SeedMaxZoom: 2, Tiles: []string{cog, dem}})

	// 1. The map page: the catalog lists the COG, and its tiles replace
	// the demo's.
	data, _ := settledData(t, bin, st.URL+"/?tileset=world", func(d map[string]string) bool {
		return d["tileset"] == "world" && d["pending"] == "0" && d["loaded"] != "0"
	})
	loaded, _ := strconv.Atoi(data["loaded"])
	if data["tileset"] != "world" || data["failed"] != "0" || loaded < 4 || data["tilesets"] != "3" {
		t.Fatalf("map page: %v, want the world tileset drawn (4 or more tiles, none failed) from a catalog of 3", data)
	}
	if a := get(t, st.URL+"/world/2/1/1.jpg"); a.status != http.StatusOK || a.cache != "HIT-MEMORY" {
		t.Errorf("/world/2/1/1.jpg after the page: %d %s, want HIT-MEMORY (the page loaded it)", a.status, a.cache)
	}

	// 2. The MapLibre page, over each TileJSON. Software WebGL draws the
	// hillshade slowly on a busy machine: more virtual time than the map
	// page needs (the last value wins).
	gl := []string{"--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist", "--virtual-time-budget=15000"}
	for _, name := range []string{"world", "relief"} {
		t.Run(name, func(t *testing.T) {
			page := st.URL + viewer.StylePage + "?tilejson=/" + name + ".json"
			data, _ := settledData(t, bin, page, func(d map[string]string) bool { return d["state"] != "loading" }, gl...)
			if data["state"] != "idle" || data["errors"] != "[]" {
				t.Fatalf("page state %q, errors %s: want idle, none", data["state"], data["errors"])
			}
			var requests map[string][]string
			if err := json.Unmarshal([]byte(data["requests"]), &requests); err != nil {
				t.Fatalf("data-requests %q: %v", data["requests"], err)
			}
			if src := requests["Source"]; len(src) == 0 || src[0] != st.URL+"/"+name+".json" {
				t.Errorf("Source requests %v, want %s/%s.json", src, st.URL, name)
			}
			tiles := requests["Tile"]
			if len(tiles) == 0 {
				t.Fatalf("no tiles requested (requests %v)", requests)
			}
			for _, u := range tiles {
				if !strings.HasPrefix(u, st.URL+"/"+name+"/") {
					t.Errorf("tile URL %s: want one under %s/%s/", u, st.URL, name)
				}
			}
		})
	}
}
