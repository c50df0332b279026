package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/lambdatest"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"

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
	etag := s3localtest.Put(t, s3e.Client, "tiles", "tiles/demo/3/4/2.png", body, "image/png", "")
	return s3e.Server, s3e.URL, body, etag
}

// withHeader returns the event with one request header set.
func withHeader(t *testing.T, event []byte, name, value string) []byte {
	t.Helper()
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	h, _ := ev["headers"].(map[string]any)
	if h == nil {
		h = map[string]any{}
		ev["headers"] = h
	}
	h[name] = value
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
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

// tileFunction is the composed tile function over an in-process S3, with
// both Lambda entries: invoke runs an event through the buffered handler
// exactly as the runtime does (event bytes in, payload bytes out); stream
// runs it through the streaming one and reads the body to the end.
type tileFunction struct {
	app    *app.App
	invoke func(event []byte) *events.LambdaFunctionURLResponse
	stream func(event []byte) (*events.LambdaFunctionURLStreamingResponse, []byte)
	// streamInvoke runs the event through the streaming handler as the
	// runtime does, and returns the status of the answer's prelude.
	streamInvoke func(event []byte) int
}

func newTileFunction(t *testing.T, s3srv *s3local.Server, url string, extra ...string) *tileFunction {
	t.Helper()
	env := map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "ADMIN_TOKEN": adminToken,
		"DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "64MiB", "MEM_CACHE_BYTES": "64MiB",
		"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", // on Lambda: BUFFERED payloads are prepared
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	o := origin.NewWithS3(s3srv.Client(url), app.OriginConfig(cfg))
	log := slog.New(slog.DiscardHandler)
	a, err := app.NewWithOrigin(context.Background(), cfg, o, log, adapterOptions(cfg)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a) }) // checks and revalidations beside answers end before the test's directories go
	h := withDeadlineMargin(withRecover(a.Handler, log))
	b := &buffered{srv: a.Server, next: h, log: log}
	runtime := lambda.NewHandler(withDeadline(b.Handle))
	streaming := streamHandler(h, log)
	streamRuntime := lambda.NewHandler(streaming)
	return &tileFunction{
		app: a,
		invoke: func(event []byte) *events.LambdaFunctionURLResponse {
			t.Helper()
			out, err := runtime.Invoke(context.Background(), event)
			if err != nil {
				t.Fatal(err)
			}
			var r events.LambdaFunctionURLResponse
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("payload %.200q: %v", out, err)
			}
			return &r
		},
		stream: func(event []byte) (*events.LambdaFunctionURLStreamingResponse, []byte) {
			t.Helper()
			var ev urlEvent
			if err := json.Unmarshal(event, &ev); err != nil {
				t.Fatal(err)
			}
			r, err := streaming(context.Background(), &ev)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			return r, body
		},
		streamInvoke: func(event []byte) int {
			t.Helper()
			out, err := streamRuntime.Invoke(context.Background(), event)
			if err != nil {
				t.Fatal(err)
			}
			status, ok := streamedStatus(out)
			if !ok {
				t.Fatalf("streamed payload %.200q: no prelude", out)
			}
			return status
		},
	}
}

// streamedStatus is the status code in the prelude of a streamed payload
// (a JSON object ended by 8 NUL bytes), and whether there is one.
func streamedStatus(out []byte) (int, bool) {
	prelude, _, ok := bytes.Cut(out, make([]byte, 8))
	var p struct {
		StatusCode int `json:"statusCode"`
	}
	if err := json.Unmarshal(prelude, &p); !ok || err != nil {
		return 0, false
	}
	return p.StatusCode, true
}

// TestBufferedFixtures runs every function-URL fixture through the buffered
// adapter and the composed function, over the in-process S3 endpoint.
func TestBufferedFixtures(t *testing.T) {
	t.Parallel()
	srv, url, body, etag := s3WithDemo(t)
	fn := newTileFunction(t, srv, url)
	invoke := fn.invoke

	r := invoke(fixtures.Read(t, "url-get-tile.json"))
	if r.StatusCode != 200 || !r.IsBase64Encoded || !bytes.Equal(decodeBody(t, r), body) {
		t.Fatalf("get: %d base64=%v, %d bytes", r.StatusCode, r.IsBase64Encoded, len(decodeBody(t, r)))
	}
	if r.Headers["X-Cache"] != "MISS" || r.Headers["Etag"] != etag || r.Headers["Content-Type"] != "image/png" {
		t.Fatalf("get headers: %v", r.Headers)
	}
	hit := invoke(fixtures.Read(t, "url-get-tile.json"))
	if hit.Headers["X-Cache"] != "HIT-MEMORY" || !bytes.Equal(decodeBody(t, hit), body) || hit.Headers["Etag"] != etag ||
		hit.Headers["Content-Length"] != strconv.Itoa(len(body)) || !strings.HasPrefix(hit.Headers["Server-Timing"], "memory;dur=") {
		t.Fatalf("second get (prepared payload): %v", hit.Headers)
	}

	head := invoke(fixtures.Read(t, "url-head-tile.json"))
	if head.StatusCode != 200 || head.Body != "" || head.Headers["Content-Length"] != strconv.Itoa(len(body)) {
		t.Fatalf("head: %d %q %v", head.StatusCode, head.Body, head.Headers)
	}

	cond := withHeader(t, fixtures.Read(t, "url-get-conditional.json"), "if-none-match", etag)
	if r := invoke(cond); r.StatusCode != 304 || r.Body != "" {
		t.Fatalf("conditional: %d %q", r.StatusCode, r.Body)
	}

	rng := invoke(fixtures.Read(t, "url-get-range.json"))
	if rng.StatusCode != 206 || !bytes.Equal(decodeBody(t, rng), body[:100]) {
		t.Fatalf("range: %d %v", rng.StatusCode, rng.Headers)
	}

	bad := invoke(fixtures.Read(t, "url-bad-path.json"))
	if bad.StatusCode != 400 {
		t.Fatalf("bad path: %d", bad.StatusCode)
	}

	health := invoke(fixtures.Read(t, "url-health.json"))
	if health.StatusCode != 200 || health.IsBase64Encoded || !strings.Contains(health.Body, `"status": "ok"`) {
		t.Fatalf("health: %d %q", health.StatusCode, health.Body)
	}
	if r := invoke(fixtures.Read(t, "url-admin-stats.json")); r.StatusCode != 200 || !strings.Contains(r.Body, "memory_hits") {
		t.Fatalf("stats: %d %q", r.StatusCode, r.Body)
	}
	keys := invoke(fixtures.Read(t, "url-admin-keys.json"))
	if keys.StatusCode != 200 || !strings.Contains(keys.Body, `"key":"demo/3/4/2.png"`) {
		t.Fatalf("keys: %d %q", keys.StatusCode, keys.Body)
	}
	purge := invoke(fixtures.Read(t, "url-admin-purge.json"))
	if purge.StatusCode != 200 || !strings.Contains(purge.Body, `"journal_seq": 1`) {
		t.Fatalf("purge: %d %q", purge.StatusCode, purge.Body)
	}
	if r := invoke(fixtures.Read(t, "url-get-tile.json")); r.Headers["X-Cache"] != "MISS" {
		t.Fatalf("after purge: %v", r.Headers)
	}
}

// TestAnswersDecodeToTheTile: in both function-URL modes, from memory
// (the prepared payload) and not, a tile comes back byte for byte: text,
// binary, gzip (passed through, or decoded for a client without gzip) and
// empty; and HEAD carries no body.
func TestAnswersDecodeToTheTile(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Repeat("vector tile ", 100)))
	zw.Close()
	tiles := []struct {
		key, contentType, encoding string
		body                       []byte
	}{
		{"t/1/0/0.json", "application/json", "", []byte(`{"text":"é \"quoted\" <tag> &amp;"}`)},
		{"t/1/0/1.png", "image/png", "", demoTile(t)},
		{"t/1/1/0.pbf", "application/vnd.mapbox-vector-tile", "gzip", gz.Bytes()},
		{"t/1/1/1.pbf", "application/vnd.mapbox-vector-tile", "", nil},
	}
	for _, tl := range tiles {
		s3localtest.Put(t, s3e.Client, "tiles", "tiles/"+tl.key, tl.body, tl.contentType, tl.encoding)
	}
	fn := newTileFunction(t, s3e.Server, s3e.URL, "CORS_ALLOW_ORIGINS", "https://maps.example.com")
	event := func(method, key string) []byte {
		ev := fixtures.Read(t, "url-get-tile.json")
		var m map[string]any
		json.Unmarshal(ev, &m)
		m["rawPath"] = "/" + key
		m["requestContext"].(map[string]any)["http"].(map[string]any)["method"] = method
		m["headers"] = map[string]any{"accept-encoding": "gzip", "origin": "https://maps.example.com"}
		b, _ := json.Marshal(m)
		return b
	}
	for _, tl := range tiles {
		for _, round := range []string{"MISS", "HIT-MEMORY"} {
			r := fn.invoke(event("GET", tl.key))
			if got := decodeBody(t, r); r.StatusCode != 200 || !bytes.Equal(got, tl.body) || r.Headers["X-Cache"] != round {
				t.Errorf("buffered %s (%s): %d %s, %d bytes, want %d", tl.key, round, r.StatusCode, r.Headers["X-Cache"], len(got), len(tl.body))
			}
			if r.Headers["Access-Control-Allow-Origin"] != "https://maps.example.com" || r.Headers["Content-Encoding"] != tl.encoding {
				t.Errorf("buffered %s (%s): headers %v", tl.key, round, r.Headers)
			}
			sr, body := fn.stream(event("GET", tl.key))
			if sr.StatusCode != 200 || !bytes.Equal(body, tl.body) {
				t.Errorf("streamed %s: %d, %d bytes, want %d", tl.key, sr.StatusCode, len(body), len(tl.body))
			}
		}
		if r := fn.invoke(event("HEAD", tl.key)); r.StatusCode != 200 || r.Body != "" || r.Headers["Content-Length"] != strconv.Itoa(len(tl.body)) {
			t.Errorf("buffered HEAD %s: %d, body %q, %v", tl.key, r.StatusCode, r.Body, r.Headers)
		}
		if sr, body := fn.stream(event("HEAD", tl.key)); sr.StatusCode != 200 || len(body) != 0 {
			t.Errorf("streamed HEAD %s: %d, %d body bytes", tl.key, sr.StatusCode, len(body))
		}
	}
	// A client without gzip gets the decoded tile, in both modes.
	ev := event("GET", "t/1/1/0.pbf")
	ev = withHeader(t, ev, "accept-encoding", "identity")
	if r := fn.invoke(ev); !bytes.Equal(decodeBody(t, r), []byte(strings.Repeat("vector tile ", 100))) || r.Headers["Content-Encoding"] != "" {
		t.Errorf("decoded for an identity client: %v", r.Headers)
	}
}

// panicOnce is the real S3 origin, except that its first fetch panics.
type panicOnce struct {
	done atomic.Bool
	next servertest.Origin
}

func (p *panicOnce) Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error) {
	if !p.done.Swap(true) {
		panic("injected panic in a fetch")
	}
	return p.next.Get(ctx, key, ifNoneMatch)
}

// TestPanicIsA500: a panic while answering, in a fetch's own goroutine or
// in the handler, is a 500 and a log line; the next invocation is answered.
func TestPanicIsA500(t *testing.T) {
	t.Parallel()
	s3srv, url, body, _ := s3WithDemo(t)
	log := slog.New(slog.DiscardHandler)
	mem, err := memory.New(memory.Config{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	o := &panicOnce{next: origin.NewWithS3(s3srv.Client(url), origin.Config{Bucket: "tiles", Prefix: "tiles/"})}
	srv, err := servertest.New(servertest.Config{Extra: buildPayload}, servertest.Deps{Memory: mem, Origin: o, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	b := &buffered{srv: srv.Server, next: withRecover(srv, log), log: log}
	h := lambda.NewHandler(b.Handle)
	invoke := func(event []byte) events.LambdaFunctionURLResponse {
		out, err := h.Invoke(context.Background(), event)
		var r events.LambdaFunctionURLResponse
		if err != nil || json.Unmarshal(out, &r) != nil {
			t.Fatalf("%s %v", out, err)
		}
		return r
	}
	if r := invoke(fixtures.Read(t, "url-get-tile.json")); r.StatusCode != 500 {
		t.Fatalf("panicking fetch: %d, want 500", r.StatusCode)
	}
	if r := invoke(fixtures.Read(t, "url-get-tile.json")); r.StatusCode != 200 || !bytes.Equal(decodeBody(t, &r), body) {
		t.Fatalf("next invocation: %d", r.StatusCode)
	}
	// A panic in the handler itself, in the buffered adapter and over HTTP.
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	b.next = withRecover(boom, log)
	if r := invoke(fixtures.Read(t, "url-health.json")); r.StatusCode != 500 {
		t.Fatalf("handler panic: %d, want 500", r.StatusCode)
	}
	rec := httptest.NewRecorder()
	withRecover(boom, log).ServeHTTP(rec, httptest.NewRequest("GET", "/x.png", nil))
	if rec.Code != 500 {
		t.Fatalf("HTTP handler panic: %d, want 500", rec.Code)
	}
}

func TestBufferedLimit(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	big := bytes.Repeat([]byte{0xff}, 5<<20) // 5 MiB binary: 6.7 MiB once base64-encoded
	s3localtest.Put(t, s3e.Client, "tiles", "tiles/big.png", big, "image/png", "")
	fn := newTileFunction(t, s3e.Server, s3e.URL)
	ev := fixtures.Read(t, "url-get-tile.json")
	var m map[string]any
	json.Unmarshal(ev, &m)
	m["rawPath"] = "/big.png"
	ev, _ = json.Marshal(m)
	for range 2 { // a miss, then a memory hit
		r := fn.invoke(ev)
		if r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Body, "6 MB") || !strings.Contains(r.Body, "RESPONSE_STREAM") {
			t.Fatalf("got %d %q", r.StatusCode, r.Body)
		}
	}
}

// TestJournalIsNeverATile: with an empty TILES_PREFIX the purge journal
// sits among the tiles' objects; however its path is spelled, neither
// function-URL mode answers it, from S3 or from a tier.
func TestJournalIsNeverATile(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	fn := newTileFunction(t, s3e.Server, s3e.URL, "TILES_PREFIX", "")
	if _, err := fn.app.Journal.Append(context.Background(), []string{"secret-tileset/"}, "s3:ObjectCreated:Put"); err != nil {
		t.Fatal(err)
	}
	// Anything else under the reserved prefix is out of reach as well.
	s3localtest.Put(t, s3e.Client, "tiles", "_tilesieve/notes.json", []byte(`{"secret-tileset":1}`), "application/json", "")
	for _, path := range []string{
		"/%5ftilesieve/journal/head.json",
		"/%5Ftilesieve/journal/head.json",
		"/%5f%74ilesieve/journal/head.json",
		"/_tilesieve%2fjournal%2fhead.json",
		"/_tilesieve/journal/head.json",
		"/%5ftilesieve/notes.json",
	} {
		t.Run(path, func(t *testing.T) {
			ev := withPath(t, fixtures.Read(t, "url-get-tile.json"), path)
			for round := range 2 { // a tier must not have kept it either
				r := fn.invoke(ev)
				if body := decodeBody(t, r); bytes.Contains(body, []byte("secret-tileset")) || r.StatusCode == http.StatusOK || r.Headers["X-Cache"] != "" {
					t.Fatalf("buffered, round %d: got %d %v %.200q, want no tile answer", round, r.StatusCode, r.Headers, body)
				}
				sr, body := fn.stream(ev)
				if bytes.Contains(body, []byte("secret-tileset")) || sr.StatusCode == http.StatusOK || sr.Headers["X-Cache"] != "" {
					t.Fatalf("streamed, round %d: got %d %v %.200q, want no tile answer", round, sr.StatusCode, sr.Headers, body)
				}
			}
		})
	}
	if n := fn.app.Memory.Len(); n != 0 {
		t.Errorf("got %d entries in the memory tier, want 0", n)
	}
}

// TestNotAnEventIsA400: a payload that is JSON but not a function-URL event
// is answered 400 by the handler (not failed by the runtime, not a crash),
// and the next invocation is still a memory hit: the process and its
// memory tier live on.
func TestNotAnEventIsA400(t *testing.T) {
	t.Parallel()
	srv, url, body, _ := s3WithDemo(t)
	fn := newTileFunction(t, srv, url)
	if r := fn.invoke(fixtures.Read(t, "url-get-tile.json")); r.Headers["X-Cache"] != "MISS" {
		t.Fatalf("got %d %v, want a MISS", r.StatusCode, r.Headers)
	}
	for _, payload := range []string{
		`null`, ` null `, `{}`, `[]`, `[null]`, `"x"`, `1`, `true`,
		`{"rawPath":5}`, `{"headers":[]}`, `{"requestContext":null}`, `{"requestContext":{"http":"GET"}}`,
	} {
		t.Run(payload, func(t *testing.T) {
			if r := fn.invoke([]byte(payload)); r.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %d %q, want 400", r.StatusCode, r.Body)
			}
			if got := fn.streamInvoke([]byte(payload)); got != http.StatusBadRequest {
				t.Fatalf("streamed: got %d, want 400", got)
			}
			r := fn.invoke(fixtures.Read(t, "url-get-tile.json"))
			if r.StatusCode != http.StatusOK || r.Headers["X-Cache"] != "HIT-MEMORY" || !bytes.Equal(decodeBody(t, r), body) {
				t.Fatalf("next invocation: got %d %v, want 200 HIT-MEMORY", r.StatusCode, r.Headers)
			}
		})
	}
}

// TestDotNamesAreNotFound: a TileJSON path whose tileset name would be a
// dot segment is a 404 (or a 400), never a 5xx: no such tileset exists.
func TestDotNamesAreNotFound(t *testing.T) {
	t.Parallel()
	srv, url, _, _ := s3WithDemo(t)
	fn := newTileFunction(t, srv, url)
	for _, path := range []string{"/..json", "/%2e.json", "/%2E.json", "/%2e%2e.json", "/.json", "/...json", "/..pmtiles", "/../1/0/0.png"} {
		t.Run(path, func(t *testing.T) {
			ev := withPath(t, fixtures.Read(t, "url-get-tile.json"), path)
			if r := fn.invoke(ev); r.StatusCode != http.StatusNotFound && r.StatusCode != http.StatusBadRequest {
				t.Errorf("buffered: got %d %q, want 404 or 400", r.StatusCode, r.Body)
			}
			if sr, body := fn.stream(ev); sr.StatusCode != http.StatusNotFound && sr.StatusCode != http.StatusBadRequest {
				t.Errorf("streamed: got %d %q, want 404 or 400", sr.StatusCode, body)
			}
		})
	}
}

// TestBadRequestLine: a path with a bad escape, or a method that is not a
// token, is answered with a 4xx in both invoke modes, not a failed
// invocation (which the client would see as a 502, and the function's
// error metric count); a query with one does not concern a tile. The
// buffered adapter answers a method as the server does (405: not GET or
// HEAD), the streaming one 400, as http.NewRequest refuses it first.
func TestBadRequestLine(t *testing.T) {
	t.Parallel()
	srv, url, _, _ := s3WithDemo(t)
	fn := newTileFunction(t, srv, url)
	for _, c := range []struct {
		field, value       string
		buffered, streamed int
	}{
		{"rawPath", "/osm/%zz.png", http.StatusBadRequest, http.StatusBadRequest},
		{"rawQueryString", "a=%", http.StatusOK, http.StatusOK},
		{"method", "BR EW", http.StatusMethodNotAllowed, http.StatusBadRequest},
	} {
		t.Run(c.field, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(fixtures.Read(t, "url-get-tile.json"), &m); err != nil {
				t.Fatal(err)
			}
			if c.field == "method" {
				m["requestContext"].(map[string]any)["http"].(map[string]any)["method"] = c.value
			} else {
				m[c.field] = c.value
			}
			ev, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if r := fn.invoke(ev); r.StatusCode != c.buffered {
				t.Errorf("buffered: got %d %q, want %d", r.StatusCode, decodeBody(t, r), c.buffered)
			}
			if got := fn.streamInvoke(ev); got != c.streamed {
				t.Errorf("streamed: got %d, want %d", got, c.streamed)
			}
		})
	}
}

// TestBootstrapUnderEmulator builds the real bootstrap and runs it under the
// Lambda Runtime Interface Emulator, one invocation at a time.
func TestBootstrapUnderEmulator(t *testing.T) {
	bootstrap := lambdatest.Bootstrap(t, "github.com/tilesieve/tilesieve/functions/tiles")
	_, url, body, etag := s3WithDemo(t)
	emu := lambdatest.Start(t, bootstrap, append(lambdatest.S3Env(url), lambdatest.Env(
		"TILES_BUCKET", "tiles", "TILES_PREFIX", "tiles/",
		"DISK_CACHE_DIR", t.TempDir(), "DISK_CACHE_BYTES", "64MiB", "ADMIN_TOKEN", adminToken,
	)...)...)

	event, err := fixtures.FS.ReadFile("url-get-tile.json")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"MISS", "HIT-MEMORY"} {
		if i > 0 {
			// A null invocation between the two: a 400, and the process
			// (with its memory tier) lives on.
			var r events.LambdaFunctionURLResponse
			if err := json.Unmarshal(emu.Invoke(t, []byte("null")), &r); err != nil || r.StatusCode != http.StatusBadRequest {
				t.Fatalf("null invocation: got %+v, %v; want 400", r, err)
			}
		}
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

// FuzzRequestFromEvent: any payload the runtime hands over (the path, query
// and headers are the client's) becomes an answer in both invoke modes,
// never a panic, a 500 or a runtime error. It is seeded with the real function-URL fixtures.
//
// Each execution must be cheap and repeat itself exactly, or the fuzzer
// spends its time minimising inputs whose coverage moves under it: the
// server is built once, and its S3 endpoint refuses connections, so a tile
// request is a prompt 502 without a network exchange or a cached answer
// that would change the next run's path.
func FuzzRequestFromEvent(f *testing.F) {
	for _, name := range urlFixtures(f) {
		f.Add(fixtures.Read(f, name))
	}
	for _, seed := range []string{
		`{"rawPath":"/%zz","rawQueryString":"a=%","requestContext":{"http":{"method":"GET"}}}`,
		`{"rawPath":"//x/../y","requestContext":{"http":{"method":"BREW"}},"headers":{"range":"bytes=-0","accept-encoding":"gzip;q=0"}}`,
		`{"rawPath":"/_tilesieve/keys","headers":{"authorization":"Bearer x"}}`,
		`{"rawPath":"/%5ftilesieve/journal/head.json"}`,
		`{"rawPath":"/..json"}`,
		`{"rawPath":"/%2e.json","headers":{"if-none-match":"\"x/tilejson\""}}`,
		`null`, `{}`, `[]`, `"x"`, `{"rawPath":5}`,
	} {
		f.Add([]byte(seed))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	s3e := s3localtest.Start(f, "tiles")
	cfg, err := config.LoadTiles(func(k string) string {
		return map[string]string{"TILES_BUCKET": "tiles", "DISK_CACHE_BYTES": "0", "ADMIN_TOKEN": adminToken,
			"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9"}[k]
	})
	if err != nil {
		f.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(s3e.Server.Client(refused), origin.Config{Bucket: "tiles", MaxAttempts: 1}), log, adapterOptions(cfg)...)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { closeApp(f, a) })
	b := &buffered{srv: a.Server, next: withRecover(a.Handler, log), log: log}
	h := lambda.NewHandler(b.Handle)
	streaming := lambda.NewHandler(streamHandler(withRecover(a.Handler, log), log))
	f.Fuzz(func(t *testing.T, event []byte) {
		if !json.Valid(event) {
			return // the runtime refuses what is not JSON before the handler runs
		}
		out, err := h.Invoke(context.Background(), event)
		if err != nil {
			t.Fatalf("runtime error %v for %.300q", err, event)
		}
		var r events.LambdaFunctionURLResponse
		if err := json.Unmarshal(out, &r); err != nil || r.StatusCode < 200 || r.StatusCode > 599 || r.StatusCode == 500 {
			t.Fatalf("answer %.300q: %v", out, err)
		}
		if out, err = streaming.Invoke(context.Background(), event); err != nil {
			t.Fatalf("streamed: runtime error %v for %.300q", err, event)
		}
		if status, ok := streamedStatus(out); !ok || status < 200 || status > 599 || status == 500 {
			t.Fatalf("streamed answer %.300q", out)
		}
	})
}

// TestLocalServerDropsSlowReaders: the local server's write timeout is
// sized from MAX_TILE_BYTES at a minimum rate, and a client that reads
// slower is dropped rather than held indefinitely.
func TestLocalServerDropsSlowReaders(t *testing.T) {
	t.Parallel()
	if got := (config.Tiles{MaxTileBytes: 16 << 20}).WriteTimeout(); got != 256*time.Second {
		t.Errorf("WriteTimeout with 16 MiB tiles = %v, want 256s", got)
	}
	if got := (config.Tiles{MaxTileBytes: 1 << 10}).WriteTimeout(); got != 30*time.Second {
		t.Errorf("WriteTimeout with 1 KiB tiles = %v, want the 30s floor", got)
	}
	big := bytes.Repeat([]byte("x"), 8<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(big) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, addr, h, 200*time.Millisecond, slog.New(slog.DiscardHandler)) }()
	var conn net.Conn
	for deadline := time.Now().Add(5 * time.Second); ; {
		if conn, err = net.Dial("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /t.png HTTP/1.1\r\nHost: x\r\n\r\n")
	// Read a little at a time, far slower than the body arrives (at most
	// 4 KiB/ms: 8 MiB would take 2 s, ten times the write timeout), until
	// the server gives up on the connection. What the kernel buffered
	// before the drop (about 4 MB on loopback) is drained at this rate.
	buf := make([]byte, 4<<10)
	total := 0
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	for {
		n, err := conn.Read(buf)
		total += n
		if err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("read %d bytes before the drop", total)
	if total >= len(big) {
		t.Fatalf("a slow reader got the whole %d bytes; the write timeout did not drop it", total)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// closeApp closes a once the test is done with it: checks and
// revalidations beside its answers end before the test's directories go.
func closeApp(tb testing.TB, a *app.App) {
	tb.Helper()
	if err := a.Close(); err != nil {
		tb.Errorf("Close: %v", err)
	}
	// Every answer written has released its lease on the memory tier's
	// bytes: with no entry left, nothing is held off the heap.
	a.Memory.DeletePrefix("")
	if n := a.Memory.OffHeapBytes(); n != 0 {
		tb.Errorf("the memory tier holds %d bytes off the heap with no entry and no answer being written: a lease was never released", n)
	}
}
