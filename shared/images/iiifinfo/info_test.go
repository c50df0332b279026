package iiifinfo_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/iiifinfo"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

const serviceID = "https://example.org/iiif/3/books%2Fb1%2Fp7"

var infoLimits = iiif.Limits{MaxWidth: 800, MaxHeight: 800, MaxArea: 640_000}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestInfoGolden(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256)
	gray := img
	gray.Gray = true
	for _, c := range []struct {
		name string
		v    iiif.Version
		img  iiif.Image
		opt  iiifinfo.InfoOptions
	}{
		{"info-v3.json", iiif.V3, img, iiifinfo.InfoOptions{}},
		{"info-v3-gray-links.json", iiif.V3, gray, iiifinfo.InfoOptions{LinkHeaders: true}},
		{"info-v2.json", iiif.V2, img, iiifinfo.InfoOptions{}},
		{"info-v2-gray-links.json", iiif.V2, gray, iiifinfo.InfoOptions{LinkHeaders: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := iiifinfo.Info(c.v, serviceID, c.img, infoLimits, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, got)
			again, err := iiifinfo.Info(c.v, serviceID, c.img, infoLimits, c.opt)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("a second call gave other bytes (%v)", err)
			}
			checkValidatorInfo(t, c.v, got)
		})
	}
}

// checkValidatorInfo makes the checks of the IIIF image validator's
// info_json test (iiif_validator/tests/info_json.py).
func checkValidatorInfo(t *testing.T, v iiif.Version, doc []byte) {
	t.Helper()
	var info map[string]any
	if err := json.Unmarshal(doc, &info); err != nil {
		t.Fatal(err)
	}
	isInt := func(x any) bool { f, ok := x.(float64); return ok && f == float64(int64(f)) }
	idField, context := "id", iiifinfo.ContextV3
	if v == iiif.V2 {
		idField, context = "@id", iiifinfo.ContextV2
	}
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"width is an integer", isInt(info["width"])},
		{"height is an integer", isInt(info["height"])},
		{idField + " is the base URI", info[idField] == serviceID},
		{"@context", info["@context"] == context},
		{"protocol", info["protocol"] == "http://iiif.io/api/image"},
	} {
		if !c.ok {
			t.Errorf("validator: %s fails in %s", c.what, doc)
		}
	}
	if v == iiif.V2 {
		profs, ok := info["profile"].([]any)
		if !ok || len(profs) == 0 || !strings.HasPrefix(profs[0].(string), "http://iiif.io/api/image/2/level") {
			t.Errorf("validator: profile %v is not a list starting with a level URI", info["profile"])
		}
	} else {
		if info["profile"] != "level2" || info["type"] != "ImageService3" {
			t.Errorf("validator: profile %v, type %v", info["profile"], info["type"])
		}
		for _, k := range []string{"extraQualities", "extraFormats", "extraFeatures"} {
			if x, ok := info[k]; ok {
				if _, ok := x.([]any); !ok {
					t.Errorf("validator: %s is not a list", k)
				}
			}
		}
	}
	sizes, _ := info["sizes"].([]any)
	for _, s := range sizes {
		m, ok := s.(map[string]any)
		if !ok || !isInt(m["width"]) || !isInt(m["height"]) {
			t.Errorf("validator: size %v", s)
		}
	}
	tiles, _ := info["tiles"].([]any)
	for _, tl := range tiles {
		m, ok := tl.(map[string]any)
		if _, has := m["scaleFactors"]; !ok || !has || !isInt(m["width"]) {
			t.Errorf("validator: tile %v", tl)
		}
	}
}

// TestInfoWithinLimits checks the rule that sizes and tiles are within
// the advertised limits, and the level-2 promise that each is served.
func TestInfoWithinLimits(t *testing.T) {
	t.Parallel()
	img := pyramid(4000, 3000, 512, 512)
	lim := iiif.Limits{MaxWidth: 1200, MaxHeight: 1200, MaxArea: 1 << 20}
	doc, err := iiifinfo.Info(iiif.V3, serviceID, img, lim, iiifinfo.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Sizes []struct{ Width, Height int64 }
		Tiles []struct {
			Width, Height int64
			ScaleFactors  []int64 `json:"scaleFactors"`
		}
	}
	if err := json.Unmarshal(doc, &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Sizes) != 2 { // 500x375, 1000x750; 4000x3000 and 2000x1500 are too large
		t.Errorf("sizes: got %v, want the 2 levels within the limits", info.Sizes)
	}
	for _, s := range info.Sizes {
		if s.Width > lim.MaxWidth || s.Height > lim.MaxHeight || s.Width*s.Height > lim.MaxArea {
			t.Errorf("size %v is beyond %+v", s, lim)
		}
		res, err := resolvePath(iiif.V3, "full/"+itoa(s.Width)+","+itoa(s.Height)+"/0/default.jpg", img, lim)
		if err != nil {
			t.Errorf("size %v: %v", s, err)
			continue
		}
		if plan, err := iiif.NewPlan(res, img); err != nil || plan.Source.Dx() != int(s.Width) {
			t.Errorf("size %v: plan %+v (%v), want a level at scale 1", s, plan, err)
		}
	}
	if len(info.Tiles) != 1 || len(info.Tiles[0].ScaleFactors) != 4 {
		t.Errorf("tiles: got %+v, want one entry with factors 1, 2, 4, 8", info.Tiles)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestInfoErrors(t *testing.T) {
	t.Parallel()
	img := pyramid(100, 100, 256, 256)
	for name, call := range map[string]func() ([]byte, error){
		"empty id": func() ([]byte, error) { return iiifinfo.Info(iiif.V3, "", img, infoLimits, iiifinfo.InfoOptions{}) },
		"trailing slash": func() ([]byte, error) {
			return iiifinfo.Info(iiif.V3, serviceID+"/", img, infoLimits, iiifinfo.InfoOptions{})
		},
		"version": func() ([]byte, error) { return iiifinfo.Info(1, serviceID, img, infoLimits, iiifinfo.InfoOptions{}) },
		"limits": func() ([]byte, error) {
			return iiifinfo.Info(iiif.V3, serviceID, img, iiif.Limits{}, iiifinfo.InfoOptions{})
		},
		"no levels": func() ([]byte, error) {
			return iiifinfo.Info(iiif.V3, serviceID, iiif.Image{}, infoLimits, iiifinfo.InfoOptions{})
		},
		"manifest id": func() ([]byte, error) {
			return iiifinfo.Manifest(iiifinfo.ManifestOptions{Service: serviceID}, img, infoLimits)
		},
	} {
		if _, err := call(); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

func TestManifestGolden(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256)
	got, err := iiifinfo.Manifest(iiifinfo.ManifestOptions{ID: serviceID + "/manifest", Label: "Book 1, page 7 <&>", Service: serviceID}, img, infoLimits)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "manifest.json", got)
	// The painting annotation's body is the max size, and its image URL
	// resolves to exactly that size.
	var m struct {
		Items []struct {
			Width, Height int
			Items         []struct {
				Items []struct {
					Body struct {
						ID            string
						Width, Height int
					}
				}
			}
		}
	}
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	body := m.Items[0].Items[0].Items[0].Body
	res, err := resolvePath(iiif.V3, strings.TrimPrefix(body.ID, serviceID+"/"), img, infoLimits)
	if err != nil || res.Width != body.Width || res.Height != body.Height {
		t.Errorf("body %+v: resolves to %dx%d (%v)", body, res.Width, res.Height, err)
	}
	if m.Items[0].Width != 1001 || m.Items[0].Height != 701 {
		t.Errorf("canvas: got %dx%d, want 1001x701", m.Items[0].Width, m.Items[0].Height)
	}
}

func TestMediaTypes(t *testing.T) {
	t.Parallel()
	const (
		json  = "application/json"
		ldV3  = `application/ld+json;profile="http://iiif.io/api/image/3/context.json"`
		ldV2  = `application/ld+json;profile="http://iiif.io/api/image/2/context.json"`
		ldP3  = `application/ld+json;profile="http://iiif.io/api/presentation/3/context.json"`
		htmlA = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	)
	for _, c := range []struct {
		accept     string
		v3, v2, p3 string
	}{
		{"", ldV3, json, ldP3},
		{"*/*", ldV3, json, ldP3},
		{htmlA, ldV3, json, ldP3},
		{"application/json", json, json, json},
		{"application/ld+json", ldV3, ldV2, ldP3},
		{`application/ld+json;profile="http://iiif.io/api/image/3/context.json"`, ldV3, ldV2, ldP3},
		{"application/json, application/ld+json;q=0.5", json, json, json},
		{"application/json;q=0.5, application/ld+json", ldV3, ldV2, ldP3},
		{"APPLICATION/LD+JSON", ldV3, ldV2, ldP3},
		{"application/ld+json;q=0", ldV3, json, ldP3},
		{"application/json, */*;q=0.1", json, json, json},
		{"text/plain", ldV3, json, ldP3},
		{"application/*;q=0.3, application/json;q=0.9", json, json, json},
		{strings.Repeat("a", 5000) + ", application/json", ldV3, json, ldP3},
	} {
		if got := iiifinfo.InfoMediaType(iiif.V3, c.accept); got != c.v3 {
			t.Errorf("v3 %.40q: got %s, want %s", c.accept, got, c.v3)
		}
		if got := iiifinfo.InfoMediaType(iiif.V2, c.accept); got != c.v2 {
			t.Errorf("v2 %.40q: got %s, want %s", c.accept, got, c.v2)
		}
		if got := iiifinfo.ManifestMediaType(c.accept); got != c.p3 {
			t.Errorf("manifest %.40q: got %s, want %s", c.accept, got, c.p3)
		}
	}
}

func TestLinks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{iiifinfo.LinkProfile(iiif.V3), `<http://iiif.io/api/image/3/level2.json>;rel="profile"`},
		{iiifinfo.LinkProfile(iiif.V2), `<http://iiif.io/api/image/2/level2.json>;rel="profile"`},
		{iiifinfo.LinkCanonical(serviceID + "/full/max/0/default.jpg"), `<` + serviceID + `/full/max/0/default.jpg>;rel="canonical"`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// pyramid is an image whose levels halve its full size, rounding down,
// until one tile holds a level.
func pyramid(w, h, tw, th int) iiif.Image {
	img := iiif.Image{JPEGTiles: true}
	for s := 1; w/s >= 1 && h/s >= 1; s *= 2 {
		img.Levels = append(img.Levels, iiif.Level{Width: w / s, Height: h / s, TileWidth: tw, TileHeight: th})
		if w/s <= tw && h/s <= th {
			break
		}
	}
	return img
}

// resolvePath parses and resolves "region/size/rotation/quality.format".
func resolvePath(v iiif.Version, path string, img iiif.Image, lim iiif.Limits) (iiif.Resolved, error) {
	p := strings.SplitN(path, "/", 4)
	for len(p) < 4 {
		p = append(p, "")
	}
	req, err := iiif.Parse(v, p[0], p[1], p[2], p[3])
	if err != nil {
		return iiif.Resolved{}, err
	}
	return iiif.Resolve(req, img, lim)
}
