package cdnrig_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/cdnrig"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
)

// templatePath is the SAM template at the module root.
var templatePath = filepath.Join("..", "..", "template.yaml")

// templateValues deploys the template with its defaults: CORS * (so
// Origin is not in the key) and the CDN on.
var templateValues = cdnrig.TemplateValues{
	Params:     pseudo,
	Conditions: map[string]bool{"CorsAllowsAnyOrigin": true, "CdnCors": true, "CreateCdn": true},
}

// pseudo are the pseudo parameters of the stack the tests deploy "into".
var pseudo = map[string]string{
	"AWS::AccountId": "123456789012",
	"AWS::Region":    "us-east-1",
	"AWS::Partition": "aws",
	"AWS::StackName": "tilesieve",
	"AWS::StackId":   "arn:aws:cloudformation:us-east-1:123456789012:stack/tilesieve/6f1a8f30-9a47-11ef-8d3c-0affd1a2b3c4",
}

func templatePolicy(t *testing.T) cdnrig.Policy {
	t.Helper()
	src, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cdnrig.PolicyFromTemplate(src, templateValues)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyFromTemplate checks what the rig reads from template.yaml
// against the CloudFront settings the tile function relies on: the rig is
// configured from the template, so these are the template's own values.
func TestPolicyFromTemplate(t *testing.T) {
	t.Parallel()
	p := templatePolicy(t)
	t.Logf("policy read from the template: %+v", p)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		// Honour the origin's max-age (MinTTL 0 lets no-store through uncached).
		{"MinTTL", p.MinTTL, time.Duration(0)},
		{"DefaultTTL", p.DefaultTTL, 24 * time.Hour},
		{"MaxTTL", p.MaxTTL, 365 * 24 * time.Hour},
		// Gzip vector tiles pass through by Accept-Encoding.
		{"AcceptEncoding", fmt.Sprint(p.AcceptEncoding), "[br gzip]"},
		// With CORS *, the key is the path alone: no host, no Origin.
		{"KeyHeaders", len(p.KeyHeaders), 0},
		// A function URL answers only to its own Host.
		{"ForwardHost", p.ForwardHost, false},
		// Origin access control signs every request: the admin token
		// cannot travel in Authorization.
		{"OriginSigning", p.OriginSigning, "always"},
		{"AllowedMethods", fmt.Sprint(p.AllowedMethods), "[GET HEAD OPTIONS]"},
		{"CachedMethods", fmt.Sprint(p.CachedMethods), "[GET HEAD]"},
		// The admin API is never cached.
		{"Uncached", uncachedPatterns(p), "[/_tilesieve/*]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	t.Run("CorsList", func(t *testing.T) {
		src, err := os.ReadFile(templatePath)
		if err != nil {
			t.Fatal(err)
		}
		v := cdnrig.TemplateValues{Params: pseudo, Conditions: map[string]bool{"CorsAllowsAnyOrigin": false, "CdnCors": true, "CreateCdn": true}}
		p, err := cdnrig.PolicyFromTemplate(src, v)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(p.KeyHeaders); got != "[Origin]" {
			t.Errorf("key headers with a CORS list: got %v, want [Origin]", got)
		}
	})
	t.Run("ViewerRequestFunction", func(t *testing.T) {
		if !p.ViewerHostAsForwardedHost {
			t.Fatal("template.yaml's default behaviour has no viewer-request CloudFront Function")
		}
		t.Logf("viewer-request function %s: the rig sets X-Forwarded-Host to the viewer's Host", p.ViewerFunction)
	})
}

func uncachedPatterns(p cdnrig.Policy) string {
	var out []string
	for _, u := range p.Uncached {
		out = append(out, u.PathPattern)
	}
	return fmt.Sprint(out)
}

// minimal is a template with one distribution; tweak replaces a line.
const minimal = `
Parameters:
  Secret: { Type: String, Default: s3cr3t }
Conditions:
  AnyOrigin: !Equals [a, a]
Resources:
  Policy:
    Type: AWS::CloudFront::CachePolicy
    Properties:
      CachePolicyConfig:
        MinTTL: 1
        DefaultTTL: 60
        MaxTTL: 3600
        ParametersInCacheKeyAndForwardedToOrigin:
          EnableAcceptEncodingGzip: true
          EnableAcceptEncodingBrotli: false
          CookiesConfig: { CookieBehavior: none }
          QueryStringsConfig: { QueryStringBehavior: none }
          HeadersConfig: !If [AnyOrigin, { HeaderBehavior: none }, { HeaderBehavior: whitelist, Headers: [Origin] }]
  Fn:
    Type: AWS::CloudFront::Function
  Oac:
    Type: AWS::CloudFront::OriginAccessControl
    Properties:
      OriginAccessControlConfig: { SigningBehavior: no-override }
  Dist:
    Type: AWS::CloudFront::Distribution
    Properties:
      DistributionConfig:
        Origins:
          - Id: O
            DomainName: example.com
            OriginAccessControlId: !GetAtt Oac.Id
            OriginCustomHeaders:
              - { HeaderName: X-From-Cdn, HeaderValue: !Ref Secret }
        DefaultCacheBehavior:
          TargetOriginId: O
          AllowedMethods: [GET, HEAD]
          CachedMethods: [GET, HEAD]
          CachePolicyId: !Ref Policy
          OriginRequestPolicyId: b689b0a8-53d0-40ab-baf2-68738e2966ac
          FunctionAssociations:
            - { EventType: viewer-request, FunctionARN: !GetAtt Fn.FunctionARN }
`

// TestPolicyFromTemplateShapes reads synthetic templates: what the rig can
// mirror, and a clear error for what it cannot.
func TestPolicyFromTemplateShapes(t *testing.T) {
	t.Parallel()
	any := map[string]bool{"AnyOrigin": true}
	for _, tc := range []struct {
		name     string
		old, new string // a replacement in minimal
		v        cdnrig.TemplateValues
		want     string // fmt of the fields below, or the error's substring
		wantErr  bool
	}{
		{name: "minimal", v: cdnrig.TemplateValues{Conditions: any},
			want: "1s 1m0s 1h0m0s [gzip] [] false [{X-From-Cdn s3cr3t}] true Fn no-override"},
		{name: "parameter given", v: cdnrig.TemplateValues{Conditions: any, Params: map[string]string{"Secret": "given"}},
			want: "1s 1m0s 1h0m0s [gzip] [] false [{X-From-Cdn given}] true Fn no-override"},
		{name: "origin whitelist", v: cdnrig.TemplateValues{Conditions: map[string]bool{"AnyOrigin": false}},
			want: "1s 1m0s 1h0m0s [gzip] [Origin] false [{X-From-Cdn s3cr3t}] true Fn no-override"},
		{name: "all viewer", old: "b689b0a8-53d0-40ab-baf2-68738e2966ac", new: "216adef6-5c7f-47e4-b989-5492eafa07d3", v: cdnrig.TemplateValues{Conditions: any},
			want: "1s 1m0s 1h0m0s [gzip] [] true [{X-From-Cdn s3cr3t}] true Fn no-override"},
		{name: "no function", old: "viewer-request", new: "viewer-response", v: cdnrig.TemplateValues{Conditions: any},
			want: "1s 1m0s 1h0m0s [gzip] [] false [{X-From-Cdn s3cr3t}] false  no-override"},
		{name: "select of split of the stack id", old: "HeaderValue: !Ref Secret", new: `HeaderValue: !Select [2, !Split ["/", !Ref AWS::StackId]]`,
			v:    cdnrig.TemplateValues{Conditions: any, Params: map[string]string{"AWS::StackId": "arn:aws:cloudformation:us-east-1:1:stack/s/uuid-1"}},
			want: "1s 1m0s 1h0m0s [gzip] [] false [{X-From-Cdn uuid-1}] true Fn no-override"},
		{name: "sub and join", old: "HeaderValue: !Ref Secret", new: `HeaderValue: !Join ["-", [!Sub "${AWS::StackName}-${Secret}", x]]`,
			v:    cdnrig.TemplateValues{Conditions: any, Params: map[string]string{"AWS::StackName": "st"}},
			want: "1s 1m0s 1h0m0s [gzip] [] false [{X-From-Cdn st-s3cr3t-x}] true Fn no-override"},
		{name: "pseudo parameter not given", old: "HeaderValue: !Ref Secret", new: `HeaderValue: !Ref AWS::StackId`, v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "pseudo parameter AWS::StackId has no value"},
		{name: "value known once deployed", old: "HeaderValue: !Ref Secret", new: `HeaderValue: !GetAtt Fn.FunctionARN`, v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "known only once deployed"},
		{name: "a list for a value", old: "HeaderValue: !Ref Secret", new: `HeaderValue: [a, b]`, v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "HeaderValue: line 35: a list, not a value"},
		{name: "split of a list", old: "HeaderValue: !Ref Secret", new: `HeaderValue: !Split ["/", [a, b]]`, v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "a list, not a value"},
		{name: "a list in a list", old: "HeaderValue: !Ref Secret", new: `HeaderValue: !Join ["-", [a, [b]]]`, v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "a list, not a value"},
		{name: "condition not given", v: cdnrig.TemplateValues{}, wantErr: true, want: "condition AnyOrigin has no value"},
		{name: "query strings in the key", old: "QueryStringBehavior: none", new: "QueryStringBehavior: all", v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "QueryStringBehavior all"},
		{name: "unknown origin request policy", old: "b689b0a8-53d0-40ab-baf2-68738e2966ac", new: "88a5eaf4-2fd4-4709-b370-b4c650ea3fcf", v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "mirrors AllViewer and AllViewerExceptHostHeader"},
		{name: "managed cache policy", old: "CachePolicyId: !Ref Policy", new: "CachePolicyId: 658327ea-f89d-4fab-a63d-7e88639e58f6", v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "not a !Ref to a resource"},
		{name: "secret without a default", old: "Default: s3cr3t", new: "NoEcho: true", v: cdnrig.TemplateValues{Conditions: any},
			wantErr: true, want: "parameter Secret has no default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := minimal
			if tc.old != "" {
				if !strings.Contains(src, tc.old) {
					t.Fatalf("template has no %q", tc.old)
				}
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			p, err := cdnrig.PolicyFromTemplate([]byte(src), tc.v)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got error %v, want one with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(p.MinTTL, " ", p.DefaultTTL, " ", p.MaxTTL, " ", p.AcceptEncoding, " ", p.KeyHeaders, " ", p.ForwardHost, " ",
				p.OriginHeaders, " ", p.ViewerHostAsForwardedHost, " ", p.ViewerFunction, " ", p.OriginSigning)
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBanExpression checks the ban of each kind of invalidation path.
func TestBanExpression(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, want string
		bad        bool
	}{
		{path: "/demo/2/1/1.png", want: `req.url == "/demo/2/1/1.png"`},
		{path: "/demo/2/*", want: `req.url ~ "^/demo/2/"`},
		{path: "/*", want: `req.url ~ "^/"`},
		// Regular-expression characters match themselves; the CLI's quoting
		// doubles the backslashes.
		{path: "/a.b+(c)/*", want: `req.url ~ "^/a\\.b\\+\\(c\\)/"`},
		// Escapes are compared as written, as CloudFront compares them.
		{path: "/my%20maps/0/0/0.png", want: `req.url == "/my%20maps/0/0/0.png"`},
		{path: `/q"uote\`, want: `req.url == "/q\"uote\\"`},
		{path: "demo/*", bad: true},
		{path: "/de*mo/", bad: true},
		{path: "/de*mo/*", bad: true},
		{path: "/a b", bad: true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := cdnrig.BanExpression(tc.path)
			if tc.bad {
				if !errors.Is(err, cdnrig.ErrBadPath) {
					t.Fatalf("got %v, %v, want ErrBadPath", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %v, %v, want %v", got, err, tc.want)
			}
		})
	}
}

// origin is a test origin that answers each path by a rule and records what
// it was asked.
type origin struct {
	*httptest.Server
	mu   sync.Mutex // guards seen
	seen []*http.Request
}

func newOrigin(t *testing.T) *origin {
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Clone(r.Context()))
		n := len(o.seen)
		o.mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/nostore/"):
			w.Header().Set("Cache-Control", "no-store")
		case strings.HasPrefix(r.URL.Path, "/ttl/"):
			if cc := r.URL.Query().Get("cc"); cc != "" {
				w.Header().Set("Cache-Control", cc)
			}
		case strings.HasPrefix(r.URL.Path, "/vary/"):
			w.Header().Set("Cache-Control", "public, max-age=600")
			w.Header().Set("Vary", "X-Forwarded-Host")
		default:
			w.Header().Set("Cache-Control", "public, max-age=600")
		}
		fmt.Fprintf(w, "answer %d for %s", n, r.URL.RequestURI())
	}))
	t.Cleanup(o.Close)
	return o
}

// calls counts the requests for a path, and returns the last one.
func (o *origin) calls(path string) (int, *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	var last *http.Request
	for _, r := range o.seen {
		if r.URL.Path == path {
			n++
			last = r
		}
	}
	return n, last
}

type answer struct {
	status int
	cache  string
	body   string
	ttl    string // TTLHeader
}

func get(t *testing.T, method, url string, hdr map[string]string) answer {
	t.Helper()
	a, err := fetch(method, url, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// fetch is get for goroutines other than the test's.
func fetch(method, url string, hdr map[string]string) (answer, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return answer{}, err
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{resp.StatusCode, resp.Header.Get(cdnrig.CacheHeader), string(b), resp.Header.Get(cdnrig.TTLHeader)}, nil
}

// client sends Accept-Encoding only when a test says so.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}

// TestCacheBehaviour drives varnishd with the rig's VCL in front of a
// recording origin: the key, what the origin receives, TTLs and bans.
func TestCacheBehaviour(t *testing.T) {
	t.Parallel()
	o := newOrigin(t)
	originAddr := strings.TrimPrefix(o.URL, "http://")
	p := cdnrig.Policy{
		MinTTL: 0, DefaultTTL: time.Hour, MaxTTL: 24 * time.Hour,
		AcceptEncoding:            []string{"br", "gzip"},
		OriginHeaders:             []cdnrig.Header{{Name: "X-From-Cdn", Value: "s3cr3t"}},
		ViewerHostAsForwardedHost: true,
		OriginSigning:             "always",
		AllowedMethods:            []string{"GET", "HEAD", "OPTIONS"},
		CachedMethods:             []string{"GET", "HEAD"},
		Uncached:                  []cdnrig.Uncached{{PathPattern: "/_admin/*"}},
	}
	rig := cdnrig.Start(t, cdnrig.Options{Origin: originAddr, Policy: p})

	t.Run("key is the path", func(t *testing.T) {
		first := get(t, "GET", rig.URL+"/k/a.png?x=1", nil)
		second := get(t, "GET", rig.URL+"/k/a.png?x=2", map[string]string{"Host": "other.example"})
		if first.cache != "miss" || second.cache != "hit" || second.body != first.body {
			t.Fatalf("got %v then %v, want a miss then a hit of the same answer", first, second)
		}
		n, last := o.calls("/k/a.png")
		if n != 1 || last.URL.RawQuery != "x=1" {
			t.Errorf("origin: got %v calls, query %q, want 1 call with x=1", n, last.URL.RawQuery)
		}
	})
	t.Run("what the origin sees", func(t *testing.T) {
		get(t, "GET", rig.URL+"/k/headers.png", map[string]string{
			"Host": "cdn.example", "X-Forwarded-Host": "evil.example", "X-From-Cdn": "forged", "Cookie": "a=b",
			"Authorization": "Bearer viewer-token",
		})
		_, r := o.calls("/k/headers.png")
		for _, c := range []struct{ name, got, want string }{
			{"Host", r.Host, originAddr},
			{"X-Forwarded-Host", r.Header.Get("X-Forwarded-Host"), "cdn.example"},
			{"X-From-Cdn", r.Header.Get("X-From-Cdn"), "s3cr3t"},
			{"Cookie", r.Header.Get("Cookie"), "a=b"},
			{"Authorization", r.Header.Get("Authorization"), cdnrig.SignedAuthorization},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
			}
		}
	})
	t.Run("accept-encoding in the key", func(t *testing.T) {
		for _, ae := range []string{"gzip, deflate", "deflate, gzip;q=1", "br, gzip", "identity"} {
			get(t, "GET", rig.URL+"/k/ae.pbf", map[string]string{"Accept-Encoding": ae})
		}
		if n, _ := o.calls("/k/ae.pbf"); n != 3 {
			t.Errorf("origin calls for gzip, gzip, br+gzip, none: got %v, want 3", n)
		}
	})
	t.Run("TTLs", func(t *testing.T) {
		for _, tc := range []struct {
			name, cc string
			want     time.Duration
		}{
			{"none: DefaultTTL", "", time.Hour},
			{"max-age", "public, max-age=600", 10 * time.Minute},
			{"s-maxage wins", "max-age=5, s-maxage=120", 2 * time.Minute},
			{"above MaxTTL", "max-age=999999999", 24 * time.Hour},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a := get(t, "GET", rig.URL+"/ttl/"+strings.ReplaceAll(tc.name, " ", "-")+"?cc="+url.QueryEscape(tc.cc), nil)
				ttl, err := strconv.ParseFloat(a.ttl, 64)
				if err != nil {
					t.Fatalf("TTL header %q: %v", a.ttl, err)
				}
				// The object's remaining TTL, a moment after it was stored.
				if got := time.Duration(ttl * float64(time.Second)); got > tc.want || got < tc.want-5*time.Second {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			})
		}
	})
	t.Run("no-store is not cached", func(t *testing.T) {
		get(t, "GET", rig.URL+"/nostore/a", nil)
		if a := get(t, "GET", rig.URL+"/nostore/a", nil); a.cache == "hit" {
			t.Errorf("got %v, want no hit", a)
		}
	})
	t.Run("origin Vary is not a variant", func(t *testing.T) {
		get(t, "GET", rig.URL+"/vary/a", map[string]string{"Host": "one.example"})
		if a := get(t, "GET", rig.URL+"/vary/a", map[string]string{"Host": "two.example"}); a.cache != "hit" {
			t.Errorf("got %v, want a hit: CloudFront keys on its cache policy only", a)
		}
	})
	t.Run("uncached behaviour", func(t *testing.T) {
		get(t, "GET", rig.URL+"/_admin/stats", nil)
		if a := get(t, "GET", rig.URL+"/_admin/stats", nil); a.cache != "pass" {
			t.Errorf("got %v, want pass", a)
		}
		if n, _ := o.calls("/_admin/stats"); n != 2 {
			t.Errorf("origin calls: got %v, want 2", n)
		}
	})
	t.Run("method not allowed", func(t *testing.T) {
		if a := get(t, "POST", rig.URL+"/k/a.png", nil); a.status != http.StatusForbidden {
			t.Errorf("got %v, want 403", a)
		}
	})
	t.Run("bans", func(t *testing.T) {
		paths := []string{"/b/1/a.png", "/b/1/b.png", "/b/2/a.png", "/b.1/x", "/bx1/x", "/b/3/%20a.png"}
		for _, p := range paths {
			get(t, "GET", rig.URL+p, nil)
		}
		if err := rig.BanPaths([]string{"/b/1/*", "/b/3/%20a.png", "/b.1/*"}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"/b/1/a.png": "miss", "/b/1/b.png": "miss", "/b/2/a.png": "hit", "/b.1/x": "miss", "/bx1/x": "hit", "/b/3/%20a.png": "miss"}
		for _, p := range paths {
			if a := get(t, "GET", rig.URL+p, nil); a.cache != want[p] {
				t.Errorf("%s after the bans: got %v, want %v", p, a.cache, want[p])
			}
		}
		if got := rig.Bans(); !slices.Contains(got, `req.url ~ "^/b\\.1/"`) {
			t.Errorf("bans: got %v, want the escaped regular expression among them", got)
		}
	})
}

// TestInvalidationsThroughThePathPrefix: with the tiles under a path prefix
// of the CDN, the origin gets the key's path, and cdn.Invalidator's paths
// (with the same prefix) ban what viewers read, escapes included.
func TestInvalidationsThroughThePathPrefix(t *testing.T) {
	t.Parallel()
	o := newOrigin(t)
	p := cdnrig.Policy{DefaultTTL: time.Hour, MaxTTL: 24 * time.Hour, AllowedMethods: []string{"GET", "HEAD"}, CachedMethods: []string{"GET", "HEAD"}}
	rig := cdnrig.Start(t, cdnrig.Options{Origin: strings.TrimPrefix(o.URL, "http://"), Policy: p, PathPrefix: "/maps/"})
	cf := rig.Invalidations(t, cdntest.Options{})
	inv := cloudfront.New(cf.Client(), cloudfront.Config{DistributionID: "E1", PathPrefix: "maps/"}, nil)

	viewed := []string{"/maps/a/1.png", "/maps/a/2.png", "/maps/my%20b/1.png", "/maps/c/1.png"}
	for _, u := range viewed {
		get(t, "GET", rig.URL+u, nil)
	}
	if n, _ := o.calls("/a/1.png"); n != 1 {
		t.Fatalf("origin calls for /a/1.png: got %v, want 1 (the prefix removed)", n)
	}
	// A directory, and a single key with a space: wildcard and exact paths.
	for _, c := range []struct{ name, batch string }{{"dir", "a/"}, {"key", "my b/1.png"}} {
		if _, err := inv.InvalidateTargets(context.Background(), []string{c.batch}, c.name, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for cf.InProgress() != (cdntest.Usage{}) {
		if time.Now().After(deadline) {
			t.Fatalf("invalidations not completed: %+v in progress, apply errors %v", cf.InProgress(), cf.ApplyErrors())
		}
		time.Sleep(5 * time.Millisecond) // polling for completion, not ordering
	}
	var sent []string
	for _, r := range cf.Requests() {
		sent = append(sent, r.Paths...)
	}
	if got, want := fmt.Sprint(sent), "[/maps/a/* /maps/my%20b/1.png]"; got != want {
		t.Errorf("invalidation paths: got %v, want %v", got, want)
	}
	want := map[string]string{"/maps/a/1.png": "miss", "/maps/a/2.png": "miss", "/maps/my%20b/1.png": "miss", "/maps/c/1.png": "hit"}
	for _, u := range viewed {
		if a := get(t, "GET", rig.URL+u, nil); a.cache != want[u] {
			t.Errorf("%s after the invalidations: got %v, want %v", u, a.cache, want[u])
		}
	}
}
