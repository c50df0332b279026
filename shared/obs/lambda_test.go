package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
)

// invocation is the context aws-lambda-go hands a handler.
func invocation(id, trace string) context.Context {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
	if trace != "" {
		//lint:ignore SA1029 the key aws-lambda-go uses
		ctx = context.WithValue(ctx, "x-amzn-trace-id", trace)
	}
	return ctx
}

func testEnv(env map[string]string, maxConcurrency int) *Environment {
	return &Environment{getenv: func(k string) string { return env[k] }, maxConcurrency: maxConcurrency}
}

func decode(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestLinesCarryTheInvocation(t *testing.T) {
	t.Parallel()
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	const root = "1-5759e988-bd862e3fe1be46a994272793"
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		env       map[string]string
		maxConc   int
		wantID    string
		wantTrace string
	}{
		{"trace in the context", invocation("req-1", header), nil, 1, "req-1", root},
		{"trace in the environment", invocation("req-1", ""), map[string]string{"_X_AMZN_TRACE_ID": header}, 1, "req-1", root},
		// With several invocations at once the variable is not the invocation's.
		{"environment ignored when concurrent", invocation("req-1", ""), map[string]string{"_X_AMZN_TRACE_ID": header}, 4, "req-1", ""},
		{"not traced", invocation("req-1", ""), nil, 1, "req-1", ""},
		{"no invocation", context.Background(), map[string]string{"_X_AMZN_TRACE_ID": header}, 1, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			log := slog.New(testEnv(tc.env, tc.maxConc).Handler(NewJSONHandler(&out, "info")))
			log.InfoContext(tc.ctx, "served", "key", "osm/1/2/3.pbf")
			line := decode(t, out.Bytes())[0]
			if got, _ := line[KeyRequestID].(string); got != tc.wantID {
				t.Errorf("%s: got %q, want %q", KeyRequestID, got, tc.wantID)
			}
			if got, _ := line[KeyTraceID].(string); got != tc.wantTrace {
				t.Errorf("%s: got %q, want %q", KeyTraceID, got, tc.wantTrace)
			}
			if _, ok := line[KeyColdStart]; ok != (tc.wantID != "") {
				t.Errorf("%s present %v, want %v", KeyColdStart, ok, tc.wantID != "")
			}
			if line["key"] != "osm/1/2/3.pbf" || line["msg"] != "served" {
				t.Errorf("the line's own fields are lost: %v", line)
			}
		})
	}
}

func TestColdStartOnlyOnTheFirstInvocation(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := testEnv(nil, 1)
	log := slog.New(env.Handler(NewJSONHandler(&out, "info")))
	init := InitDurations{Config: time.Millisecond, DiskIndex: 20 * time.Millisecond, Staging: 1500 * time.Millisecond, JournalHead: 30 * time.Millisecond}
	for i := 1; i <= 3; i++ {
		ctx := invocation(fmt.Sprintf("req-%d", i), "")
		env.Begin(ctx)
		env.LogColdStart(ctx, log, init)
		log.InfoContext(ctx, "served")
	}
	lines := decode(t, out.Bytes())
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4 (the cold start line and three)", len(lines))
	}
	cold := lines[0]
	if cold["msg"] != "cold start" || cold[KeyColdStart] != true || cold[KeyRequestID] != "req-1" {
		t.Errorf("cold start line: %v", cold)
	}
	for k, want := range map[string]float64{"init_config_ms": 1, "init_disk_index_ms": 20, "init_staging_ms": 1500, "init_journal_head_ms": 30, "init_total_ms": 1551} {
		if cold[k] != want {
			t.Errorf("%s: got %v, want %v", k, cold[k], want)
		}
	}
	for i, line := range lines[1:] {
		if want := i == 0; line[KeyColdStart] != want {
			t.Errorf("line of req-%d: cold_start %v, want %v", i+1, line[KeyColdStart], want)
		}
	}
}

func TestColdStartLineAtInit(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := testEnv(nil, 1)
	log := slog.New(env.Handler(NewJSONHandler(&out, "info")))
	if !env.LogColdStart(context.Background(), log, InitDurations{}) || env.LogColdStart(context.Background(), log, InitDurations{}) {
		t.Fatal("want the first call to log and the second not")
	}
	if lines := decode(t, out.Bytes()); len(lines) != 1 || lines[0][KeyColdStart] != true {
		t.Errorf("got %v, want one line with cold_start true", lines)
	}
}

func TestConcurrentInvocationsKeepTheirIDs(t *testing.T) {
	t.Parallel()
	var out syncbuf.Buffer
	env := testEnv(map[string]string{"_X_AMZN_TRACE_ID": "Root=1-env-wrong"}, 8)
	log := slog.New(env.Handler(NewJSONHandler(&out, "info"))).With("fn", "tiles")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("req-%d", i)
			ctx := invocation(id, "Root=1-trace-"+id)
			env.Begin(ctx)
			for j := range 50 {
				log.InfoContext(ctx, "served", "n", j, "mine", id)
			}
		}()
	}
	wg.Wait()
	lines := decode(t, out.Bytes())
	if len(lines) != 400 {
		t.Fatalf("got %d lines, want 400", len(lines))
	}
	cold := 0
	for _, l := range lines {
		id := l["mine"].(string)
		if l[KeyRequestID] != id || l[KeyTraceID] != "1-trace-"+id || l["fn"] != "tiles" {
			t.Fatalf("line mixes invocations: %v", l)
		}
		if l[KeyColdStart] == true {
			cold++
		}
	}
	if cold != 50 {
		t.Errorf("got %d cold_start lines, want the 50 of one invocation", cold)
	}
}

func TestFieldsStayAtTheTopInsideAGroup(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	env := testEnv(nil, 1)
	log := slog.New(env.Handler(NewJSONHandler(&out, "info"))).With("a", 1).WithGroup("tier").With("name", "disk")
	log.InfoContext(invocation("req-9", ""), "evicted", "bytes", 10)
	line := decode(t, out.Bytes())[0]
	tier, _ := line["tier"].(map[string]any)
	if line[KeyRequestID] != "req-9" || line["a"] != 1.0 || tier["name"] != "disk" || tier["bytes"] != 10.0 {
		t.Errorf("got %v", line)
	}
}

func TestLambdaLogShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug - 4, "TRACE"}, {slog.LevelDebug, "DEBUG"}, {slog.LevelInfo, "INFO"}, {slog.LevelInfo + 2, "INFO"},
		{slog.LevelWarn, "WARN"}, {slog.LevelError, "ERROR"}, {slog.LevelError + 4, "FATAL"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			log := slog.New(NewJSONHandler(&out, "debug"))
			log.Log(context.Background(), tc.level, "m")
			if out.Len() == 0 {
				if tc.level < slog.LevelDebug {
					return // below the handler's level
				}
				t.Fatal("nothing logged")
			}
			line := decode(t, out.Bytes())[0]
			if line["level"] != tc.want {
				t.Errorf("level: got %v, want %v", line["level"], tc.want)
			}
			ts, _ := line["timestamp"].(string)
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				t.Errorf("timestamp %q: want RFC 3339 (%v)", ts, err)
			}
			if _, ok := line["time"]; ok || line["msg"] != "m" {
				t.Errorf("got %v, want timestamp and msg keys", line)
			}
		})
	}
	var out bytes.Buffer
	NewLogger(&out, "warn").Info("dropped")
	if strings.Contains(out.String(), "dropped") {
		t.Error("NewLogger no longer honours its level")
	}
}
