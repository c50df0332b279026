package stack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/infra/devstack/viewer"
	"github.com/tilesieve/tilesieve/shared/testkit/filetree"
)

// labelColor is the text colour of the test style's labels: in no demo
// tile, so its pixels are the labels' glyphs.
var labelColor = color.RGBA{0x00, 0x3C, 0xFF, 0xFF}

// styleDir writes a MapLibre style directory as a user has one: style.json
// authored against another host, a sprite at both pixel ratios, and glyph
// ranges of two fonts that the style asks for as one stack.
func styleDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "basic")
	files := map[string][]byte{
		"style.json": []byte(`{
  "version": 8,
  "name": "tilesieve demo",
  "center": [0, 20],
  "zoom": 1,
  "sources": {
    "demo": {"type": "raster", "url": "../demo.json", "tileSize": 256},
    "places": {"type": "geojson", "data": {"type": "FeatureCollection", "features": [
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [-60, 30]}, "properties": {"name": "TILESIEVE 2026"}},
      {"type": "Feature", "geometry": {"type": "Point", "coordinates": [60, -20]}, "properties": {"name": "STYLE 8"}}
    ]}}
  },
  "sprite": "http://127.0.0.1:9999/basic/sprite",
  "glyphs": "fonts/{fontstack}/{range}.pbf",
  "layers": [
    {"id": "demo", "type": "raster", "source": "demo"},
    {"id": "places", "type": "symbol", "source": "places",
     "layout": {"icon-image": "marker", "icon-allow-overlap": true, "text-allow-overlap": true,
                "text-field": ["get", "name"], "text-font": ["Demo Letters", "Demo Digits"],
                "text-size": 40, "text-anchor": "top", "text-offset": [0, 0.8]},
     "paint": {"text-color": "#003CFF", "text-halo-color": "#FFFFFF", "text-halo-width": 3}}
  ]
}`),
		"fonts/Demo Letters/0-255.pbf": demotiles.GlyphRange("Demo Letters", demotiles.IsLetter),
		"fonts/Demo Digits/0-255.pbf":  demotiles.GlyphRange("Demo Digits", demotiles.IsDigit),
	}
	for ratio, suffix := range map[int]string{1: "", 2: "@2x"} {
		index, img, err := demotiles.Sprite(ratio)
		if err != nil {
			t.Fatal(err)
		}
		files["sprite"+suffix+".json"], files["sprite"+suffix+".png"] = index, img
	}
	filetree.Write(t, dir, files)
	return dir
}

// TestStyleInChromium: a MapLibre style with a sprite and glyphs, uploaded
// the way `tilesieve upload` does (the stack's -tiles), renders through the
// local stack: every URL MapLibre asks for names the stack (the style was
// rewritten), the font stack of two fonts is composed, and the screenshot
// shows the demo tiles, the sprite's icon and the labels.
func TestStyleInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{
		Env:      mapEnv(map[string]string{"REVALIDATE_AFTER": "1h", "SYNC_TIMEOUT": "30s"}),
		Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0",
		Seed: true, SeedMaxZoom: 2,
		Tiles: []string{styleDir(t)},
	})
	page := st.URL + viewer.StylePage + "?style=/basic/style.json"
	gl := []string{"--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"}

	// 1. The DOM after loading: idle, no error, every URL under the stack.
	data, _ := settledData(t, bin, page, func(d map[string]string) bool { return d["state"] != "loading" }, gl...)
	if data["state"] != "idle" || data["errors"] != "[]" {
		t.Fatalf("page state %q, errors %s: want idle, none", data["state"], data["errors"])
	}
	var requests map[string][]string
	if err := json.Unmarshal([]byte(data["requests"]), &requests); err != nil {
		t.Fatalf("data-requests %q: %v", data["requests"], err)
	}
	stackURL := func(path string) string { return st.URL + (&url.URL{Path: path}).EscapedPath() }
	for _, c := range []struct {
		kind, prefix string
	}{
		{"Style", st.URL + "/basic/style.json"},
		{"Source", stackURL("/demo.json")},
		{"Tile", stackURL("/demo/")},
		{"SpriteJSON", stackURL("/basic/sprite")},
		{"SpriteImage", stackURL("/basic/sprite")},
		{"Glyphs", st.URL + "/basic/fonts/Demo Letters,Demo Digits/"}, // MapLibre reports it unescaped
	} {
		t.Run(c.kind, func(t *testing.T) {
			got := requests[c.kind]
			if len(got) == 0 {
				t.Fatalf("no %s requested (requests %v)", c.kind, requests)
			}
			for _, u := range got {
				if !strings.HasPrefix(u, c.prefix) {
					t.Errorf("%s URL: got %v, want one under %v", c.kind, u, c.prefix)
				}
			}
		})
	}

	// 2. A screenshot: the demo tiles, the marker icons and the labels,
	// whose glyphs come from both fonts of the composed stack.
	screenshot(t, bin, page, "TILESIEVE_STYLE_SCREENSHOT", func(img image.Image) (missing []string) {
		counts := colourCounts(img, map[string]color.RGBA{
			"zoom 2 tile": demotiles.ZoomColor(2),
			"marker":      demotiles.MarkerColor,
			"label":       labelColor,
		})
		total := img.Bounds().Dx() * img.Bounds().Dy()
		if n := counts["zoom 2 tile"]; n < total/4 {
			missing = append(missing, fmt.Sprintf("%d of %d pixels in the zoom-2 tile colour, want at least a quarter", n, total))
		}
		if n := counts["marker"]; n < 2*300 {
			missing = append(missing, fmt.Sprintf("%d marker pixels, want two icons (600 or more)", n))
		}
		if n := counts["label"]; n < 1000 {
			missing = append(missing, fmt.Sprintf("%d label pixels, want the labels drawn (1000 or more)", n))
		}
		return missing
	}, gl...)
}
