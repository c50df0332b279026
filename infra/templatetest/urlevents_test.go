package templatetest

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestURLFixtures checks the function-URL events that `sam local invoke
// TilesFunction -e events/url-*.json` feeds to the tile function: payload format
// 2.0 as Lambda sends it, with a query string, path and host that agree with each
// other the way aws-lambda-go's lambdaurl rebuilds the request from them.
func TestURLFixtures(t *testing.T) {
	t.Parallel()
	want := map[string]struct{ method, path, header, value string }{
		"url-get-tile.json":        {"GET", "/demo/3/4/2.png", "accept-encoding", "gzip"},
		"url-head-tile.json":       {"HEAD", "/demo/3/4/2.png", "", ""},
		"url-get-conditional.json": {"GET", "/demo/3/4/2.png", "if-none-match", ""},
		"url-get-range.json":       {"GET", "/demo/3/4/2.png", "range", "bytes=0-99"},
		"url-admin-purge.json":     {"POST", "/_tilesieve/purge", "authorization", ""},
		"url-admin-keys.json":      {"GET", "/_tilesieve/keys", "authorization", ""},
		"url-admin-stats.json":     {"GET", "/_tilesieve/stats", "authorization", ""},
		"url-health.json":          {"GET", "/_tilesieve/health", "", ""},
		"url-bad-path.json":        {"GET", "/demo/%2e%2e/secret", "", ""},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "events", "url-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if got, wantNames := names, slices.Sorted(maps.Keys(want)); !slices.Equal(got, wantNames) {
		t.Fatalf("fixtures %v, want %v", got, wantNames)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var ev events.LambdaFunctionURLRequest
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatal(err)
			}
			// Only the fields Lambda really sends: those of aws-lambda-go's type
			// plus routeKey and stage, which it does not model.
			var top, ctx map[string]json.RawMessage
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(top["requestContext"], &ctx); err != nil {
				t.Fatal(err)
			}
			reencoded, _ := json.Marshal(ev)
			var known, knownCtx map[string]json.RawMessage
			_ = json.Unmarshal(reencoded, &known)
			_ = json.Unmarshal(known["requestContext"], &knownCtx)
			for k := range top {
				if _, ok := known[k]; !ok && k != "routeKey" {
					t.Errorf("unexpected field %q", k)
				}
			}
			for k := range ctx {
				if _, ok := knownCtx[k]; !ok && k != "routeKey" && k != "stage" {
					t.Errorf("unexpected requestContext field %q", k)
				}
			}

			w := want[name]
			rc := ev.RequestContext
			if ev.Version != "2.0" || rc.HTTP.Method != w.method || ev.RawPath != w.path || rc.HTTP.Path != ev.RawPath {
				t.Errorf("version %q, %s %s (context path %s), want 2.0 %s %s", ev.Version, rc.HTTP.Method, ev.RawPath, rc.HTTP.Path, w.method, w.path)
			}
			if rc.APIID == "" || rc.DomainPrefix != rc.APIID || !strings.HasPrefix(rc.DomainName, rc.APIID+".lambda-url.") || !strings.HasSuffix(rc.DomainName, ".on.aws") {
				t.Errorf("apiId %q, domainPrefix %q, domainName %q do not agree", rc.APIID, rc.DomainPrefix, rc.DomainName)
			}
			if ev.Headers["host"] != rc.DomainName {
				t.Errorf("host header %q, want %q", ev.Headers["host"], rc.DomainName)
			}
			if rc.TimeEpoch == 0 || rc.Time == "" || rc.RequestID == "" || rc.HTTP.SourceIP == "" || rc.HTTP.UserAgent != ev.Headers["user-agent"] {
				t.Errorf("incomplete requestContext %+v", rc)
			}
			for k := range ev.Headers {
				if k != strings.ToLower(k) {
					t.Errorf("header %q: function URLs deliver lower-case header names", k)
				}
			}
			if w.header != "" {
				if v, ok := ev.Headers[w.header]; !ok || w.value != "" && v != w.value {
					t.Errorf("header %s = %q, want %q", w.header, v, w.value)
				}
			}
			if a := ev.Headers["authorization"]; a != "" && !strings.HasPrefix(a, "Bearer ") {
				t.Errorf("authorization %q, want a bearer token", a)
			}
			// The query string and its parsed form agree (lambdaurl uses rawQueryString).
			q, err := url.ParseQuery(ev.RawQueryString)
			if err != nil {
				t.Fatal(err)
			}
			parsed := map[string]string{}
			for k, v := range q {
				parsed[k] = strings.Join(v, ",")
			}
			if len(parsed) == 0 {
				parsed = nil
			}
			if !maps.Equal(parsed, ev.QueryStringParameters) {
				t.Errorf("rawQueryString %q parses to %v, queryStringParameters %v", ev.RawQueryString, parsed, ev.QueryStringParameters)
			}
			u, err := url.Parse("https://" + rc.DomainName + ev.RawPath + "?" + ev.RawQueryString)
			if err != nil {
				t.Fatalf("lambdaurl could not build the request URL: %v", err)
			}
			if u.EscapedPath() != ev.RawPath {
				t.Errorf("request path %q, want the raw %q", u.EscapedPath(), ev.RawPath)
			}
			if !bytes.HasSuffix(b, []byte("\n")) {
				t.Error("no final newline")
			}
		})
	}
}
