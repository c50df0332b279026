package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) Env { return func(k string) string { return m[k] } }

// recordingEnv notes every name read, so the documented lists can be checked
// against what the loaders really read.
func recordingEnv(m map[string]string) (Env, map[string]bool) {
	seen := map[string]bool{}
	return func(k string) string { seen[k] = true; return m[k] }, seen
}

func names(vars []Var) []string {
	var out []string
	for _, v := range vars {
		out = append(out, v.Name)
	}
	slices.Sort(out)
	return out
}

// lambdaReserved are set by Lambda itself, not by the template.
var lambdaReserved = map[string]bool{"AWS_LAMBDA_RUNTIME_API": true, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": true}

func TestDocumentedVarsAreTheOnesRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		load func(Env) error
		vars []Var
	}{
		{"tiles", func(e Env) error { _, err := LoadTiles(e); return err }, TilesVars()},
		{"worker", func(e Env) error { _, err := LoadWorker(e); return err }, WorkerVars()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, seen := recordingEnv(map[string]string{"TILES_BUCKET": "b"})
			if err := tc.load(env); err != nil {
				t.Fatal(err)
			}
			var read []string
			for k := range maps.Keys(seen) {
				if !lambdaReserved[k] {
					read = append(read, k)
				}
			}
			slices.Sort(read)
			if want := names(tc.vars); !slices.Equal(read, want) {
				t.Fatalf("read %v, documented %v", read, want)
			}
		})
	}
}

func TestTilesDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadTiles(envOf(map[string]string{"TILES_BUCKET": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.MemBytes != DefaultMemBytesOffLambda || !c.DiskAuto || c.ListenAddr != "127.0.0.1:8080" ||
		c.SyncInterval != time.Second || c.CacheControl != DefaultCacheControl || c.InvokeMode != "BUFFERED" || c.OnLambda {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestTilesOnLambdaMemory(t *testing.T) {
	t.Parallel()
	c, err := LoadTiles(envOf(map[string]string{
		"TILES_BUCKET": "b", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.OnLambda || c.FunctionMemoryBytes != 1<<30 || c.MemBytes != 512<<20 {
		t.Fatalf("got OnLambda=%v mem=%d cache=%d, want true 1GiB 512MiB", c.OnLambda, c.FunctionMemoryBytes, c.MemBytes)
	}
	if c.IIIF.RenderBytes != 256<<20 || c.AnswerBytes() != BufferedBodyBytes {
		t.Errorf("got IIIF render bytes %d, answer bytes %d; want a quarter of the memory and a buffered payload's body", c.IIIF.RenderBytes, c.AnswerBytes())
	}
}

// TestIIIFRenderBytes: IIIF_RENDER_BYTES off Lambda, set, and refused; the
// answer bound follows the invoke mode.
func TestIIIFRenderBytes(t *testing.T) {
	t.Parallel()
	c, err := LoadTiles(envOf(map[string]string{"TILES_BUCKET": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.IIIF.RenderBytes != DefaultRenderBytesOffLambda || c.AnswerBytes() != c.MaxTileBytes {
		t.Errorf("off Lambda: render bytes %d, answer bytes %d", c.IIIF.RenderBytes, c.AnswerBytes())
	}
	c, err = LoadTiles(envOf(map[string]string{"TILES_BUCKET": "b", "IIIF_RENDER_BYTES": "1GiB",
		"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "INVOKE_MODE": "RESPONSE_STREAM"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.IIIF.RenderBytes != 1<<30 || c.AnswerBytes() != c.MaxTileBytes {
		t.Errorf("set, streaming: render bytes %d, answer bytes %d", c.IIIF.RenderBytes, c.AnswerBytes())
	}
	for _, v := range []string{"lots", "1KiB", "-5"} {
		if _, err := LoadTiles(envOf(map[string]string{"TILES_BUCKET": "b", "IIIF_RENDER_BYTES": v})); err == nil || !strings.Contains(err.Error(), "IIIF_RENDER_BYTES") {
			t.Errorf("IIIF_RENDER_BYTES=%s: got %v", v, err)
		}
	}
}

func TestEveryProblemInOneError(t *testing.T) {
	t.Parallel()
	_, err := LoadTiles(envOf(map[string]string{
		"TILES_PREFIX":    "tiles",
		"MEM_CACHE_BYTES": "lots",
		"SYNC_INTERVAL":   "soon",
		"MISSING_TILE":    "418",
		"INVOKE_MODE":     "carrier-pigeon",
		"ADMIN_TOKEN":     "s3cr3t-token",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{"TILES_BUCKET", "TILES_PREFIX", "MEM_CACHE_BYTES", "SYNC_INTERVAL", "MISSING_TILE", "INVOKE_MODE"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %s:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "s3cr3t-token") {
		t.Errorf("error leaks the admin token:\n%s", msg)
	}
}

func TestJournalOutsideTiles(t *testing.T) {
	t.Parallel()
	_, err := LoadWorker(envOf(map[string]string{"TILES_BUCKET": "b", "TILES_PREFIX": "tiles/", "JOURNAL_PREFIX": "tiles/_j/"}))
	if err == nil || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("journal inside TILES_PREFIX: got %v, want an error", err)
	}
	if _, err := LoadWorker(envOf(map[string]string{"TILES_BUCKET": "b", "TILES_PREFIX": "tiles/"})); err != nil {
		t.Fatal(err)
	}
	// With an empty TILES_PREFIX every key but the reserved ones is a tile.
	for _, tc := range []struct {
		journal string
		ok      bool
	}{
		{"", true}, // the default, _tilesieve/journal/
		{"_tilesieve/j2/", true},
		{"journal/", false},
		{"_tilesieve-journal/", false},
	} {
		env := map[string]string{"TILES_BUCKET": "b"}
		if tc.journal != "" {
			env["JOURNAL_PREFIX"] = tc.journal
		}
		_, err := LoadTiles(envOf(env))
		if ok := err == nil; ok != tc.ok {
			t.Errorf("JOURNAL_PREFIX %q, empty TILES_PREFIX: got %v, want ok %v", tc.journal, err, tc.ok)
		}
	}
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true}, {"256MiB", 256 << 20, true}, {"1 GiB", 1 << 30, true}, {"5MB", 5e6, true},
		{"10B", 10, true}, {"", 0, false}, {"-1", 0, false}, {"1.5GiB", 0, false}, {"9999999999GiB", 0, false},
	} {
		got, err := ParseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Metrics
		bad  []string
	}{
		{"defaults", nil, Metrics{Enabled: true, Namespace: "tilesieve", Interval: time.Minute, MaxTileSets: 20}, nil},
		{"set", map[string]string{"METRICS": "false", "METRICS_NAMESPACE": "maps", "METRICS_INTERVAL": "10s", "METRICS_TILESETS": "0"},
			Metrics{Namespace: "maps", Interval: 10 * time.Second}, nil},
		{"invalid", map[string]string{"METRICS": "yes please", "METRICS_INTERVAL": "10ms", "METRICS_TILESETS": "500"},
			Metrics{}, []string{"METRICS=", "METRICS_INTERVAL", "METRICS_TILESETS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, seen := recordingEnv(tc.env)
			got, err := LoadMetrics(env)
			if tc.bad == nil {
				if err != nil || got != tc.want {
					t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
				}
				if want := names(MetricsVars()); !slices.Equal(slices.Sorted(maps.Keys(seen)), want) {
					t.Errorf("read %v, documented %v", slices.Sorted(maps.Keys(seen)), want)
				}
				return
			}
			for _, w := range tc.bad {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("got %v, want it to mention %s", err, w)
				}
			}
		})
	}
}

// TestFunctionsReadMetrics: each function's configuration carries its
// metrics settings; the worker's interval and tilesets are not its to set.
func TestFunctionsReadMetrics(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{"TILES_BUCKET": "b", "METRICS": "false", "METRICS_NAMESPACE": "maps", "METRICS_INTERVAL": "10s", "METRICS_TILESETS": "3"})
	tiles, err := LoadTiles(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Metrics{Namespace: "maps", Interval: 10 * time.Second, MaxTileSets: 3}); tiles.Metrics != want {
		t.Errorf("tile function: got %+v, want %+v", tiles.Metrics, want)
	}
	worker, err := LoadWorker(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Metrics{Namespace: "maps", Interval: time.Minute}); worker.Metrics != want {
		t.Errorf("worker: got %+v, want %+v", worker.Metrics, want)
	}
	if _, err := LoadWorker(envOf(map[string]string{"TILES_BUCKET": "b", "METRICS": "maybe"})); err == nil || !strings.Contains(err.Error(), "METRICS=") {
		t.Errorf("worker with METRICS=maybe: %v", err)
	}
}

func TestLoadS3(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want S3
		ok   bool
	}{
		{"defaults", nil, S3{}, true},
		{"local endpoint", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "S3_FORCE_PATH_STYLE": "true", "AWS_REGION": "eu-west-1"},
			S3{Region: "eu-west-1", Endpoint: "http://127.0.0.1:9000", PathStyle: true}, true},
		{"bad endpoint", map[string]string{"AWS_ENDPOINT_URL": "127.0.0.1:9000"}, S3{}, false},
		{"bad path style", map[string]string{"S3_FORCE_PATH_STYLE": "sometimes"}, S3{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadS3(envOf(c.env))
			if (err == nil) != c.ok || (c.ok && got != c.want) {
				t.Errorf("got %+v, %v, want %+v (ok=%v)", got, err, c.want, c.ok)
			}
		})
	}
}

// TestURLSettings: PURGE_QUEUE_URL and PUBLIC_URL are refused at load when
// they are not URLs of their kind. PUBLIC_URL follows the rule the
// documents built on it apply (a style refused one with user info that the
// loader had let through).
func TestURLSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, url string
		ok        bool
	}{
		{"PURGE_QUEUE_URL", "", true},
		{"PURGE_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/123456789012/tilesieve-TileEventsQueue-ABC", true},
		{"PURGE_QUEUE_URL", "http://127.0.0.1:4566/000000000000/events", true},
		// What a URL is, is internal/httpurl's rule, tested there; these show
		// the loader applies it (Parse for the queue, Base for PUBLIC_URL).
		{"PURGE_QUEUE_URL", "sqs.eu-west-1.amazonaws.com/123/q", false},
		{"PURGE_QUEUE_URL", "https://sqs.eu-west-1.amazonaws.com/", false},
		{"PUBLIC_URL", "", true},
		{"PUBLIC_URL", "https://tiles.example.com", true},
		{"PUBLIC_URL", "http://127.0.0.1:8080/maps/", true},
		{"PUBLIC_URL", "https://user:secret@tiles.example.com", false},
	} {
		t.Run(tt.name+"="+tt.url, func(t *testing.T) {
			t.Parallel()
			c, err := LoadTiles(envOf(map[string]string{"TILES_BUCKET": "b", tt.name: tt.url}))
			got := map[string]string{"PURGE_QUEUE_URL": c.PurgeQueueURL, "PUBLIC_URL": c.PublicURL}[tt.name]
			if tt.ok && (err != nil || got != tt.url) {
				t.Errorf("got %q, %v; want %q", got, err, tt.url)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.name)) {
				t.Errorf("got %v, want an error naming %s", err, tt.name)
			}
		})
	}
}

func TestWorkerCDNSettings(t *testing.T) {
	t.Parallel()
	w, err := LoadWorker(envOf(map[string]string{"TILES_BUCKET": "b", "DISTRIBUTION_ID": "E2EXAMPLE", "CDN_PATH_PREFIX": "maps/"}))
	if err != nil || w.DistributionID != "E2EXAMPLE" || w.CDNPathPrefix != "maps/" {
		t.Errorf("worker: got %q %q, %v", w.DistributionID, w.CDNPathPrefix, err)
	}
	if _, err := LoadWorker(envOf(map[string]string{"TILES_BUCKET": "b", "CDN_PATH_PREFIX": "../x"})); err == nil {
		t.Error("a bad CDN_PATH_PREFIX passed")
	}
}

func TestDirectiveSeconds(t *testing.T) {
	t.Parallel()
	cc := "public, max-age=86400, stale-while-revalidate=60, stale-if-error=86400"
	if got := directiveSeconds(cc, "stale-if-error"); got != 24*time.Hour {
		t.Fatalf("got %v", got)
	}
	if got := directiveSeconds("public, stale-if-error=-5", "stale-if-error"); got != 0 {
		t.Fatalf("negative: got %v", got)
	}
}
