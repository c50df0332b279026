package journal

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
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
	reqs *s3localtest.RequestLog
}

func newEnv(t *testing.T) *env {
	t.Helper()
	log := &s3localtest.RequestLog{}
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{testBucket}}, log.Counting)
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

func matchPath(method, substr string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && strings.Contains(r.URL.Path, substr)
	}
}
