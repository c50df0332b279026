package tileserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats/tiff"
	"github.com/tilesieve/tilesieve/shared/images/xyz/terrain"
	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
	"github.com/tilesieve/tilesieve/shared/tilename"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// gdal runs a GDAL command in dir, as users make their files.
func gdal(t *testing.T, dir, cmd string, args ...string) {
	t.Helper()
	imagetest.Run(t, dir, cmd, append([]string{"-q"}, args...)...)
}

// rgbSource writes an RGB TIFF of w×h pixels of libvips noise to dir/name.
func rgbSource(t *testing.T, dir, name string, w, h int) {
	t.Helper()
	imagetest.Noise(t, dir, name, w, h, "128")
}

// cogOf makes a COG as users do: w×h pixels of libvips noise, prepared by
// gdal_translate with prep (a georeference, a band, a type), then written
// by GDAL's COG driver with the creation options opts ("COMPRESS=JPEG").
func cogOf(t *testing.T, w, h int, prep []string, opts ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	rgbSource(t, dir, "src.tif", w, h)
	gdal(t, dir, "gdal_translate", append(prep, "src.tif", "geo.tif")...)
	args := []string{"-of", "COG"}
	for _, o := range opts {
		args = append(args, "-co", o)
	}
	gdal(t, dir, "gdal_translate", append(args, "geo.tif", "cog.tif")...)
	b, err := os.ReadFile(filepath.Join(dir, "cog.tif"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// webMercatorWorld is the georeference of a raster that is the web map's
// north-west quarter.
var webMercatorWorld = []string{"-a_srs", "EPSG:3857", "-a_ullr", "-20037508.342789244", "20037508.342789244", "0", "0"}

// tileJSON is what the tests read of a TileJSON.
type tileJSON struct {
	Tiles    []string  `json:"tiles"`
	MinZoom  int       `json:"minzoom"`
	MaxZoom  int       `json:"maxzoom"`
	Bounds   []float64 `json:"bounds"`
	Center   []float64 `json:"center"`
	TileSize int       `json:"tileSize"`
	Encoding string    `json:"encoding"`
}

// xyzOf is the XYZ tile at zoom z that holds lon/lat.
func xyzOf(z int, lon, lat float64) (x, y int) {
	n := math.Exp2(float64(z))
	x = int((lon + 180) / 360 * n)
	r := lat * math.Pi / 180
	y = int((1 - math.Log(math.Tan(r)+1/math.Cos(r))/math.Pi) / 2 * n)
	return min(x, int(n)-1), min(y, int(n)-1)
}

// TestCOGGoogleMapsCompatible: a COG GDAL wrote on the web map grid is a
// tileset whose tiles at its stored zooms are its stored JPEG tiles made
// whole, read in one ranged GET each once its header is read, and whose
// PNG tiles are decoded (transparent where its mask says so).
func TestCOGGoogleMapsCompatible(t *testing.T) {
	t.Parallel()
	cog := cogOf(t, 1000, 700, webMercatorWorld, "TILING_SCHEME=GoogleMapsCompatible", "COMPRESS=JPEG")
	// Another that ends inside a tile: x from the world's west edge to
	// -10,000 km, which at its zoom is a sliver of the fifth tile.
	part := cogOf(t, 1000, 700, []string{"-a_srs", "EPSG:3857", "-a_ullr", "-20037508.342789244", "20037508.342789244", "-10000000", "10000000"},
		"TILING_SCHEME=GoogleMapsCompatible", "COMPRESS=JPEG")
	ae := newArchiveEnv(t)
	ae.put("part.tif", part, "image/tiff", "")
	ae.put("world.tif", cog, "image/tiff", "")
	r := ae.do("GET", "/world.json")
	expect(t, r, 200, "")
	var tj tileJSON
	if err := json.Unmarshal([]byte(body(t, r)), &tj); err != nil {
		t.Fatal(err)
	}
	if tj.MaxZoom != 3 || tj.MinZoom != 1 || !strings.HasSuffix(tj.Tiles[0], "/world/{z}/{x}/{y}.jpg") {
		t.Fatalf("TileJSON: %+v", tj)
	}
	// Stored tile (1, 1) of the full resolution is XYZ tile 3/1/1.
	src := tiff.ReaderAt(bytes.NewReader(cog))
	f, err := tiff.Open(context.Background(), src, int64(len(cog)), tiff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raws, _, err := f.Levels[0].ReadTiles(context.Background(), src, []image.Point{{X: 1, Y: 1}}, tiff.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.Levels[0].WholeJPEG(raws[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	before := ae.ranged.Load()
	r = ae.do("GET", "/world/3/1/1.jpg")
	expectBody(t, r, 200, "MISS", string(want))
	if n := ae.ranged.Load() - before; n != 1 {
		t.Errorf("stored tile: %d ranged GETs, want 1 (the header is read already)", n)
	}
	// The answer says so itself.
	if c := r.Header.Get(tileserver.CostHeader); !strings.HasPrefix(c, "requests=1; bytes=") {
		t.Errorf("%s: %q, want one request", tileserver.CostHeader, c)
	}
	if c := ae.do("GET", "/world/3/1/1.jpg").Header.Get(tileserver.CostHeader); c != "" {
		t.Errorf("a memory hit: %s %q, want none", tileserver.CostHeader, c)
	}
	// A name's first request is a tile: finding what the name is (the
	// formats probed, and the tile looked up as an object beside them) is
	// opening it, not what the tile cost.
	ae.put("fresh.tif", cog, "image/tiff", "")
	r = ae.do("GET", "/fresh/3/1/1.jpg")
	expectBody(t, r, 200, "MISS", string(want))
	if c := r.Header.Get(tileserver.CostHeader); !strings.HasPrefix(c, "requests=1; bytes=") {
		t.Errorf("first tile of a name: %s %q, want the one request of the tile", tileserver.CostHeader, c)
	}
	r = ae.do("GET", "/world/3/1/1.png")
	expect(t, r, 200, "MISS")
	img, err := png.Decode(strings.NewReader(body(t, r)))
	if err != nil || img.Bounds().Dx() != 256 {
		t.Fatalf("png tile: %v %v", img, err)
	}
	expect(t, ae.do("GET", "/world/3/7/7.jpg"), 404, "") // outside the data
	// The tile where the data ends: its mask makes the rest transparent.
	if err := json.Unmarshal([]byte(body(t, ae.do("GET", "/part.json"))), &tj); err != nil {
		t.Fatal(err)
	}
	z := tj.MaxZoom
	x := int((20037508.342789244 - 10000000) / (2 * 20037508.342789244) * math.Exp2(float64(z)))
	r = ae.do("GET", "/part/"+itoa(z)+"/"+itoa(x)+"/"+itoa(int(math.Exp2(float64(z))/4))+".png")
	expect(t, r, 200, "MISS")
	img, err = png.Decode(strings.NewReader(body(t, r)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, a := img.At(250, 128).RGBA(); a != 0 {
		t.Errorf("outside the data: alpha %d, want transparent", a)
	}
	// Its upload purges its tileset and TileJSON.
	if got := tilename.Derived("world.tif"); !contains(got, "world/") || !contains(got, "world.json") {
		t.Errorf("purged by an upload of world.tif: %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestCOGResampled: a COG in EPSG:4326 and one in a UTM zone are served as
// 256-px XYZ tiles resampled from the tiles they cover, transparent outside
// their data.
func TestCOGResampled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, srs string
		ullr      []string
	}{
		{"geo4326", "EPSG:4326", []string{"10", "50", "12", "48.6"}},
		{"utm33", "EPSG:32633", []string{"400000", "5500000", "420000", "5486000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cog := cogOf(t, 1000, 700, append([]string{"-a_srs", c.srs, "-a_ullr"}, c.ullr...), "COMPRESS=DEFLATE")
			ae := newArchiveEnv(t)
			ae.put(c.name+".tif", cog, "image/tiff", "")
			var tj tileJSON
			if err := json.Unmarshal([]byte(body(t, ae.do("GET", "/"+c.name+".json"))), &tj); err != nil {
				t.Fatal(err)
			}
			x, y := xyzOf(tj.MaxZoom, tj.Center[0], tj.Center[1])
			r := ae.do("GET", "/"+c.name+"/"+itoa(tj.MaxZoom)+"/"+itoa(x)+"/"+itoa(y)+".png")
			expect(t, r, 200, "MISS")
			img, err := png.Decode(strings.NewReader(body(t, r)))
			if err != nil || img.Bounds().Dx() != 256 || img.Bounds().Dy() != 256 {
				t.Fatalf("tile: %v %v", img, err)
			}
			opaque := 0
			for py := 0; py < 256; py += 8 {
				for px := 0; px < 256; px += 8 {
					if _, _, _, a := img.At(px, py).RGBA(); a > 0 {
						opaque++
					}
				}
			}
			if opaque == 0 {
				t.Error("a tile inside the data is transparent")
			}
			r = ae.do("GET", "/"+c.name+"/"+itoa(tj.MaxZoom)+"/"+itoa(x)+"/"+itoa(y)+".jpg")
			expect(t, r, 200, "MISS")
			if _, err := jpeg.Decode(strings.NewReader(body(t, r))); err != nil {
				t.Errorf("jpg tile: %v", err)
			}
		})
	}
}

// TestCOGElevation: a float32 DEM GDAL wrote with predictor 3 is served as
// terrain-RGB (the TileJSON's tiles, encoding mapbox) and Terrarium; the
// elevation decoded from either is the DEM's.
func TestCOGElevation(t *testing.T) {
	t.Parallel()
	// Band 1 of the noise, scaled to metres, as a float32 DEM.
	cog := cogOf(t, 512, 512, []string{"-b", "1", "-ot", "Float32", "-scale", "0", "255", "100", "1120", "-a_srs", "EPSG:3857",
		"-a_ullr", "1000000", "6000000", "1050000", "5950000"}, "COMPRESS=DEFLATE", "PREDICTOR=3")
	ae := newArchiveEnv(t)
	ae.put("dem.tif", cog, "image/tiff", "")
	var tj tileJSON
	if err := json.Unmarshal([]byte(body(t, ae.do("GET", "/dem.json"))), &tj); err != nil {
		t.Fatal(err)
	}
	if tj.Encoding != "mapbox" || !strings.HasSuffix(tj.Tiles[0], ".png") {
		t.Fatalf("TileJSON: %+v", tj)
	}
	x, y := xyzOf(tj.MaxZoom, tj.Center[0], tj.Center[1])
	path := itoa(tj.MaxZoom) + "/" + itoa(x) + "/" + itoa(y) + ".png"
	for _, v := range []struct {
		prefix string
		decode func(r, g, b uint8) float64
	}{
		{"/dem/", terrain.DecodeRGB},
		{"/dem/terrarium/", terrain.DecodeTerrarium},
	} {
		r := ae.do("GET", v.prefix+path)
		expect(t, r, 200, "MISS")
		img, err := png.Decode(strings.NewReader(body(t, r)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for py := 0; py < 256; py += 16 {
			for px := 0; px < 256; px += 16 {
				c := color.NRGBAModel.Convert(img.At(px, py)).(color.NRGBA)
				if c.A == 0 {
					continue
				}
				if h := v.decode(c.R, c.G, c.B); h < 99 || h > 1121 {
					t.Fatalf("%s: elevation %v outside the DEM's 100-1120 m", v.prefix, h)
				}
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no elevation inside the DEM", v.prefix)
		}
	}
	// Its float samples are heights, not an image: IIIF says so, with 501,
	// for info.json and images alike.
	for _, p := range []string{"/iiif/3/dem/info.json", "/iiif/3/dem/full/max/0/default.jpg", "/iiif/2/dem/full/full/0/default.jpg"} {
		r := ae.do("GET", p)
		if b := body(t, r); r.StatusCode != http.StatusNotImplemented || !strings.Contains(b, "float") {
			t.Errorf("%s: got %d %q, want 501 saying its samples are float", p, r.StatusCode, b)
		}
	}
}

// TestTIFFWithoutGeoreferencingIsNoTileset: a plain pyramidal TIFF at the
// top level is an IIIF image only: its name is left to the tiles stored as
// objects.
func TestTIFFWithoutGeoreferencingIsNoTileset(t *testing.T) {
	t.Parallel()
	ae := newArchiveEnv(t)
	ae.put("scan.tif", vipsPyramid(t, 600, 400, "90"), "image/tiff", "")
	ae.put("scan/0/0/0.png", []byte("object"), "image/png", "")
	expectBody(t, ae.do("GET", "/scan/0/0/0.png"), 200, "MISS", "object")
	expect(t, ae.do("GET", "/iiif/3/scan/info.json"), 200, "MISS")
}

// TestCOGStoredWebP: a GoogleMapsCompatible COG of WebP tiles answers its
// stored tiles' bytes as they are, for webp.
func TestCOGStoredWebP(t *testing.T) {
	t.Parallel()
	cog := cogOf(t, 512, 512, webMercatorWorld, "TILING_SCHEME=GoogleMapsCompatible", "COMPRESS=WEBP")
	src := tiff.ReaderAt(bytes.NewReader(cog))
	f, err := tiff.Open(context.Background(), src, int64(len(cog)), tiff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raws, _, err := f.Levels[0].ReadTiles(context.Background(), src, []image.Point{{X: 0, Y: 0}}, tiff.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ae := newArchiveEnv(t)
	ae.put("w.tif", cog, "image/tiff", "")
	var tj tileJSON
	if err := json.Unmarshal([]byte(body(t, ae.do("GET", "/w.json"))), &tj); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tj.Tiles[0], ".webp") {
		t.Errorf("TileJSON tiles: %q, want the stored WebP", tj.Tiles)
	}
	r := ae.do("GET", "/w/"+itoa(tj.MaxZoom)+"/0/0.webp")
	expectBody(t, r, 200, "MISS", string(raws[0].Data))
	if ct := r.Header.Get("Content-Type"); ct != "image/webp" {
		t.Errorf("Content-Type %q", ct)
	}
}

// TestCOGElevationInt16: an int16 DEM GDAL wrote with predictor 2 is an
// elevation model like a float one.
func TestCOGElevationInt16(t *testing.T) {
	t.Parallel()
	cog := cogOf(t, 512, 512, []string{"-b", "1", "-ot", "Int16", "-scale", "0", "255", "-200", "3000", "-a_srs", "EPSG:32632",
		"-a_ullr", "500000", "5200000", "520000", "5180000"}, "COMPRESS=LZW", "PREDICTOR=2")
	ae := newArchiveEnv(t)
	ae.put("dem16.tif", cog, "image/tiff", "")
	var tj tileJSON
	if err := json.Unmarshal([]byte(body(t, ae.do("GET", "/dem16.json"))), &tj); err != nil {
		t.Fatal(err)
	}
	x, y := xyzOf(tj.MaxZoom, tj.Center[0], tj.Center[1])
	r := ae.do("GET", "/dem16/"+itoa(tj.MaxZoom)+"/"+itoa(x)+"/"+itoa(y)+".png")
	expect(t, r, 200, "MISS")
	img, err := png.Decode(strings.NewReader(body(t, r)))
	if err != nil {
		t.Fatal(err)
	}
	c := color.NRGBAModel.Convert(img.At(128, 128)).(color.NRGBA)
	if h := terrain.DecodeRGB(c.R, c.G, c.B); c.A == 0 || h < -201 || h > 3001 {
		t.Errorf("elevation at the centre: %v (alpha %d), want -200 to 3000 m", h, c.A)
	}
}
