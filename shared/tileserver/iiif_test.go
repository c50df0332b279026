package tileserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/tiff"
	"github.com/tilesieve/tilesieve/shared/images"
	"github.com/tilesieve/tilesieve/shared/images/pixel"
	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
	"github.com/tilesieve/tilesieve/shared/tilename"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// vipsPyramid is a w×h RGB pyramidal TIFF of 256-px JPEG tiles, written by
// libvips as users write theirs.
func vipsPyramid(t *testing.T, w, h int, mean string) []byte { return imagetest.Pyramid(t, w, h, mean) }

func itoa(n int) string { return strconv.Itoa(n) }

// storedTile is stored tile (x, y) of level 0 of tif made whole, as the
// reader makes it.
func storedTile(t *testing.T, tif []byte, x, y int) []byte {
	t.Helper()
	src := tiff.ReaderAt(bytes.NewReader(tif))
	f, err := tiff.Open(context.Background(), src, int64(len(tif)), tiff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raws, _, err := f.Levels[0].ReadTiles(context.Background(), src, []image.Point{{X: x, Y: y}}, tiff.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Levels[0].WholeJPEG(raws[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIIIFServesAPyramidalTIFF: a pyramidal TIFF in S3 at a nested key is
// an IIIF image, its id's slash escaped: info.json of both versions named
// by the URL it is served from, the base URI redirected, a stored tile
// answered with the stored bytes made whole, any other request derived,
// every spelling of one request one entry in the tiers, errors as the
// specification asks.
func TestIIIFServesAPyramidalTIFF(t *testing.T) {
	t.Parallel()
	ae := newArchiveEnv(t)
	tif := vipsPyramid(t, 1000, 700, "128")
	ae.put("maps/scan.tif", tif, "image/tiff", "")

	r := ae.do("GET", "/iiif/3/maps%2Fscan/info.json")
	expect(t, r, 200, "MISS")
	var info struct {
		ID     string `json:"id"`
		Type   string `json:"type"`
		Width  int    `json:"width"`
		Height int    `json:"height"`
	}
	if err := json.Unmarshal([]byte(body(t, r)), &info); err != nil {
		t.Fatal(err)
	}
	if info.ID != "http://example.com/iiif/3/maps%2Fscan" || info.Type != "ImageService3" || info.Width != 1000 || info.Height != 700 {
		t.Errorf("info.json: got %+v", info)
	}
	if ct, vary := r.Header.Get("Content-Type"), r.Header.Get("Vary"); !strings.HasPrefix(ct, "application/ld+json") || !strings.Contains(vary, "Accept") {
		t.Errorf("info.json: Content-Type %q, Vary %q; want JSON-LD varying with Accept", ct, vary)
	}
	if ct := ae.do("GET", "/iiif/3/maps%2Fscan/info.json", "Accept", "application/json").Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("info.json asked as application/json: Content-Type %q", ct)
	}

	r = ae.do("GET", "/iiif/3/maps%2Fscan")
	expect(t, r, 303, "")
	if loc := r.Header.Get("Location"); loc != "http://example.com/iiif/3/maps%2Fscan/info.json" {
		t.Errorf("base URI: Location %q", loc)
	}

	// A viewer's request of stored tile (1, 0): its stored bytes, made whole.
	r = ae.do("GET", "/iiif/3/maps%2Fscan/256,0,256,256/256,256/0/default.jpg")
	expectBody(t, r, 200, "MISS", string(storedTile(t, tif, 1, 0)))
	if link := r.Header.Get("Link"); !strings.Contains(link, `<http://example.com/iiif/3/maps%2Fscan/256,0,256,256/max/0/default.jpg>;rel="canonical"`) {
		t.Errorf("Link: %q", link)
	}
	expect(t, ae.do("GET", "/iiif/3/maps%2Fscan/256,0,256,256/256,/0/color.jpg"), 200, "HIT-MEMORY") // the same, spelt otherwise

	// A derived answer: the whole image scaled to 100 px wide, as PNG.
	r = ae.do("GET", "/iiif/3/maps%2Fscan/full/100,/0/default.png")
	expect(t, r, 200, "MISS")
	if st := r.Header.Get("Server-Timing"); !strings.Contains(st, "pixels;dur=") {
		t.Errorf("Server-Timing of a derived answer: %q, want the pixels' time", st)
	}
	img, err := png.Decode(strings.NewReader(body(t, r)))
	if err != nil || img.Bounds().Dx() != 100 || img.Bounds().Dy() != 70 {
		t.Fatalf("full/100,: %v %v", img.Bounds(), err)
	}
	expect(t, ae.do("GET", "/iiif/3/maps%2Fscan/0,0,1000,700/100,70/0/default.png"), 200, "HIT-MEMORY")

	// Version 2.
	r = ae.do("GET", "/iiif/2/maps%2Fscan/info.json")
	expect(t, r, 200, "")
	if b := body(t, r); !strings.Contains(b, `"@id":"http://example.com/iiif/2/maps%2Fscan"`) || !strings.Contains(b, "http://iiif.io/api/image/2/context.json") {
		t.Errorf("2.1 info.json: %s", b)
	}

	for _, c := range []struct {
		path   string
		status int
	}{
		{"/iiif/3/maps%2Fscan/full/max/45/default.jpg", 501},
		{"/iiif/3/maps%2Fscan/nonsense/max/0/default.jpg", 400},
		{"/iiif/3/maps%2Fscan/full/max/0/default.gif", 400},
		{"/iiif/3/maps%2Fnone/info.json", 404},
		{"/iiif/3/maps%2Fnone/full/max/0/default.jpg", 404},
		{"/iiif/3/maps%2Fscan/extra/full/max/0/default.jpg", 404},
	} {
		if r := ae.do("GET", c.path); r.StatusCode != c.status {
			t.Errorf("%s: got %d, want %d", c.path, r.StatusCode, c.status)
		}
	}

	// A manifest that names the image service.
	r = ae.do("GET", "/iiif/3/maps%2Fscan/manifest.json")
	expect(t, r, 200, "")
	if b := body(t, r); !strings.Contains(b, `"type":"Manifest"`) || !strings.Contains(b, `"http://example.com/iiif/3/maps%2Fscan"`) {
		t.Errorf("manifest: %s", b)
	}
}

// TestIIIFPurgedWithItsSource: a new version of the TIFF, once the purge
// its upload derives reaches the instance, is what every IIIF answer of it
// is made from: info.json and derivatives alike.
func TestIIIFPurgedWithItsSource(t *testing.T) {
	t.Parallel()
	ae := newArchiveEnv(t)
	ae.put("scan.tif", vipsPyramid(t, 600, 400, "100"), "image/tiff", "")
	first := body(t, ae.do("GET", "/iiif/3/scan/full/60,/0/default.png"))
	expect(t, ae.do("GET", "/iiif/3/scan/info.json"), 200, "MISS")
	ae.put("scan.tif", vipsPyramid(t, 800, 400, "150"), "image/tiff", "")
	expect(t, ae.do("GET", "/iiif/3/scan/info.json"), 200, "HIT-MEMORY") // not purged yet
	for _, p := range tilename.Derived("scan.tif") {
		ae.srv.Engine().Purge(p)
	}
	r := ae.do("GET", "/iiif/3/scan/info.json")
	expect(t, r, 200, "MISS")
	if b := body(t, r); !strings.Contains(b, `"width":800`) {
		t.Errorf("info.json after the purge: %s", b)
	}
	if again := body(t, ae.do("GET", "/iiif/3/scan/full/60,/0/default.png")); again == first {
		t.Error("a derivative of the old version after the purge")
	}
}

// TestIIIFAnswerOverTheByteBound: a request within the limits info.json
// advertises whose encoding passes the bound on an answer's bytes (a PNG of
// noise) is refused with 501, a valid request the server cannot produce,
// not 400; the refusal is remembered for that version of the image, so
// repeating it makes nothing again, and forgotten with the version. The
// admin stats count the answers made each way.
func TestIIIFAnswerOverTheByteBound(t *testing.T) {
	t.Parallel()
	pc := pixel.DefaultConfig()
	pc.MaxBytes = 400 << 10
	ae := newArchiveEnv(t, withConfig(func(c *servertest.Config) {
		c.Images = images.Config{Limits: images.DefaultLimits, MaxDecodedPixels: images.DefaultMaxDecodedPixels, Pixel: pc}
	}))
	ae.put("scan.tif", vipsPyramid(t, 600, 400, "128"), "image/tiff", "")
	ae.put("s/1/0/0.png", []byte("tile"), "image/png", "")
	expect(t, ae.do("GET", "/s/1/0/0.png"), 200, "MISS")
	ae.clock.Advance(2 * time.Hour) // the tile expires
	const big = "/iiif/3/scan/full/max/0/default.png"
	st := ae.srv.Images.Stats()
	for i := range 3 {
		r := ae.do("GET", big)
		if b := body(t, r); r.StatusCode != http.StatusNotImplemented || !strings.Contains(b, "over 409600 bytes") {
			t.Fatalf("try %d: got %d %q, want 501 naming the bound", i, r.StatusCode, b)
		}
		if got := st.Refused.Load(); got != 1 {
			t.Fatalf("try %d: %d answers refused after being made, want 1 (the refusal remembered)", i, got)
		}
	}
	// S3 answered every read of the refused answer: it is not down, and
	// the expired tile is revalidated, not served stale.
	expect(t, ae.do("GET", "/s/1/0/0.png"), 200, "REVALIDATED")
	expect(t, ae.do("GET", "/iiif/3/scan/full/max/0/default.jpg"), 200, "MISS") // JPEG fits
	expect(t, ae.do("GET", "/iiif/3/scan/0,0,256,256/max/0/default.jpg"), 200, "MISS")

	// A new version is tried again.
	ae.put("scan.tif", vipsPyramid(t, 600, 400, "100"), "image/tiff", "")
	for _, p := range tilename.Derived("scan.tif") {
		ae.srv.Engine().Purge(p)
	}
	if r := ae.do("GET", big); r.StatusCode != http.StatusNotImplemented || st.Refused.Load() != 2 {
		t.Errorf("new version: got %d with %d refusals made, want 501 made again (2)", r.StatusCode, st.Refused.Load())
	}

	r := ae.do("GET", "/_tilesieve/stats", "Authorization", bearer)
	var stats struct {
		Images *struct {
			Stored   int64 `json:"stored"`
			Rendered int64 `json:"rendered"`
			Refused  int64 `json:"refused"`
		} `json:"images"`
	}
	if err := json.Unmarshal([]byte(body(t, r)), &stats); err != nil || stats.Images == nil {
		t.Fatalf("stats: %v %+v", err, stats)
	}
	if got := *stats.Images; got.Stored != 1 || got.Rendered != 1 || got.Refused != 2 {
		t.Errorf("stats images: %+v, want 1 stored, 1 rendered, 2 refused", got)
	}
}

// TestIIIFUpscaleAsBrowsersSendIt: IIIF 3.0's upscaling sizes (^max,
// ^w,h) reach the image as browsers send them, the caret bare or escaped,
// under an id whose slash is escaped or not: net/http keeps no raw path for
// a caret, which must not lose the id's %2F.
func TestIIIFUpscaleAsBrowsersSendIt(t *testing.T) {
	t.Parallel()
	ae := newArchiveEnv(t)
	tif := vipsPyramid(t, 600, 400, "128")
	ae.put("maps/scan.tif", tif, "image/tiff", "")
	ae.put("scan.tif", tif, "image/tiff", "")
	for _, p := range []string{
		"/iiif/3/maps%2Fscan/full/^max/0/default.jpg",
		"/iiif/3/maps%2Fscan/full/%5Emax/0/default.jpg",
		"/iiif/3/maps%2Fscan/full/%5emax/0/default.jpg",
		"/iiif/3/scan/full/^max/0/default.jpg",
		"/iiif/3/scan/full/%5Emax/0/default.jpg",
		"/iiif/3/maps%2Fscan/full/^700,/0/default.jpg",
		"/iiif/3/maps%2Fscan/0,0,300,200/%5E!700,700/0/default.jpg",
	} {
		r := ae.do("GET", p)
		if r.StatusCode != http.StatusOK {
			t.Errorf("%s: got %d %q, want 200", p, r.StatusCode, body(t, r))
			continue
		}
		if link := r.Header.Get("Link"); !strings.Contains(link, "/full/^") && !strings.Contains(link, "/0,0,300,200/^") {
			t.Errorf("%s: canonical Link %q, want the upscaling size", p, link)
		}
	}
}
