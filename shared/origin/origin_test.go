package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// counter counts the requests that reach the endpoint, by method and path.
type counter struct {
	mu sync.Mutex // guards n
	n  map[string]int
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[r.Method+" "+r.URL.Path]++
		if r.URL.Query().Has("list-type") {
			c.n["LIST"]++
		}
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

type env struct {
	srv *s3local.Server
	api *s3.Client
	url string
	req *counter
}

func start(t *testing.T) *env {
	t.Helper()
	req := &counter{}
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{"tiles"}}, req.wrap)
	return &env{srv: ep.Server, api: ep.Client, url: ep.URL, req: req}
}

// startFaulty is start with one object, "k" (body "body"), whose GETs meet
// fault (its Match set here).
func startFaulty(t *testing.T, fault s3local.Fault) *env {
	t.Helper()
	e := start(t)
	e.put(t, "k", []byte("body"), "text/plain", "")
	fault.Match = s3local.MatchGet("/tiles/k")
	e.srv.Faults().Add(fault)
	return e
}

func (e *env) put(t *testing.T, key string, body []byte, ct, ce string) string {
	t.Helper()
	etag := s3localtest.Put(t, e.api, "tiles", key, body, ct, ce)
	return etag
}

func (e *env) client(cfg origin.Config) *origin.Client {
	cfg.Bucket = "tiles"
	return origin.NewWithS3(e.api, cfg)
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestGetCarriesMetadata(t *testing.T) {
	t.Parallel()
	e := start(t)
	body := []byte("\x1f\x8b gzip vector tile")
	before := time.Now().Add(-2 * time.Second)
	etag := e.put(t, "v1/osm/3/4/5.mvt", body, "application/vnd.mapbox-vector-tile", "gzip")
	stored := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := e.client(origin.Config{Prefix: "v1/", Now: func() time.Time { return stored }})

	got, err := c.Get(ctxTimeout(t, 5*time.Second), "osm/3/4/5.mvt", "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, body) {
		t.Errorf("body: got %q, want %q", got.Body, body)
	}
	if got.ContentType != "application/vnd.mapbox-vector-tile" || got.ContentEncoding != "gzip" {
		t.Errorf("type/encoding: got %q %q, want application/vnd.mapbox-vector-tile gzip", got.ContentType, got.ContentEncoding)
	}
	if got.ETag != etag {
		t.Errorf("etag: got %q, want %q", got.ETag, etag)
	}
	if got.LastModified.Before(before) || got.LastModified.After(time.Now().Add(2*time.Second)) {
		t.Errorf("last-modified: got %v, want about now", got.LastModified)
	}
	if !got.StoredAt.Equal(stored) {
		t.Errorf("stored-at: got %v, want %v (the injected clock)", got.StoredAt, stored)
	}
	if got := c.ObjectKey("a/b"); got != "v1/a/b" {
		t.Errorf("ObjectKey: got %q, want v1/a/b", got)
	}

	h, err := c.Head(ctxTimeout(t, 5*time.Second), "osm/3/4/5.mvt")
	if err != nil {
		t.Fatal(err)
	}
	if h.Body != nil || h.ETag != etag || h.ContentEncoding != "gzip" || h.ContentType != "application/vnd.mapbox-vector-tile" {
		t.Errorf("head: got %+v, want metadata only with etag %s", h, etag)
	}
}

func TestGetNotModified(t *testing.T) {
	t.Parallel()
	e := start(t)
	etag := e.put(t, "a/1.png", []byte("png"), "image/png", "")
	c := e.client(origin.Config{})
	ctx := ctxTimeout(t, 5*time.Second)

	got, err := c.Get(ctx, "a/1.png", etag)
	if !errors.Is(err, tile.ErrNotModified) || got != nil {
		t.Fatalf("same etag: got %v, %v, want nil, tile.ErrNotModified", got, err)
	}
	if origin.IsTimeout(err) {
		t.Error("not modified counted as a timeout")
	}
	if n := e.req.get("GET /tiles/a/1.png"); n != 1 {
		t.Errorf("requests: got %d, want 1 (a 304 is not retried)", n)
	}
	got, err = c.Get(ctx, "a/1.png", `"0123456789abcdef0123456789abcdef-2"`)
	if err != nil || string(got.Body) != "png" {
		t.Fatalf("other etag: got %v, %v, want the body", got, err)
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	e := start(t)
	c := e.client(origin.Config{})
	ctx := ctxTimeout(t, 5*time.Second)

	_, err := c.Get(ctx, "no/such.png", "")
	if !errors.Is(err, tile.ErrNotFound) {
		t.Fatalf("get: got %v, want tile.ErrNotFound", err)
	}
	if !strings.HasPrefix(err.Error(), "origin: ") {
		t.Errorf("error %q does not name the package", err)
	}
	_, err = c.Head(ctx, "no/such.png")
	if !errors.Is(err, tile.ErrNotFound) {
		t.Fatalf("head: got %v, want tile.ErrNotFound", err)
	}
	if n := e.req.get("GET /tiles/no/such.png"); n != 1 {
		t.Errorf("requests: got %d, want 1 (not found is not retried)", n)
	}
}

func TestBadKeyMakesNoRequest(t *testing.T) {
	t.Parallel()
	e := start(t)
	c := e.client(origin.Config{})
	for _, key := range []string{"", "../etc/passwd", "a//b", "a\\b"} {
		if _, err := c.Get(context.Background(), key, ""); !errors.Is(err, tile.ErrBadKey) {
			t.Errorf("Get(%q): got %v, want tile.ErrBadKey", key, err)
		}
		if _, err := c.Head(context.Background(), key); !errors.Is(err, tile.ErrBadKey) {
			t.Errorf("Head(%q): got %v, want tile.ErrBadKey", key, err)
		}
	}
	if err := c.List(context.Background(), "a/../", func(origin.ObjectInfo) bool { return true }); !errors.Is(err, tile.ErrBadKey) {
		t.Errorf("List: got %v, want tile.ErrBadKey", err)
	}
	if len(e.req.n) != 0 {
		t.Errorf("requests made: %v", e.req.n)
	}
}

// TestReservedKeysAreNotFound: with an empty prefix the journal sits beside
// the tiles; a tile key under tile.ReservedPrefix never reaches it.
func TestReservedKeysAreNotFound(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.put(t, "_tilesieve/journal/head.json", []byte(`{"seq":1}`), "application/json", "")
	c := e.client(origin.Config{})
	if _, err := c.Get(context.Background(), "_tilesieve/journal/head.json", ""); !errors.Is(err, tile.ErrNotFound) {
		t.Errorf("Get: got %v, want tile.ErrNotFound", err)
	}
	if _, err := c.Head(context.Background(), "_tilesieve/journal/head.json"); !errors.Is(err, tile.ErrNotFound) {
		t.Errorf("Head: got %v, want tile.ErrNotFound", err)
	}
	if n := e.req.get("GET /tiles/_tilesieve/journal/head.json") + e.req.get("HEAD /tiles/_tilesieve/journal/head.json"); n != 0 {
		t.Errorf("got %d requests for the journal, want 0", n)
	}
}

func TestRetriesThrottlingThenSucceeds(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusInternalServerError} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			e := startFaulty(t, s3local.Fault{Status: status, Times: 2})
			got, err := e.client(origin.Config{}).Get(ctxTimeout(t, 5*time.Second), "k", "")
			if err != nil || string(got.Body) != "body" {
				t.Fatalf("got %v, %v, want the body after two %d answers", got, err, status)
			}
			if n := e.req.get("GET /tiles/k"); n != 3 {
				t.Errorf("requests: got %d, want 3", n)
			}
		})
	}
}

func TestServerErrorForeverGivesUp(t *testing.T) {
	t.Parallel()
	e := startFaulty(t, s3local.Fault{Status: http.StatusInternalServerError})
	_, err := e.client(origin.Config{MaxAttempts: 3}).Get(ctxTimeout(t, 5*time.Second), "k", "")
	if err == nil {
		t.Fatal("got no error")
	}
	if n := e.req.get("GET /tiles/k"); n != 3 {
		t.Errorf("requests: got %d, want 3 (MaxAttempts)", n)
	}
	if origin.IsTimeout(err) || errors.Is(err, tile.ErrNotFound) {
		t.Errorf("got %v, want a plain origin failure (502, not 504)", err)
	}
	if !strings.Contains(err.Error(), "500") {
		t.Errorf("error %q does not carry the cause", err)
	}
}

// TestGetReturnsAtTheDeadline: whether S3 hangs or answers with errors to
// retry, Get returns promptly at the caller's deadline, with the cause.
func TestGetReturnsAtTheDeadline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fault   s3local.Fault
		cfg     origin.Config
		timeout time.Duration
		slack   time.Duration // how long after the deadline Get may return
		cause   func(err error) bool
	}{
		{"delay past the deadline is a timeout", s3local.Fault{Delay: time.Minute}, origin.Config{}, 300 * time.Millisecond, 250 * time.Millisecond,
			func(err error) bool { return errors.Is(err, context.DeadlineExceeded) && origin.IsTimeout(err) }},
		// Backoff grows to a 1 s cap, so a loop that slept past the deadline
		// would overshoot it by far more than the slack.
		{"backoff does not sleep past the deadline", s3local.Fault{Status: http.StatusServiceUnavailable}, origin.Config{MaxAttempts: 1000}, 400 * time.Millisecond, 100 * time.Millisecond,
			func(err error) bool {
				return strings.Contains(err.Error(), "SlowDown") || strings.Contains(err.Error(), "503")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startFaulty(t, tc.fault)
			ctx := ctxTimeout(t, tc.timeout)
			deadline, _ := ctx.Deadline()
			_, err := e.client(tc.cfg).Get(ctx, "k", "")
			late := time.Since(deadline)
			if err == nil || !tc.cause(err) {
				t.Fatalf("got %v, want an error with its cause", err)
			}
			if late > tc.slack {
				t.Errorf("returned %v after the deadline, want within %v", late, tc.slack)
			}
		})
	}
}

func TestPerAttemptTimeoutRetries(t *testing.T) {
	t.Parallel()
	e := startFaulty(t, s3local.Fault{Delay: time.Minute, Times: 1})
	got, err := e.client(origin.Config{Timeout: 200 * time.Millisecond}).Get(ctxTimeout(t, 5*time.Second), "k", "")
	if err != nil || string(got.Body) != "body" {
		t.Fatalf("got %v, %v, want the body from the second attempt", got, err)
	}
	if n := e.req.get("GET /tiles/k"); n != 2 {
		t.Errorf("requests: got %d, want 2", n)
	}

	// Every attempt hanging: the error is a timeout although the caller's
	// context is still alive.
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/k"), Delay: time.Minute})
	_, err = e.client(origin.Config{Timeout: 100 * time.Millisecond, MaxAttempts: 2}).Get(ctxTimeout(t, 5*time.Second), "k", "")
	if !origin.IsTimeout(err) {
		t.Fatalf("got %v, want a timeout", err)
	}
}

func TestTruncatedBodyIsAnError(t *testing.T) {
	t.Parallel()
	e := start(t)
	body := bytes.Repeat([]byte("0123456789"), 2000)
	e.put(t, "big", body, "application/octet-stream", "")
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/big"), TruncateAfter: 5000})

	got, err := e.client(origin.Config{MaxAttempts: 2}).Get(ctxTimeout(t, 5*time.Second), "big", "")
	if err == nil || got != nil {
		t.Fatalf("got %d bytes, %v, want an error and no tile", len(got.Body), err)
	}
	if n := e.req.get("GET /tiles/big"); n != 2 {
		t.Errorf("requests: got %d, want 2 (a broken body is retried)", n)
	}

	// Cut once: the retry delivers the whole body.
	e.srv.Faults().Reset()
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/big"), TruncateAfter: 5000, Times: 1})
	got, err = e.client(origin.Config{}).Get(ctxTimeout(t, 5*time.Second), "big", "")
	if err != nil || !bytes.Equal(got.Body, body) {
		t.Fatalf("got %v, want the whole body after one cut", err)
	}
}

func TestSlowBodyIsAnError(t *testing.T) {
	t.Parallel()
	e := start(t)
	body := bytes.Repeat([]byte("x"), 64<<10) // 16 chunks of 4 KiB
	e.put(t, "slow", body, "application/octet-stream", "")
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/slow"), SlowBody: 100 * time.Millisecond})

	c := e.client(origin.Config{MaxAttempts: 1, MinBodyRate: 64 << 10, BodyGrace: 200 * time.Millisecond})
	began := time.Now()
	got, err := c.Get(ctxTimeout(t, 10*time.Second), "slow", "")
	if err == nil || got != nil {
		t.Fatalf("got a tile, %v, want an error", err)
	}
	if !errors.Is(err, origin.ErrStalled) || !origin.IsTimeout(err) {
		t.Errorf("got %v, want ErrStalled counted as a timeout", err)
	}
	// The whole body would take 1.6 s; the stall is seen soon after the grace.
	if el := time.Since(began); el > time.Second {
		t.Errorf("took %v, want the stall caught soon after the 200ms grace", el)
	}
}

func TestListPaginates(t *testing.T) {
	t.Parallel()
	e := start(t)
	var want []string
	for i := range 23 {
		k := fmt.Sprintf("osm/%02d.png", i)
		want = append(want, k)
		e.put(t, "v1/"+k, bytes.Repeat([]byte("y"), i), "image/png", "")
	}
	e.put(t, "v1/other/1.png", []byte("z"), "image/png", "")
	e.put(t, "v2/osm/99.png", []byte("z"), "image/png", "")
	e.put(t, "v1/osm/dir/", nil, "", "") // a directory marker is not a tile

	c := e.client(origin.Config{Prefix: "v1/"})
	origin.SetListPageSize(c, 5)
	var got []origin.ObjectInfo
	err := c.List(ctxTimeout(t, 5*time.Second), "osm/", func(o origin.ObjectInfo) bool {
		got = append(got, o)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d objects, want %d: %v", len(got), len(want), got)
	}
	for i, o := range got {
		if o.Key != want[i] || o.Size != int64(i) || o.ETag == "" {
			t.Errorf("object %d: got %+v, want key %s size %d and an etag", i, o, want[i], i)
		}
	}
	if n := e.req.get("LIST"); n < 5 {
		t.Errorf("list pages: got %d, want at least 5", n)
	}

	// Stopping early stops paging.
	before := e.req.get("LIST")
	seen := 0
	err = c.List(ctxTimeout(t, 5*time.Second), "osm/", func(origin.ObjectInfo) bool { seen++; return seen < 3 })
	if err != nil || seen != 3 {
		t.Fatalf("early stop: saw %d, err %v, want 3, nil", seen, err)
	}
	if n := e.req.get("LIST") - before; n != 1 {
		t.Errorf("early stop: %d pages fetched, want 1", n)
	}
}

func TestListRetriesAPage(t *testing.T) {
	t.Parallel()
	e := start(t)
	e.put(t, "a/1", []byte("1"), "text/plain", "")
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles"), Status: http.StatusServiceUnavailable, Times: 1})
	n := 0
	err := e.client(origin.Config{}).List(ctxTimeout(t, 5*time.Second), "", func(origin.ObjectInfo) bool { n++; return true })
	if err != nil || n != 1 {
		t.Fatalf("got %d objects, %v, want 1, nil", n, err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  origin.Config
		want []string // substrings of the joined error; none means valid
	}{
		{"minimal", origin.Config{Bucket: "b"}, nil},
		{"full", origin.Config{Bucket: "b", Prefix: "v1/", Endpoint: "http://localhost:4566", MaxAttempts: 2, Timeout: time.Second}, nil},
		{"everything wrong", origin.Config{Prefix: "/v1", Endpoint: "localhost", MaxAttempts: -1, Timeout: -1, BodyGrace: -1},
			[]string{"Bucket", "Prefix", "ending in /", "Endpoint", "MaxAttempts", "Timeout", "BodyGrace"}},
		{"leading slash", origin.Config{Bucket: "b", Prefix: "/v1/"}, []string{"Prefix", "empty segment"}},
		{"empty segment", origin.Config{Bucket: "b", Prefix: "v1//"}, []string{"Prefix", "empty segment"}},
		{"dot segment", origin.Config{Bucket: "b", Prefix: "v1/../"}, []string{"Prefix", "dot segment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("got nil, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

// TestNewFromEnvironment builds the client the way main does: the SDK's
// default configuration from the environment, with the endpoint and
// path-style addressing from Config.
func TestNewFromEnvironment(t *testing.T) {
	e := start(t)
	e.put(t, "env/1.png", []byte("png"), "image/png", "")
	s3localtest.IsolateEnv(t)
	s3localtest.EnvCredentials(t)
	t.Setenv("AWS_ENDPOINT_URL", "")

	if _, err := origin.New(context.Background(), origin.Config{}); err == nil {
		t.Fatal("New without a bucket: got nil, want an error")
	}
	c, err := origin.New(context.Background(), origin.Config{
		Bucket: "tiles", Region: s3local.DefaultRegion, Endpoint: e.url, PathStyle: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Bucket() != "tiles" || c.S3() == nil {
		t.Fatalf("Bucket %q, S3 %v", c.Bucket(), c.S3())
	}
	got, err := c.Get(ctxTimeout(t, 5*time.Second), "env/1.png", "")
	if err != nil || string(got.Body) != "png" {
		t.Fatalf("got %v, %v, want the body", got, err)
	}
}

// TestGetRange: a range comes back with the object's size and ETag; pinned
// to an old ETag it is tile.ErrPreconditionFailed, not retried.
func TestGetRange(t *testing.T) {
	t.Parallel()
	e := start(t)
	etag := e.put(t, "tiles/a.pmtiles", []byte("0123456789"), "", "")
	c := e.client(origin.Config{Prefix: "tiles/"})
	rg, err := c.GetRange(context.Background(), "tiles/a.pmtiles", 2, 100, "")
	if err != nil || string(rg.Body) != "23456789" || rg.Size != 10 || rg.ETag != etag {
		t.Fatalf("got %+v, %v", rg, err)
	}
	rg, err = c.GetRange(context.Background(), "tiles/a.pmtiles", 0, 3, etag)
	if err != nil || string(rg.Body) != "012" {
		t.Fatalf("pinned: got %+v, %v", rg, err)
	}
	e.put(t, "tiles/a.pmtiles", []byte("changed"), "", "")
	before := e.req.get("GET /tiles/tiles/a.pmtiles")
	if _, err := c.GetRange(context.Background(), "tiles/a.pmtiles", 0, 3, etag); !errors.Is(err, tile.ErrPreconditionFailed) {
		t.Fatalf("changed object: got %v, want tile.ErrPreconditionFailed", err)
	}
	if n := e.req.get("GET /tiles/tiles/a.pmtiles") - before; n != 1 {
		t.Fatalf("a 412 took %d requests, want 1", n)
	}
	if _, err := c.GetRange(context.Background(), "tiles/none.pmtiles", 0, 3, ""); !errors.Is(err, tile.ErrNotFound) {
		t.Fatalf("missing object: got %v", err)
	}
}

// TestRangePastMaxIsNotRead: a range whose Content-Length is past
// MaxObjectBytes is refused from the header, before its body is read or a
// buffer for it allocated.
func TestRangePastMaxIsNotRead(t *testing.T) {
	e := start(t)
	const limit = 1 << 20
	e.put(t, "tiles/a.pmtiles", bytes.Repeat([]byte{7}, 16*limit), "", "")
	c := e.client(origin.Config{Prefix: "tiles/", MaxObjectBytes: limit})
	if _, err := c.GetRange(context.Background(), "tiles/a.pmtiles", 0, limit, ""); err != nil {
		t.Fatalf("a range at the bound: %v", err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.GetRange(context.Background(), "tiles/a.pmtiles", 0, 16*limit, "")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, tile.ErrTooLarge) {
		t.Fatalf("got %v, want tile.ErrTooLarge", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit {
		t.Errorf("the refused range allocated %d bytes, want less than MaxObjectBytes (%d)", alloc, limit)
	}
}
