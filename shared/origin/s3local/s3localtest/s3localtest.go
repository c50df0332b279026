// Package s3localtest serves an s3local endpoint over HTTP for one test, so
// that tests speak to S3 through the SDK with SigV4, as in production.
package s3localtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
)

// Endpoint is an s3local server listening on a loopback port.
type Endpoint struct {
	*s3local.Server
	URL    string     // the endpoint's base URL, for AWS_ENDPOINT_URL
	Client *s3.Client // an SDK client signed with the endpoint's credentials
}

// Start serves a new s3local server holding buckets until the test ends.
func Start(tb testing.TB, buckets ...string) *Endpoint {
	tb.Helper()
	return StartConfig(tb, s3local.Config{Buckets: buckets})
}

// StartConfig serves a new s3local server configured by cfg until the test
// ends.
func StartConfig(tb testing.TB, cfg s3local.Config) *Endpoint {
	tb.Helper()
	return StartBehind(tb, cfg, nil)
}

// StartBehind is StartConfig with the endpoint served by front(the server's
// handler): a test's check, count or fault in front of S3. A nil front
// serves the handler itself.
func StartBehind(tb testing.TB, cfg s3local.Config, front func(http.Handler) http.Handler) *Endpoint {
	tb.Helper()
	srv, err := s3local.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	h := srv.Handler()
	if front != nil {
		h = front(h)
	}
	hs := httptest.NewServer(h)
	tb.Cleanup(hs.Close)
	return &Endpoint{Server: srv, URL: hs.URL, Client: srv.Client(hs.URL)}
}

// Put stores body at bucket/key through c, as s3local.Put does, and returns
// its ETag; a failed put fails the test.
func Put(tb testing.TB, c *s3.Client, bucket, key string, body []byte, contentType, contentEncoding string) (etag string) {
	tb.Helper()
	etag, err := s3local.Put(context.Background(), c, bucket, key, body, contentType, contentEncoding)
	if err != nil {
		tb.Fatal(err)
	}
	return etag
}

// IsolateEnv sets the environment, until the test ends, so that the SDK's
// default chain reads nothing of the machine's: no profile or session token,
// no config or credentials file, no instance metadata. The test then sets
// what it means the SDK to see (EnvCredentials, AWS_REGION, ...).
func IsolateEnv(tb testing.TB) {
	tb.Helper()
	none := filepath.Join(tb.TempDir(), "none")
	tb.Setenv("AWS_SESSION_TOKEN", "")
	tb.Setenv("AWS_PROFILE", "")
	tb.Setenv("AWS_CONFIG_FILE", none)
	tb.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	tb.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// EnvCredentials sets s3local's access key and secret as the environment's
// credentials until the test ends.
func EnvCredentials(tb testing.TB) {
	tb.Helper()
	tb.Setenv("AWS_ACCESS_KEY_ID", s3local.DefaultAccessKey)
	tb.Setenv("AWS_SECRET_ACCESS_KEY", s3local.DefaultSecretKey)
}

// RequesterPays is a front (StartBehind) that refuses with 403 AccessDenied
// every read (GET, HEAD) of bucket that does not accept the charge
// (x-amz-request-payer: requester), as S3 refuses another account's reads of
// a requester-pays bucket. refused, when not nil, counts the refusals.
func RequesterPays(bucket string, refused *atomic.Int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			if b == bucket && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.Header.Get("X-Amz-Request-Payer") != "requester" {
				if refused != nil {
					refused.Add(1)
				}
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusForbidden)
				w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// RequestLog counts and keeps the requests that reach an endpoint, in front
// of it (StartBehind(tb, cfg, log.Counting)). It is safe for concurrent use.
type RequestLog struct {
	mu   sync.Mutex // guards seen
	seen []string   // "METHOD path"
	n    atomic.Int64
}

// Counting serves h, logging every request first.
func (l *RequestLog) Counting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.n.Add(1)
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// Since returns the requests after the first n, as "METHOD path".
func (l *RequestLog) Since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen[n:]...)
}

// Count is the number of requests so far.
func (l *RequestLog) Count() int { return int(l.n.Load()) }
