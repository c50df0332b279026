package journal

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

const testBucket = "tiles"

// env is an in-process S3 endpoint reached over HTTP by the real SDK.
type env struct {
	srv  *s3local.Server
	api  *s3.Client
	reqs *requestLog
}

// requestLog counts the requests that reach the endpoint.
type requestLog struct {
	mu   sync.Mutex // guards seen
	seen []string   // "METHOD path"
	n    atomic.Int64
}

func (l *requestLog) add(r *http.Request) {
	l.n.Add(1)
	l.mu.Lock()
	l.seen = append(l.seen, r.Method+" "+r.URL.Path)
	l.mu.Unlock()
}

// since returns the requests after the first n.
func (l *requestLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen[n:]...)
}

func (l *requestLog) count() int { return int(l.n.Load()) }

func newEnv(t *testing.T) *env {
	t.Helper()
	log := &requestLog{}
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{testBucket}}, log.counting)
	return &env{srv: ep.Server, api: ep.Client, reqs: log}
}

// appendConcurrently runs writers writers, each with a Journal of its own
// (as if in a process of its own), each appending each entries of one prefix
// ("wW/I/"); fn sees every append's outcome, from the writer's goroutine.
func (e *env) appendConcurrently(writers, each int, fn func(prefix string, en Entry, err error)) {
	var wg sync.WaitGroup
	for w := range writers {
		j := e.journal(Options{})
		wg.Go(func() {
			for i := range each {
				p := fmt.Sprintf("w%d/%d/", w, i)
				en, err := j.Append(context.Background(), []string{p}, "test")
				fn(p, en, err)
			}
		})
	}
	wg.Wait()
}

// counting serves h, logging every request first.
func (l *requestLog) counting(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.add(r)
		h.ServeHTTP(w, r)
	})
}

func matchPath(method, substr string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && strings.Contains(r.URL.Path, substr)
	}
}
