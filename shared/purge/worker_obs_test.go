package purge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/obs/emf/emftest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
)

// The worker hands this metric set to the Worker and its Purger.
var _ WorkerMetrics = (*obs.WorkerMetrics)(nil)

// TestWorkerMetricsKnownBatches runs known invocations through Handle with
// the worker's metric set writing into a buffer: each writes exactly one
// EMF line, and its numbers are the invocation's.
func TestWorkerMetricsKnownBatches(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	sl := newFakeSleep()
	m, err := obs.NewWorkerMetrics(obs.MetricsConfig{FunctionName: "tilesieve-sync-worker"}, &out, sl.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/", Metrics: m, Now: sl.clock.Now}, workerOpts{sleep: sl.Sleep})

	// 20 keys in one directory and two lone keys, one S3 notification each.
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("osm/12/2048/%d.png", i))
	}
	keys = append(keys, "sat/3/1/1.jpg", "sat/9/4/4.jpg")

	type want struct {
		notifications, prefixes, issued, throttled, appendErrors float64
		appends                                                  float64 // journal appends timed
	}
	for _, inv := range []struct {
		name  string
		event json.RawMessage
		setup func()
		want  want
	}{
		// 16 messages: 13 change records (2 of them stale duplicates, 2
		// outside the tiles), 2 malformed, a TestEvent: 9 prefixes.
		{"sqs fixture", fixtures.Read(t, "sqs-s3.json"), nil, want{notifications: 13, prefixes: 9, issued: 9, appends: 1}},
		{"sqs batch, throttled twice", sqsBatch(t, "ObjectCreated:Put", keys, 0),
			func() { we.cf.Fail(cdntest.Throttling, cdntest.TooMany) },
			want{notifications: 22, prefixes: 3, issued: 3, throttled: 2, appends: 1}},
		{"journal down", sqsBatch(t, "ObjectRemoved:Delete", keys[:1], 100), we.failJournalWrites,
			want{notifications: 1, prefixes: 1, appends: 1, appendErrors: 1}},
		{"test event", fixtures.Read(t, "s3-test-event.json"), nil, want{}},
	} {
		if inv.setup != nil {
			inv.setup()
		}
		sl.clock.Advance(time.Minute)
		if _, err := we.w.Handle(context.Background(), inv.event); err != nil {
			t.Fatalf("%s: %v", inv.name, err)
		}
		docs, err := emftest.ParseAll(out.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", inv.name, err)
		}
		out.Reset()
		if len(docs) != 1 {
			t.Fatalf("%s: %d lines, want one per invocation", inv.name, len(docs))
		}
		d := docs[0]
		if d.DimValues[obs.DimFunctionName] != "tilesieve-sync-worker" || d.Timestamp != sl.clock.Now().UnixMilli() {
			t.Errorf("%s: dimensions %v, timestamp %d: want the function and the end of the invocation", inv.name, d.DimValues, d.Timestamp)
		}
		for name, want := range map[string]float64{
			obs.MetricNotifications:          inv.want.notifications,
			obs.MetricPrefixes:               inv.want.prefixes,
			obs.MetricInvalidationsIssued:    inv.want.issued,
			obs.MetricInvalidationsThrottled: inv.want.throttled,
			obs.MetricJournalAppendErrors:    inv.want.appendErrors,
		} {
			if got, ok := d.Numbers[name]; !ok || got != want {
				t.Errorf("%s: %s got %v (sent %v), want %v", inv.name, name, got, ok, want)
			}
		}
		if got := d.Histograms[obs.MetricJournalAppendLatency].Cnt; got != inv.want.appends {
			t.Errorf("%s: %d append latencies, want %v", inv.name, int(got), inv.want.appends)
		}
	}
}

// TestWorkerLogsCarryTheInvocation: every line logged while Handle runs (the
// worker's, the journal's, the CDN client's) carries the Lambda request id
// and the X-Ray trace id of the invocation's context.
func TestWorkerLogsCarryTheInvocation(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	env := obs.NewEnvironment()
	log := slog.New(env.Handler(obs.NewJSONHandler(&logs, "debug")))
	sl := newFakeSleep()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{sleep: sl.Sleep, log: log})
	we.cf.Fail(cdntest.Throttling) // a retry, logged by the CDN client

	const id, root = "8476a536-e9f4-11e8-9739-2dfe598c3fcd", "1-5759e988-bd862e3fe1be46a994272793"
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
	//lint:ignore SA1029 the key aws-lambda-go puts the trace header under
	ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root="+root+";Parent=53995c3f42cd8ad8;Sampled=1")
	env.Begin(ctx)
	if _, err := we.w.Handle(ctx, fixtures.Read(t, "sqs-s3.json")); err != nil {
		t.Fatal(err)
	}
	msgs := map[string]bool{}
	for line := range bytes.SplitSeq(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var l map[string]any
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		msgs[fmt.Sprint(l["msg"])] = true
		if l[obs.KeyRequestID] != id || l[obs.KeyTraceID] != root || l[obs.KeyColdStart] != true {
			t.Errorf("line without the invocation's ids: %s", line)
		}
	}
	for _, want := range []string{"malformed record", "cdn invalidation refused, retrying", "cdn invalidation created", "purged"} {
		if !msgs[want] {
			t.Errorf("no %q line; got %v", want, msgs)
		}
	}
}
