package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/obs/emf/emftest"
	"github.com/tilesieve/tilesieve/shared/origin"
)

// TestMetricsAndLogsOfAKnownWorkload runs the tile function as main wires
// it (one stdout for logs and EMF lines) through a known sequence of
// invocations: every log line carries its invocation's request id, the
// first carries cold_start with the init parts, and the EMF lines parse and
// count exactly what happened.
func TestMetricsAndLogsOfAKnownWorkload(t *testing.T) {
	t.Parallel()
	s3srv, url, body, _ := s3WithDemo(t)
	env := map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "DISK_CACHE_DIR": t.TempDir(), "DISK_CACHE_BYTES": "64MiB",
		"MEM_CACHE_BYTES": "64MiB", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9", "LOG_LEVEL": "debug", "METRICS_INTERVAL": "1h",
	}
	cfg, err := config.LoadTiles(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	out, oenv, log := obs.NewOutput(&stdout, cfg.LogLevel)
	a, err := app.NewWithOrigin(context.Background(), cfg, origin.NewWithS3(s3srv.Client(url), origin.Config{Bucket: "tiles", Prefix: "tiles/"}), log, append(adapterOptions(cfg), app.WithMetrics(out))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeApp(t, a) })
	if a.Metrics == nil {
		t.Fatal("metrics are on by default")
	}
	h := withDeadlineMargin(withRecover(a.Handler, log))
	b := &buffered{srv: a.Server, next: h, log: log}
	inv := invocation{env: oenv, log: log, init: a.Init}
	handler := lambda.NewHandler(inv.buffered(withDeadline(b.Handle)))

	missing := withPath(t, fixtures.Read(t, "url-get-tile.json"), "/demo/9/9/9.png")
	for i, ev := range [][]byte{
		fixtures.Read(t, "url-get-tile.json"), // MISS
		fixtures.Read(t, "url-get-tile.json"), // HIT-MEMORY
		fixtures.Read(t, "url-get-tile.json"), // HIT-MEMORY
		missing,                               // MISS (404)
		fixtures.Read(t, "url-bad-path.json"), // 400: answered by no tier, not counted
	} {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-" + string(rune('a'+i))})
		if _, err := handler.Invoke(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Metrics.Flush(time.Now()); err != nil {
		t.Fatal(err)
	}

	var emfLines [][]byte
	cold := 0
	for _, line := range bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n")) {
		if bytes.Contains(line, []byte(`"_aws"`)) {
			emfLines = append(emfLines, line)
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if rec["msg"] == "cold start" {
			cold++
			if rec["function_request_id"] != "req-a" || rec["init_journal_head_ms"] == nil {
				t.Errorf("cold start line %s", line)
			}
		}
		if rec["msg"] == "request" {
			if id, _ := rec["function_request_id"].(string); !strings.HasPrefix(id, "req-") {
				t.Errorf("request log without its request id: %s", line)
			}
			// Every line of the first invocation is marked, and no other.
			if (rec["function_request_id"] == "req-a") != (rec["cold_start"] == true) {
				t.Errorf("cold_start on the wrong lines: %s", line)
			}
		}
	}
	if cold != 1 {
		t.Errorf("%d cold start lines, want 1", cold)
	}
	var requests = map[string]float64{}
	var served float64
	for _, line := range emfLines {
		d, err := emftest.Parse(line)
		if err != nil {
			t.Fatalf("EMF line %s: %v", line, err)
		}
		if d.DimValues[obs.DimTileSet] != "" {
			continue // the per-tileset lines repeat the function's counts
		}
		for _, m := range []string{obs.MetricRequestsMemory, obs.MetricRequestsMiss, obs.MetricRequestsDisk, obs.MetricRequestsError} {
			requests[m] += d.Numbers[m]
		}
		served += d.Numbers[obs.MetricBytesServed]
		if h, ok := d.Histograms[obs.MetricOriginFetchLatency]; ok && h.Cnt != 2 {
			t.Errorf("origin fetches: %v, want 2 (the miss and the 404)", h.Cnt)
		}
	}
	want := map[string]float64{obs.MetricRequestsMemory: 2, obs.MetricRequestsMiss: 2, obs.MetricRequestsDisk: 0, obs.MetricRequestsError: 0}
	for m, n := range want {
		if requests[m] != n {
			t.Errorf("%s = %v, want %v", m, requests[m], n)
		}
	}
	if served < float64(3*len(body)) {
		t.Errorf("bytes served %v, want at least 3 tiles of %d", served, len(body))
	}
}

func withPath(t *testing.T, event []byte, path string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(event, &m); err != nil {
		t.Fatal(err)
	}
	m["rawPath"] = path
	b, _ := json.Marshal(m)
	return b
}
