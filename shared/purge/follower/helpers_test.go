package follower

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
)

const (
	testBucket        = "tiles"
	testJournalPrefix = "_tilesieve/journal/"
)

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

func (e *env) journal(opts journal.Options) *journal.Journal {
	return journal.New(e.api, testBucket, testJournalPrefix, opts)
}

func (e *env) deleteHead(t *testing.T) {
	t.Helper()
	if _, err := e.api.DeleteObject(context.Background(), &s3.DeleteObjectInput{
		Bucket: aws.String(testBucket), Key: aws.String(testJournalPrefix + "head.json"),
	}); err != nil {
		t.Fatal(err)
	}
}

func appendN(t *testing.T, j *journal.Journal, n int, format string) {
	t.Helper()
	for i := range n {
		if _, err := j.Append(context.Background(), []string{fmt.Sprintf(format, i)}, "test"); err != nil {
			t.Fatal(err)
		}
	}
}

// read reads the whole head.
func read(t *testing.T, j *journal.Journal) journal.Snapshot {
	t.Helper()
	s, err := j.Read(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tempPosition is a position file of the test's own, not yet written.
func tempPosition(t *testing.T) journal.PositionFile {
	return journal.PositionFile{Path: filepath.Join(t.TempDir(), journal.PositionFileName)}
}

// clock is the settable clock of one test.
type clock = fakeclock.Clock

func newClock() *clock { return fakeclock.New(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)) }

// recorder is a Target that records what it was told and drops no keys;
// fail makes its purges report files left behind, as a read-only disk would.
type recorder struct {
	mu   sync.Mutex // guards ops and fail
	ops  []string
	fail bool
}

func (r *recorder) Purge(p string) (int, error) { return 0, r.purge(p) }

func (r *recorder) purge(p string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p == "" {
		r.ops = append(r.ops, "all")
	} else {
		r.ops = append(r.ops, "prefix "+p)
	}
	if r.fail {
		return errors.New("files left behind")
	}
	return nil
}

func (r *recorder) setFail(fail bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = fail
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

func matchPath(method, substr string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && strings.Contains(r.URL.Path, substr)
	}
}
