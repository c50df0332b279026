package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/obs/emf/emftest"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/testkit/lambdatest"
	"github.com/tilesieve/tilesieve/worker/app"
)

func envOf(m map[string]string) config.Env { return func(k string) string { return m[k] } }

// TestBuildAndHandle wires the worker as main does, against a local S3
// endpoint and a fake CloudFront, and runs a sample event through it.
func TestBuildAndHandle(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	cf := cdntest.New(t)

	cfg, err := config.LoadWorker(envOf(map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "DISTRIBUTION_ID": "E2QWRUHEXAMPLE",
		"AWS_ENDPOINT_URL": s3e.URL, "S3_FORCE_PATH_STYLE": "true", "SYNC_INTERVAL": "1ms",
	}))
	if err != nil {
		t.Fatal(err)
	}
	w, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.DiscardHandler), MetricsOut: io.Discard, AWS: awsclient.Settings{
		Region: s3local.DefaultRegion, Credentials: s3e.Credentials(),
		BaseEndpoint: cf.URL, // CloudFront; S3 has its own endpoint
	}})
	if err != nil {
		t.Fatal(err)
	}
	raw := fixtures.Read(t, "s3-delete.json")
	if _, err := w.Handle(context.Background(), app.Event(raw)); err != nil {
		t.Fatal(err)
	}
	j := journal.New(s3e.Client, "tiles", "_tilesieve/journal/", journal.Options{})
	if head, err := j.Head(context.Background()); err != nil || head != 1 {
		t.Errorf("journal head %d, %v: want one entry", head, err)
	}
	// A single key is an exact path, not a wildcard.
	if reqs := cf.Requests(); len(reqs) != 1 || !slices.Equal(reqs[0].Paths, []string{"/osm/12/2048/1361.png"}) {
		t.Errorf("CloudFront: %+v", reqs)
	}

	// Through the Lambda runtime's own handler wrapping, as lambda.Start
	// would call it: an SQS batch answers with its partial failures.
	raw = fixtures.Read(t, "sqs-s3.json")
	out, err := lambda.NewHandler(w.Handle).Invoke(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"batchItemFailures":[{"itemIdentifier":"3f8b1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b"},{"itemIdentifier":"d375fb46-f708-491a-a435-a0b1c2d3e4f5"}]}`
	if string(out) != want {
		t.Errorf("response: got %s, want %s", out, want)
	}
}

// TestInvocationLogsAndMetrics: wired as main wires it, with logs and
// metrics sharing one stream, every line of an invocation carries its
// request id, the first invocation logs the cold start with the init
// durations, and each invocation writes one EMF line.
func TestInvocationLogsAndMetrics(t *testing.T) {
	t.Parallel()
	s3e := s3localtest.Start(t, "tiles")
	cfg, err := config.LoadWorker(envOf(map[string]string{
		"TILES_BUCKET": "tiles", "TILES_PREFIX": "tiles/", "METRICS_NAMESPACE": "maps",
		"AWS_ENDPOINT_URL": s3e.URL, "S3_FORCE_PATH_STYLE": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	out, env, log := obs.NewOutput(&buf, cfg.LogLevel)
	w, err := app.New(context.Background(), cfg, app.Options{Logger: log, MetricsOut: out, AWS: awsclient.Settings{Region: s3local.DefaultRegion, Credentials: s3e.Credentials()}})
	if err != nil {
		t.Fatal(err)
	}
	handle := handler(env, log, obs.InitDurations{Config: 12 * time.Millisecond}, w)
	raw := fixtures.Read(t, "s3-delete.json")
	for i, id := range []string{"req-1", "req-2"} {
		buf.Reset()
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
		if _, err := handle(ctx, app.Event(raw)); err != nil {
			t.Fatal(err)
		}
		var logs []map[string]any
		var metrics [][]byte
		for line := range bytes.SplitSeq(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var l map[string]any
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatalf("%s: not JSON: %s", id, line)
			}
			if _, ok := l["_aws"]; ok {
				metrics = append(metrics, line)
				continue
			}
			logs = append(logs, l)
			if l[obs.KeyRequestID] != id || l[obs.KeyColdStart] != (i == 0) || l["level"] == nil {
				t.Errorf("%s: line %v, want its request id, cold_start %v and a level", id, l, i == 0)
			}
		}
		cold := slices.IndexFunc(logs, func(l map[string]any) bool { return l["msg"] == "cold start" })
		if (cold >= 0) != (i == 0) {
			t.Errorf("%s: cold start line at %d, want one in the first invocation only", id, cold)
		}
		if cold >= 0 && logs[cold]["init_config_ms"] != 12.0 {
			t.Errorf("cold start line %v, want init_config_ms 12", logs[cold])
		}
		if len(metrics) != 1 {
			t.Fatalf("%s: %d metric lines, want 1", id, len(metrics))
		}
		d, err := emftest.Parse(metrics[0])
		if err != nil {
			t.Fatal(err)
		}
		if d.Namespace != "maps" || d.DimValues[obs.DimFunctionName] != app.DefaultFunctionName ||
			d.Numbers[obs.MetricNotifications] != 1 || d.Numbers[obs.MetricPrefixes] != 1 {
			t.Errorf("%s: metrics %+v", id, d)
		}
	}
}

// TestBootstrapUnderEmulator runs the real worker bootstrap under the Lambda
// Runtime Interface Emulator with the S3 put fixture, and checks the journal.
func TestBootstrapUnderEmulator(t *testing.T) {
	bootstrap := lambdatest.Bootstrap(t, "github.com/tilesieve/tilesieve/worker")
	s3e := s3localtest.Start(t, "tiles")
	emu := lambdatest.Start(t, bootstrap, append(lambdatest.S3Env(s3e.URL),
		lambdatest.Env("TILES_BUCKET", "tiles", "TILES_PREFIX", "tiles/", "SYNC_INTERVAL", "10ms")...)...)
	raw := fixtures.Read(t, "s3-put.json")
	out := emu.Invoke(t, raw)
	if strings.Contains(string(out), "errorMessage") {
		t.Fatalf("worker failed: %s", out)
	}
	j := journal.New(s3e.Client, "tiles", "_tilesieve/journal/", journal.Options{})
	head, err := j.Head(context.Background())
	if err != nil || head != 1 {
		t.Fatalf("journal after the put event: head %d, %v; want one entry", head, err)
	}
}
