package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

// chromium returns the browser, where Debian's chromium package puts it,
// or skips the test when it is missing unless TILESIEVE_REQUIRE_CHROMIUM=1
// says it must be there.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a browser")
	}
	return tooltest.Chromium.Path(t)
}

// chromiumHang bounds one browser run. Headless Chromium now and then
// does not exit after its virtual-time budget (seen on a loaded 2-core
// machine: killed after 45 s, where a run takes 3-10 s); the stack bounds
// every fetch it makes, so a page cannot wait on it that long.
const chromiumHang = 45 * time.Second

// browsers bounds the browsers run at once: the browser tests run in
// parallel, and software WebGL on two cores, four browsers at once, ran
// out of its virtual-time budget before the page settled.
var browsers = make(chan struct{}, 2)

// runChromium loads url headless and returns its stdout; extra picks the
// output (--dump-dom or --screenshot=…). A run that does not exit within
// chromiumHang is killed and reported as hung (ok false), for the caller
// to try again; any other failure fails the test.
func runChromium(t *testing.T, bin, url string, extra ...string) (out []byte, ok bool) {
	t.Helper()
	browsers <- struct{}{}
	defer func() { <-browsers }()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumHang)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
		"--user-data-dir=" + t.TempDir(),
		// The size the viewer is laid out for (a laptop screen).
		"--window-size=1280,900",
		// Virtual time runs the page's timers without waiting for them in
		// real time; network fetches still pause it until they finish.
		"--virtual-time-budget=6000",
	}, extra...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && ctx.Err() != nil {
		t.Logf("chromium %v: no exit within %v, killed", extra, chromiumHang)
		return nil, false
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.Bytes())
	}
	return out, true
}

// settledData has Chromium load page and returns the data-* attributes its
// script set on <body> once settled says the page has settled, trying a few
// times: the DOM is dumped when the virtual-time budget ends, and on a busy
// machine the page may still be loading then (or the browser may hang,
// see runChromium). After the last attempt it returns what the page showed
// (the attributes and the whole DOM), for the caller to judge; it fails
// the test when every attempt hung.
func settledData(t *testing.T, bin, page string, settled func(map[string]string) bool, flags ...string) (map[string]string, []byte) {
	t.Helper()
	const attempts = 3
	var data map[string]string
	var dom []byte
	for i := range attempts {
		out, ok := runChromium(t, bin, page, append(flags, "--dump-dom")...)
		if !ok {
			continue
		}
		dom = out
		if data = bodyData(t, dom); settled(data) {
			break
		}
		t.Logf("page %d of %d not settled: %v", i+1, attempts, data)
	}
	if dom == nil {
		t.Fatalf("chromium hung on all %d loads of %s", attempts, page)
	}
	return data, dom
}

var bodyTag = regexp.MustCompile(`<body([^>]*)>`)
var attr = regexp.MustCompile(`data-([a-z]+)="([^"]*)"`)

// bodyData reads the data-* attributes the page script sets on <body>.
func bodyData(t *testing.T, dom []byte) map[string]string {
	t.Helper()
	m := bodyTag.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no <body> in the dumped DOM:\n%.2000s", dom)
	}
	data := map[string]string{}
	for _, a := range attr.FindAllSubmatch(m[1], -1) {
		data[string(a[1])] = unescapeHTML(string(a[2]))
	}
	return data
}

func unescapeHTML(s string) string {
	return regexp.MustCompile(`&quot;`).ReplaceAllString(regexp.MustCompile(`&amp;`).ReplaceAllString(s, "&"), `"`)
}

func TestViewerInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	// The test is about the page, not timing: on a loaded machine two
	// browser runs can be more than the local stack's 30 s REVALIDATE_AFTER
	// apart, or a journal check slower than its 1 s timeout (which makes
	// copies revalidate: failing closed). Neither may change the tiers the
	// second load shows.
	st := startEmbeddedEnv(t, nil, map[string]string{"REVALIDATE_AFTER": "1h", "SYNC_TIMEOUT": "30s"})

	// Warm a diagonal, so the page shows both tiers: those tiles come from
	// memory, the rest are misses.
	for i := range 4 {
		if a := get(t, st.TileURL(2, i, i)); a.status != http.StatusOK {
			t.Fatalf("warming 2/%d/%d: %d", i, i, a.status)
		}
	}

	// 1. A screenshot: the demo tiles are on screen in their zoom colour.
	screenshot(t, bin, st.URL+"/", "TILESIEVE_VIEWER_SCREENSHOT", func(img image.Image) (missing []string) {
		counts := colourCounts(img, map[string]color.RGBA{
			"zoom 2 tile": demotiles.ZoomColor(2),
			"MISS label":  {0xC2, 0x41, 0x0C, 0xFF},
			"HIT label":   {0x1A, 0x7F, 0x37, 0xFF},
		})
		total := img.Bounds().Dx() * img.Bounds().Dy()
		if n := counts["zoom 2 tile"]; n < total/3 {
			missing = append(missing, fmt.Sprintf("%d of %d pixels in the zoom-2 tile colour, want at least a third: the tiles are not on screen", n, total))
		}
		if counts["MISS label"] < 50 || counts["HIT label"] < 50 {
			missing = append(missing, fmt.Sprintf("tier labels not visible (MISS %d px, HIT-MEMORY %d px)", counts["MISS label"], counts["HIT label"]))
		}
		return missing
	})

	// 2. The DOM after loading: every visible tile loaded, none failed.
	data, dom := settledData(t, bin, st.URL+"/", func(d map[string]string) bool { return d["pending"] == "0" })
	loaded, _ := strconv.Atoi(data["loaded"])
	if data["failed"] != "0" || data["pending"] != "0" || loaded < 12 {
		t.Fatalf("page state: %v, want 12 or more tiles loaded, none failed or pending", data)
	}
	var tiers map[string]int
	if err := json.Unmarshal([]byte(data["tiers"]), &tiers); err != nil {
		t.Fatalf("data-tiers %q: %v", data["tiers"], err)
	}
	if tiers["HIT-MEMORY"] != loaded {
		t.Errorf("tiers %v: on the second load every tile should come from memory", tiers)
	}
	if data["covered"] != "0" {
		t.Errorf("%s visible tiles lie under a panel, want none", data["covered"])
	}
	if data["health"] != "ok" {
		t.Errorf("health panel: got %q, want ok", data["health"])
	}
	if n := bytes.Count(dom, []byte(`data-cache="HIT-MEMORY"`)); n != loaded {
		t.Errorf("%d tiles labelled HIT-MEMORY in the DOM, want %d", n, loaded)
	}
}

// colourCounts counts the pixels of img within a small distance of each
// named colour.
func colourCounts(img image.Image, want map[string]color.RGBA) map[string]int {
	out := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			for name, w := range want {
				if near(c.R, w.R) && near(c.G, w.G) && near(c.B, w.B) {
					out[name]++
				}
			}
		}
	}
	return out
}

func near(a, b uint8) bool { return int(a)-int(b) <= 4 && int(b)-int(a) <= 4 }

// screenshot has Chromium render page until check finds nothing missing in
// what it drew, and reports what is still missing after the last of a few
// attempts: headless Chromium takes the picture when its virtual-time
// budget ends, and a software-rendered map on a busy machine may not have
// drawn by then (or the browser may hang, see runChromium). With the environment variable keep set, the last PNG is
// also copied there (to refresh a picture in docs/).
func screenshot(t *testing.T, bin, page, keep string, check func(image.Image) []string, flags ...string) {
	t.Helper()
	const attempts = 3
	missing := []string{fmt.Sprintf("chromium hung on all %d loads", attempts)}
	for i := range attempts {
		shot := filepath.Join(t.TempDir(), "shot.png")
		if _, ok := runChromium(t, bin, page, append(flags, "--screenshot="+shot)...); !ok {
			continue
		}
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if dst := os.Getenv(keep); dst != "" {
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if missing = check(img); len(missing) == 0 {
			return
		}
		t.Logf("screenshot %d of %d: %v", i+1, attempts, missing)
	}
	for _, m := range missing {
		t.Error("screenshot: " + m)
	}
}
