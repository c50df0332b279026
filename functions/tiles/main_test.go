package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/lambdatest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/s3local"
	"github.com/tilesieve/tilesieve/shared/s3local/s3localtest"

	fixtures "github.com/tilesieve/tilesieve/events"
)

const adminToken = "local-admin-token" // the token the url-admin-* fixtures carry

// demoTile is a real PNG, so the test sees binary bytes survive base64.
func demoTile(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// s3WithDemo starts an in-process S3 endpoint holding demo/3/4/2.png.
func s3WithDemo(t *testing.T) (*s3local.Server, string, []byte, string) {
	t.Helper()
	s3e := s3localtest.Start(t, "tiles")
	body := demoTile(t)
	etag, err := s3local.Put(context.Background(), s3e.Client, "tiles", "tiles/demo/3/4/2.png", body, "image/png", "")
	if err != nil {
		t.Fatal(err)
	}
	return s3e.Server, s3e.URL, body, etag
}

func fixture(t *testing.T, name string) *events.LambdaFunctionURLRequest {
	t.Helper()
	b, err := fixtures.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &ev
}

func decodeBody(t *testing.T, r *events.LambdaFunctionURLResponse) []byte {
	t.Helper()
	if !r.IsBase64Encoded {
		return []byte(r.Body)
	}
	b, err := base64.StdEncoding.DecodeString(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBufferedFixtures runs every function-URL fixture through the buffered
// adapter and the composed function, over the in-process S3 endpoint.
func TestBufferedFixtures(t *testing.T) {
	t.Parallel()
	srv, url, body, etag := s3WithDemo(t)
	cfg, err := config.LoadTiles(func(k string) string {
		return map[string]string{
			"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "ADMIN_TOKEN": adminToken,
			"DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "64MiB", "MEM_CACHE_BYTES": "64MiB",
		}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	o := origin.NewWithS3(srv.Client(url), origin.Config{Bucket: "tiles", Prefix: "tiles/"})
	a, err := app.NewWithOrigin(context.Background(), cfg, o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	h := bufferedHandler(withDeadlineMargin(a.Handler), slog.New(slog.DiscardHandler))
	invoke := func(ev *events.LambdaFunctionURLRequest) *events.LambdaFunctionURLResponse {
		t.Helper()
		r, err := h(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r := invoke(fixture(t, "url-get-tile.json"))
	if r.StatusCode != 200 || !r.IsBase64Encoded || !bytes.Equal(decodeBody(t, r), body) {
		t.Fatalf("get: %d base64=%v, %d bytes", r.StatusCode, r.IsBase64Encoded, len(decodeBody(t, r)))
	}
	if r.Headers["X-Cache"] != "MISS" || r.Headers["Etag"] != etag || r.Headers["Content-Type"] != "image/png" {
		t.Fatalf("get headers: %v", r.Headers)
	}
	if r := invoke(fixture(t, "url-get-tile.json")); r.Headers["X-Cache"] != "HIT-MEMORY" {
		t.Fatalf("second get: %v", r.Headers)
	}

	head := invoke(fixture(t, "url-head-tile.json"))
	if head.StatusCode != 200 || head.Body != "" || head.Headers["Content-Length"] != strconv.Itoa(len(body)) {
		t.Fatalf("head: %d %q %v", head.StatusCode, head.Body, head.Headers)
	}

	cond := fixture(t, "url-get-conditional.json")
	cond.Headers["if-none-match"] = etag
	if r := invoke(cond); r.StatusCode != 304 || r.Body != "" {
		t.Fatalf("conditional: %d %q", r.StatusCode, r.Body)
	}

	rng := invoke(fixture(t, "url-get-range.json"))
	if rng.StatusCode != 206 || !bytes.Equal(decodeBody(t, rng), body[:100]) {
		t.Fatalf("range: %d %v", rng.StatusCode, rng.Headers)
	}

	bad := invoke(fixture(t, "url-bad-path.json"))
	if bad.StatusCode != 400 {
		t.Fatalf("bad path: %d", bad.StatusCode)
	}

	health := invoke(fixture(t, "url-health.json"))
	if health.StatusCode != 200 || health.IsBase64Encoded || !strings.Contains(health.Body, `"status": "ok"`) {
		t.Fatalf("health: %d %q", health.StatusCode, health.Body)
	}
	if r := invoke(fixture(t, "url-admin-stats.json")); r.StatusCode != 200 || !strings.Contains(r.Body, "memory_hits") {
		t.Fatalf("stats: %d %q", r.StatusCode, r.Body)
	}
	keys := invoke(fixture(t, "url-admin-keys.json"))
	if keys.StatusCode != 200 || !strings.Contains(keys.Body, `"key":"demo/3/4/2.png"`) {
		t.Fatalf("keys: %d %q", keys.StatusCode, keys.Body)
	}
	purge := invoke(fixture(t, "url-admin-purge.json"))
	if purge.StatusCode != 200 || !strings.Contains(purge.Body, `"journal_seq": 1`) {
		t.Fatalf("purge: %d %q", purge.StatusCode, purge.Body)
	}
	if r := invoke(fixture(t, "url-get-tile.json")); r.Headers["X-Cache"] != "MISS" {
		t.Fatalf("after purge: %v", r.Headers)
	}
}

func TestBufferedLimit(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{0xff}, 5<<20) // 5 MiB binary: 6.7 MiB once base64-encoded
	h := bufferedHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(big)
	}), slog.New(slog.DiscardHandler))
	r, err := h(context.Background(), &events.LambdaFunctionURLRequest{RawPath: "/big.png"})
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Body, "6 MB") || !strings.Contains(r.Body, "RESPONSE_STREAM") {
		t.Fatalf("got %d %q", r.StatusCode, r.Body)
	}
}

func TestBufferedBadEscape(t *testing.T) {
	t.Parallel()
	h := bufferedHandler(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	r, err := h(context.Background(), &events.LambdaFunctionURLRequest{RawPath: "/osm/%zz.png"})
	if err != nil || r.StatusCode != http.StatusBadRequest {
		t.Fatalf("got %+v, %v", r, err)
	}
}

// TestBootstrapUnderEmulator builds the real bootstrap and runs it under the
// Lambda Runtime Interface Emulator, one invocation at a time.
func TestBootstrapUnderEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a binary")
	}
	_, url, body, etag := s3WithDemo(t)
	bootstrap := lambdatest.Build(t, "github.com/tilesieve/tilesieve/functions/tiles")
	emu := lambdatest.Start(t, bootstrap, lambdatest.Env(
		"TILES_BUCKET", "tiles", "TILES_PREFIX", "tiles/",
		"AWS_ENDPOINT_URL", url, "S3_FORCE_PATH_STYLE", "true", "AWS_REGION", s3local.DefaultRegion,
		"AWS_ACCESS_KEY_ID", s3local.DefaultAccessKey, "AWS_SECRET_ACCESS_KEY", s3local.DefaultSecretKey,
		"AWS_EC2_METADATA_DISABLED", "true", "AWS_CONFIG_FILE", "/dev/null", "AWS_SHARED_CREDENTIALS_FILE", "/dev/null",
		"DISK_CACHE_DIR", t.TempDir(), "DISK_CACHE_BYTES", "64MiB", "ADMIN_TOKEN", adminToken,
	)...)

	event, err := fixtures.FS.ReadFile("url-get-tile.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"MISS", "HIT-MEMORY"} {
		var r events.LambdaFunctionURLResponse
		if err := json.Unmarshal(emu.Invoke(t, event), &r); err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != 200 || r.Headers["X-Cache"] != want || r.Headers["Etag"] != etag {
			t.Fatalf("invocation %d: %d %v", i, r.StatusCode, r.Headers)
		}
		if got := decodeBody(t, &r); !bytes.Equal(got, body) {
			t.Fatalf("invocation %d: body of %d bytes differs from the %d stored", i, len(got), len(body))
		}
	}
	health, _ := fixtures.FS.ReadFile("url-health.json")
	var r events.LambdaFunctionURLResponse
	if err := json.Unmarshal(emu.Invoke(t, health), &r); err != nil || r.StatusCode != 200 {
		t.Fatalf("health: %+v %v", r, err)
	}
	var h struct {
		Memory struct{ Entries int } `json:"memory"`
	}
	if err := json.NewDecoder(io.NopCloser(strings.NewReader(r.Body))).Decode(&h); err != nil || h.Memory.Entries != 1 {
		t.Fatalf("health body %q: %v", r.Body, err)
	}
}

// FuzzRequestFromEvent: any function-URL event (the path, query and headers
// are the client's) becomes a request or a clean 400, never a panic.
func FuzzRequestFromEvent(f *testing.F) {
	for _, name := range []string{"url-get-tile.json", "url-bad-path.json", "url-admin-purge.json", "url-get-range.json"} {
		b, err := fixtures.FS.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var ev events.LambdaFunctionURLRequest
		if err := json.Unmarshal(b, &ev); err != nil {
			f.Fatal(err)
		}
		f.Add(ev.RawPath, ev.RawQueryString, ev.RequestContext.HTTP.Method, ev.Headers["accept-encoding"], ev.Body, ev.IsBase64Encoded)
	}
	f.Add("/%zz", "a=%", "GET", "", "", false)
	f.Add("//x/../y", "", "BREW", "gzip", "!!notbase64", true)
	h := bufferedHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(r.URL.EscapedPath()))
	}), slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, path, query, method, ae, body string, b64 bool) {
		ev := &events.LambdaFunctionURLRequest{
			RawPath: path, RawQueryString: query, Body: body, IsBase64Encoded: b64,
			Headers: map[string]string{"accept-encoding": ae},
		}
		ev.RequestContext.HTTP.Method = method
		r, err := h(context.Background(), ev)
		if err != nil || r == nil {
			t.Fatalf("handler error %v", err)
		}
		if r.StatusCode != 200 && r.StatusCode != 400 {
			t.Fatalf("status %d", r.StatusCode)
		}
	})
}
