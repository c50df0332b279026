package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// TestJSONEscapedLen: the length computed for a body inside a JSON string
// is the one encoding/json writes.
func TestJSONEscapedLen(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `"quoted" \ back`, "\n\r\t\b\f\x00\x1f\x7f", "<a href=\"x\">&amp;</a>",
		"héllo wörld ✓ 𝄞", "line\u2028sep\u2029", `{"tilejson":"3.0.0","tiles":["https://x/{z}/{x}/{y}.pbf"]}`} {
		q, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonEscapedLen([]byte(s)), int64(len(q)-2); got != want {
			t.Errorf("%q: got %d, want %d", s, got, want)
		}
	}
}

// compressible is n bytes that gzip about 35 to 1: a tile that decodes far
// larger than it is stored, within the decoder's ratio bound.
func compressible(n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < n; i += 80 {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestBufferedLimitBuildsNoPayload: an answer whose buffered payload would
// pass the 6 MB limit is the 502 saying so, and the invocation allocates
// far less than the payload it refused: its size is computed from the
// body's length (base64, JSON escaping) before anything is encoded, and a
// decoded tile streamed with a known Content-Length is not read at all.
// Not parallel: it reads the process's allocation counters.
func TestBufferedLimitBuildsNoPayload(t *testing.T) {
	s3e := s3localtest.Start(t, "tiles")
	for _, o := range []struct {
		key, contentType, encoding string
		body                       []byte
	}{
		// 5 MiB binary: 6.7 MiB once base64-encoded.
		{"big.png", "image/png", "", bytes.Repeat([]byte{0xff}, 5<<20)},
		// Text that JSON escapes six times over.
		{"big.json", "application/json", "", bytes.Repeat([]byte("<"), 2<<20)},
		// 8 MiB once decoded, for a client without gzip: too large for the
		// memory tier, so streamed with its Content-Length.
		{"v/1/0/0.pbf", "application/x-protobuf", "gzip", gzipped(t, compressible(8<<20))},
	} {
		s3localtest.Put(t, s3e.Client, "tiles", "tiles/"+o.key, o.body, o.contentType, o.encoding)
	}
	fn := newTileFunction(t, s3e.Server, s3e.URL)
	for _, tc := range []struct{ name, path, rng string }{
		{name: "binary", path: "/big.png"},
		// 1.2 MB of it: 1.6 MB as base64, 7.2 MB as the JSON text it travels as.
		{name: "escaped text", path: "/big.json", rng: "bytes=0-1199999"},
		{name: "decoded gzip", path: "/v/1/0/0.pbf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := withPath(t, fixtures.Read(t, "url-get-tile.json"), tc.path)
			ev = withHeader(t, ev, "accept-encoding", "")
			if tc.rng != "" {
				ev = withHeader(t, ev, "range", tc.rng)
			}
			fn.invoke(ev) // the miss; the answer measured is the next one's
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			r := fn.invoke(ev)
			runtime.ReadMemStats(&m1)
			alloc := m1.TotalAlloc - m0.TotalAlloc
			t.Logf("%s: %d %.120q, %d bytes allocated", tc.path, r.StatusCode, r.Body, alloc)
			if r.StatusCode != http.StatusBadGateway || !strings.Contains(r.Body, "6 MB") {
				t.Fatalf("got %d %.120q, want 502 naming the 6 MB limit", r.StatusCode, r.Body)
			}
			if alloc > 1<<20 {
				t.Errorf("got %d bytes allocated, want at most %d", alloc, 1<<20)
			}
		})
	}
}

// TestBufferedHitOutlivesItsEntry: a buffered memory hit answers with its
// payload as the memory tier keeps it, off the heap beside the body; the
// runtime reads it after Handle returns, and a purge and the fills that
// reuse the tier's room meanwhile do not change a byte of it. Once the
// runtime closes it, the tier can reuse it.
func TestBufferedHitOutlivesItsEntry(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	want := compressible(24 << 10)
	s3localtest.Put(t, s3e.Client, "tiles", "tiles/a/0/0/0.png", want, "image/png", "")
	for i := range 64 {
		s3localtest.Put(t, s3e.Client, "tiles", fmt.Sprintf("tiles/b/%d.png", i), bytes.Repeat([]byte{byte(i)}, 24<<10), "image/png", "")
	}
	cfg, err := config.LoadTiles(func(k string) string {
		return map[string]string{"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "MEM_CACHE_BYTES": "1MiB", "DISK_CACHE_BYTES": "0"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(s3e.Client, app.OriginConfig(cfg)), log, app.WithExtra(buildPayload))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a) })
	b := &buffered{srv: a.Server, next: a.Handler, log: log}
	handle := func(path string) io.Reader {
		var ev urlEvent
		if err := json.Unmarshal(withPath(t, fixtures.Read(t, "url-get-tile.json"), path), &ev); err != nil {
			t.Fatal(err)
		}
		r, err := b.Handle(context.Background(), &ev)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	readClose(t, handle("/a/0/0/0.png")) // the miss
	r, ok := handle("/a/0/0/0.png").(*holeReader)
	if !ok || r.lease == (memory.Lease{}) {
		t.Fatalf("a memory hit answered %T without a lease on its payload", r)
	}
	a.Engine.Purge("")
	for i := range 64 {
		readClose(t, handle(fmt.Sprintf("/b/%d.png", i)))
		readClose(t, handle(fmt.Sprintf("/b/%d.png", i)))
	}
	var got events.LambdaFunctionURLResponse
	if err := json.Unmarshal(readClose(t, r), &got); err != nil {
		t.Fatal(err)
	}
	body, err := base64.StdEncoding.DecodeString(got.Body)
	if err != nil || got.StatusCode != http.StatusOK || got.Headers["X-Cache"] != "HIT-MEMORY" || !bytes.Equal(body, want) {
		t.Fatalf("got %d %s, body equal %v (%v): the payload read after the purge is not the one answered",
			got.StatusCode, got.Headers["X-Cache"], bytes.Equal(body, want), err)
	}
	a.Engine.Purge("")
	if got := a.Memory.OffHeapBytes(); got != 0 {
		t.Fatalf("%d bytes off the heap with the tier purged and every payload closed, want 0", got)
	}
}

// readClose reads r whole and closes it, as the runtime does.
func readClose(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
	return b
}
