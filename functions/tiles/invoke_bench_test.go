package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdaurl"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/tilegen"
)

// These benchmarks measure what Lambda runs: one whole invocation, from the
// event's bytes to the payload's bytes, through aws-lambda-go's own handler
// (the event decoded into the handler's argument, the answer encoded or, for
// an io.Reader, passed through and read to the end), beside a floor in the
// same run: the same tile's answer encoded once at start and returned as an
// io.Reader by a handler that decodes only the path.
//
//	go test -run '^$' -bench 'BenchmarkInvoke' -benchmem ./functions/tiles/

var benchSizes = []int{1 << 10, 30 << 10, 300 << 10}

func sizeName(n int) string { return strconv.Itoa(n>>10) + "KB" }

// benchEvent is a realistic function-URL event (as CloudFront forwards one)
// for path.
func benchEvent(b *testing.B, path string) []byte {
	b.Helper()
	raw := fixtures.Read(b, "url-get-tile.json")
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		b.Fatal(err)
	}
	ev["rawPath"] = path
	out, err := json.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

type benchFunction struct {
	buffered, streaming lambda.Handler
}

// noMemory is the memory bound of the benchmarks whose tile must not be
// answered from memory: the cache admits no entry heavier than an eighth of
// its bound (cache.DefaultMaxEntryFraction), so a one-byte bound admits
// nothing. It is below what MEM_CACHE_BYTES accepts (1MiB, whose eighth
// would admit the 1 KB and 30 KB tiles and their prepared payloads), so it
// is set on the loaded configuration.
const noMemory = 1

// newBenchFunction is the tile function over an in-process S3 holding one
// tile of each size; memBytes (bytes) and diskBytes pick the tier that
// answers.
func newBenchFunction(b *testing.B, memBytes int64, diskBytes string, opts ...app.Option) *benchFunction {
	b.Helper()
	s3e := s3localtest.Start(b, "tiles")
	for _, n := range benchSizes {
		s3localtest.Put(b, s3e.Client, "tiles", "tiles/bench/"+sizeName(n)+".png", tilegen.Incompressible(n), "image/png", "")
	}
	env := map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "MEM_CACHE_BYTES": strconv.FormatInt(max(memBytes, 1<<20), 10),
		"DISK_CACHE_DIR": b.TempDir(), "DISK_CACHE_BYTES": diskBytes, "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9",
		"SYNC_INTERVAL": "1h", // the journal check is a separate cost (section 5)
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		b.Fatal(err)
	}
	cfg.MemBytes = memBytes
	log := slog.New(slog.DiscardHandler)
	a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(s3e.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"}), log, append(adapterOptions(cfg), opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closeApp(b, a) })
	h := withDeadlineMargin(withRecover(a.Handler, log))
	bf := &buffered{srv: a.Server, next: h, log: log}
	return &benchFunction{
		buffered:  lambda.NewHandler(withDeadline(bf.Handle)),
		streaming: lambda.NewHandler(streamHandler(h, log)),
	}
}

func invokeOnce(b *testing.B, h lambda.Handler, event []byte) int {
	out, err := h.Invoke(context.Background(), event)
	if err != nil {
		b.Fatal(err)
	}
	return len(out)
}

// runInvoke times h on event after a first invocation that fills the tiers;
// the second answer must carry xCache (the tier that answers every timed
// invocation).
// invokeEverySize runs runInvoke of h on a tile of each of benchSizes, one
// sub-benchmark a size.
func invokeEverySize(b *testing.B, h lambda.Handler, xCache string) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) { runInvoke(b, h, benchEvent(b, "/bench/"+sizeName(n)+".png"), xCache) })
	}
}

func runInvoke(b *testing.B, h lambda.Handler, event []byte, xCache string) {
	b.Helper()
	b.SetBytes(int64(warmInvoke(b, h, event, xCache)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		invokeOnce(b, h, event)
	}
}

// warmInvoke invokes h on event twice: the first fills the tiers, the
// second must be answered by the tier xCache names. It returns the second
// payload's length.
func warmInvoke(b *testing.B, h lambda.Handler, event []byte, xCache string) int {
	b.Helper()
	invokeOnce(b, h, event)
	out, err := h.Invoke(context.Background(), event)
	if err != nil {
		b.Fatal(err)
	}
	if want := `"X-Cache":"` + xCache + `"`; !bytes.Contains(out, []byte(want)) && !bytes.Contains(out, []byte(`"X-Cache":["`+xCache+`"]`)) {
		b.Fatalf("answer does not carry %s: %.300q", want, out)
	}
	return len(out)
}

// BenchmarkInvokeBuffered is a memory hit in BUFFERED mode.
func BenchmarkInvokeBuffered(b *testing.B) {
	fn := newBenchFunction(b, 64<<20, "0")
	invokeEverySize(b, fn.buffered, "HIT-MEMORY")
}

// BenchmarkInvokeBufferedMetrics is BenchmarkInvokeBuffered with the tile
// function's metrics on, as main runs it (the EMF lines written to a
// discarding writer): the cost of metrics on the hot path.
func BenchmarkInvokeBufferedMetrics(b *testing.B) {
	fn := newBenchFunction(b, 64<<20, "0", app.WithMetrics(io.Discard))
	invokeEverySize(b, fn.buffered, "HIT-MEMORY")
}

// BenchmarkInvokeMetricsPaired is the cost of metrics on a memory hit,
// measured where the machine's noise neither hides nor makes it: two tile
// functions in one process, metrics off and on, invoked in turn (the order
// alternating from op to op), each invocation timed on its own. One op is
// one invocation of each; it reports their mean times and the ratio of
// their totals, on/off. (A whole invocation of a 300 KB tile swings by a
// third from one process to the next here, much more than metrics cost.)
func BenchmarkInvokeMetricsPaired(b *testing.B) {
	off := newBenchFunction(b, 64<<20, "0")
	on := newBenchFunction(b, 64<<20, "0", app.WithMetrics(io.Discard))
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			event := benchEvent(b, "/bench/"+sizeName(n)+".png")
			warmInvoke(b, off.buffered, event, "HIT-MEMORY")
			warmInvoke(b, on.buffered, event, "HIT-MEMORY")
			var tOff, tOn time.Duration
			ops := 0
			for b.Loop() {
				if ops%2 == 0 {
					tOff += timeInvoke(b, off.buffered, event)
					tOn += timeInvoke(b, on.buffered, event)
				} else {
					tOn += timeInvoke(b, on.buffered, event)
					tOff += timeInvoke(b, off.buffered, event)
				}
				ops++
			}
			b.ReportMetric(float64(tOff.Nanoseconds())/float64(ops), "off-ns/invocation")
			b.ReportMetric(float64(tOn.Nanoseconds())/float64(ops), "on-ns/invocation")
			b.ReportMetric(float64(tOn)/float64(tOff), "on/off")
		})
	}
}

// timeInvoke is how long one invocation of h on event takes.
func timeInvoke(b *testing.B, h lambda.Handler, event []byte) time.Duration {
	start := time.Now()
	invokeOnce(b, h, event)
	return time.Since(start)
}

// BenchmarkInvokeBufferedFloor is the floor of BenchmarkInvokeBuffered.
func BenchmarkInvokeBufferedFloor(b *testing.B) {
	for _, n := range benchSizes {
		body := tilegen.Incompressible(n)
		payload, err := json.Marshal(events.LambdaFunctionURLResponse{
			StatusCode: 200,
			Headers: map[string]string{
				"Content-Type": "image/png", "Etag": `"0123456789abcdef0123456789abcdef"`, "Cache-Control": config.DefaultCacheControl,
				"Content-Length": strconv.Itoa(n), "Last-Modified": "Tue, 01 Dec 2026 06:00:00 GMT", "X-Cache": "HIT-MEMORY",
			},
			Body:            base64.StdEncoding.EncodeToString(body),
			IsBase64Encoded: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		floor := lambda.NewHandler(func(_ context.Context, ev *struct {
			RawPath string `json:"rawPath"`
		}) (io.Reader, error) {
			if ev.RawPath == "" {
				return nil, fmt.Errorf("no path")
			}
			return bytes.NewReader(payload), nil
		})
		b.Run(sizeName(n), func(b *testing.B) { runInvoke(b, floor, benchEvent(b, "/bench/"+sizeName(n)+".png"), "HIT-MEMORY") })
	}
}

// BenchmarkInvokeStreaming is a memory hit in RESPONSE_STREAM mode
// (lambdaurl), the body read to the end.
func BenchmarkInvokeStreaming(b *testing.B) {
	fn := newBenchFunction(b, 64<<20, "0")
	invokeEverySize(b, fn.streaming, "HIT-MEMORY")
}

// BenchmarkInvokeStreamingFloor is the floor of BenchmarkInvokeStreaming:
// lambdaurl over a handler that writes prebuilt headers and bytes.
func BenchmarkInvokeStreamingFloor(b *testing.B) {
	for _, n := range benchSizes {
		body := tilegen.Incompressible(n)
		hdr := http.Header{
			"Content-Type": {"image/png"}, "Etag": {`"0123456789abcdef0123456789abcdef"`}, "Cache-Control": {config.DefaultCacheControl},
			"Content-Length": {strconv.Itoa(n)}, "Last-Modified": {"Tue, 01 Dec 2026 06:00:00 GMT"}, "X-Cache": {"HIT-MEMORY"},
		}
		floor := lambda.NewHandler(lambdaurl.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range hdr {
				w.Header()[k] = v
			}
			w.Write(body)
		})))
		b.Run(sizeName(n), func(b *testing.B) { runInvoke(b, floor, benchEvent(b, "/bench/"+sizeName(n)+".png"), "HIT-MEMORY") })
	}
}

// BenchmarkInvokeBufferedDisk is a disk hit in BUFFERED mode (the memory
// tier admits nothing).
func BenchmarkInvokeBufferedDisk(b *testing.B) {
	fn := newBenchFunction(b, noMemory, "64MiB")
	invokeEverySize(b, fn.buffered, "HIT-DISK")
}

// BenchmarkInvokeStreamingDisk is a disk hit in RESPONSE_STREAM mode (the
// memory tier admits nothing).
func BenchmarkInvokeStreamingDisk(b *testing.B) {
	fn := newBenchFunction(b, noMemory, "64MiB")
	invokeEverySize(b, fn.streaming, "HIT-DISK")
}

// BenchmarkInvokeBufferedOrigin is an S3 fetch in BUFFERED mode (no tier
// keeps the tile; S3 in process over loopback HTTP).
func BenchmarkInvokeBufferedOrigin(b *testing.B) {
	fn := newBenchFunction(b, noMemory, "0")
	invokeEverySize(b, fn.buffered, "MISS")
}
