package purge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	tsevents "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/cdn"
	"github.com/tilesieve/tilesieve/shared/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/s3event"
	"github.com/tilesieve/tilesieve/shared/s3local"
)

type workerEnv struct {
	*env
	cf *cdntest.Server
	j  *Journal
	w  *Worker
}

func newWorkerEnv(t *testing.T, cfg WorkerConfig) *workerEnv {
	t.Helper()
	e := newEnv(t)
	cf := cdntest.New(t)
	if cfg.Bucket == "" {
		cfg.Bucket = testBucket
	}
	j := e.journal(JournalOptions{})
	inv := cdn.New(cf.Client(), cdn.Config{DistributionID: "E2QWRUHEXAMPLE", MaxAttempts: 3, BaseDelay: time.Millisecond}, nil)
	return &workerEnv{env: e, cf: cf, j: j, w: NewWorker(cfg, j, inv, nil)}
}

func (we *workerEnv) entries(t *testing.T) []Entry {
	t.Helper()
	s, err := we.j.Read(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s.Entries
}

func readFixture(t testing.TB, name string) json.RawMessage {
	t.Helper()
	b, err := fs.ReadFile(tsevents.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func failedIDs(t *testing.T, out any) []string {
	t.Helper()
	resp, ok := out.(events.SQSEventResponse)
	if !ok {
		t.Fatalf("got %T, want events.SQSEventResponse", out)
	}
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// TestWorkerFixtures: each sample event purges the right prefixes in the
// journal and at the CDN.
func TestWorkerFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		prefixes []string // nil: nothing to purge
		failed   []string // SQS only
	}{
		{"s3-put.json", []string{"c++/1/0/1.png", "café/地図/2/1/1.pbf", "city maps/3/4/5.png", "iiif/page=7/100%/0,0,512,512/full/0/default.jpg", "osm/12/2048/1361.png"}, nil},
		{"s3-delete.json", []string{"city maps/3/4/6.png", "osm/12/2048/1361.png"}, nil},
		{"s3-lifecycle.json", []string{"weather/radar/2025-03-08T00:00Z/5/16/10.png", "weather/radar/2025-03-08T00:00Z/5/16/11.png"}, nil},
		{"s3-test-event.json", nil, nil},
		{"sqs-s3.json", []string{"osm hd/5/16/10.png", "osm/5/16/10.png", "osm/5/16/11.png"}, []string{"3f8b1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b"}},
		{"eventbridge-created.json", []string{"city maps/c++/3/4/5.png"}, nil},
		{"eventbridge-deleted.json", []string{"café/100%/2/1/1.pbf"}, nil},
		{"s3-malformed.json", []string{"osm/1/0/0.png"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
			out, err := we.w.Handle(context.Background(), readFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tt.file, "sqs") {
				if got := failedIDs(t, out); !slices.Equal(got, tt.failed) {
					t.Errorf("failures: got %q, want %q", got, tt.failed)
				}
			} else if out != nil {
				t.Errorf("response: got %v, want nil", out)
			}
			got := we.entries(t)
			reqs := we.cf.Requests()
			if tt.prefixes == nil {
				if len(got) != 0 || len(reqs) != 0 {
					t.Errorf("purged %v, CDN %v; want nothing", got, reqs)
				}
				return
			}
			if len(got) != 1 || !slices.Equal(got[0].Prefixes, tt.prefixes) {
				t.Fatalf("journal: got %+v, want one entry %q", got, tt.prefixes)
			}
			if len(reqs) != 1 || !slices.Equal(reqs[0].Paths, cdn.Paths("", tt.prefixes)) {
				t.Errorf("CDN: got %+v, want one call for %q", reqs, tt.prefixes)
			}
		})
	}
}

func TestWorkerJournalFailure(t *testing.T) {
	t.Parallel()
	failPuts := s3local.Fault{Match: matchPath(http.MethodPut, "head.json"), Status: http.StatusInternalServerError}

	t.Run("sqs", func(t *testing.T) {
		t.Parallel()
		we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
		we.srv.Faults().Add(failPuts)
		out, err := we.w.Handle(context.Background(), readFixture(t, "sqs-s3.json"))
		if err != nil {
			t.Fatal(err)
		}
		// Every message with a change, and the malformed one, in batch
		// order; not the TestEvent.
		want := []string{
			"19dd0b57-b21e-4ac1-bd88-01bbb068cb78",
			"3f8b1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
			"4a9c2b3d-6e7f-4081-9bac-1d2e3f4a5b6c",
			"5bad3c4e-7f80-4192-acbd-2e3f4a5b6c7d",
		}
		if got := failedIDs(t, out); !slices.Equal(got, want) {
			t.Errorf("failures: got %q, want %q", got, want)
		}
		if len(we.cf.Requests()) != 0 {
			t.Error("CDN invalidated for an unrecorded purge")
		}
	})
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
		we.srv.Faults().Add(failPuts)
		if _, err := we.w.Handle(context.Background(), readFixture(t, "s3-put.json")); err == nil {
			t.Error("no error: Lambda would not retry")
		}
	})
	t.Run("eventbridge", func(t *testing.T) {
		t.Parallel()
		we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
		we.srv.Faults().Add(failPuts)
		if _, err := we.w.Handle(context.Background(), readFixture(t, "eventbridge-created.json")); err == nil {
			t.Error("no error: Lambda would not retry")
		}
	})
}

func TestWorkerCDNFailure(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
	we.cf.Fail(cdntest.TooMany, cdntest.TooMany, cdntest.TooMany)
	out, err := we.w.Handle(context.Background(), readFixture(t, "sqs-s3.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, out); len(got) != 4 {
		t.Errorf("failures: got %q, want the 4 messages with changes or problems", got)
	}
	// Recorded for the instances all the same.
	if n := len(we.entries(t)); n != 1 {
		t.Errorf("journal entries: %d", n)
	}
	// Redelivered: another (harmless) entry, and now the CDN.
	out, err = we.w.Handle(context.Background(), readFixture(t, "sqs-s3.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, out); len(got) != 1 {
		t.Errorf("failures after recovery: got %q", got)
	}
	if n := len(we.entries(t)); n != 2 {
		t.Errorf("journal entries: %d", n)
	}
}

// TestWorkerRedelivery: at-least-once delivery; a repeated batch reuses its
// CDN caller reference, so CloudFront makes (and charges) one invalidation.
func TestWorkerRedelivery(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
	for range 2 {
		if _, err := we.w.Handle(context.Background(), readFixture(t, "s3-put.json")); err != nil {
			t.Fatal(err)
		}
	}
	reqs := we.cf.Requests()
	if len(reqs) != 2 || reqs[0].CallerReference != reqs[1].CallerReference {
		t.Fatalf("CDN requests: %+v", reqs)
	}
	if we.cf.Invalidations() != 1 {
		t.Errorf("invalidations: got %d, want 1", we.cf.Invalidations())
	}
	// Another change to the same keys is another invalidation.
	if _, err := we.w.Handle(context.Background(), readFixture(t, "s3-delete.json")); err != nil {
		t.Fatal(err)
	}
	if we.cf.Invalidations() != 2 {
		t.Errorf("invalidations: got %d, want 2", we.cf.Invalidations())
	}
}

// TestWorkerStorm: 10,000 uploads under one tileset arrive as one SQS batch
// and become one journal entry and one CDN call of at most 15 paths.
func TestWorkerStorm(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
	r := rand.New(rand.NewPCG(7, 8))
	keys := map[string]bool{}
	var msgs []events.SQSMessage
	for i := 0; len(keys) < 10000; i++ {
		z := 8 + r.IntN(10)
		key := fmt.Sprintf("osm/%d/%d/%d.png", z, r.IntN(1<<z), r.IntN(1<<z))
		if keys[key] {
			continue
		}
		keys[key] = true
		body := fmt.Sprintf(`{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"tiles"},"object":{"key":"tiles/%s","size":100,"sequencer":"%018X"}}}]}`, key, i)
		msgs = append(msgs, events.SQSMessage{MessageId: fmt.Sprintf("m-%05d", i), Body: body, EventSource: "aws:sqs"})
	}
	raw, err := json.Marshal(events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatal(err)
	}
	out, err := we.w.Handle(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, out); len(got) != 0 {
		t.Fatalf("failures: %d", len(got))
	}
	entries := we.entries(t)
	if len(entries) != 1 {
		t.Fatalf("journal entries: got %d, want 1", len(entries))
	}
	prefixes := entries[0].Prefixes
	if len(prefixes) == 0 || len(prefixes) > 15 {
		t.Fatalf("prefixes: got %d", len(prefixes))
	}
	for k := range keys {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			t.Fatalf("key %s not covered by %q", k, prefixes)
		}
	}
	reqs := we.cf.Requests()
	if len(reqs) != 1 || len(reqs[0].Paths) > 15 || !slices.Equal(reqs[0].Paths, cdn.Paths("", prefixes)) {
		t.Fatalf("CDN: got %+v", reqs)
	}
	t.Logf("10,000 keys → %q", reqs[0].Paths)
}

// TestWorkerIgnoresOwnJournal: with TILES_PREFIX "" the journal's own objects
// are inside it; they must not trigger a purge (which would append again).
func TestWorkerIgnoresOwnJournal(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: ""})
	if _, err := we.w.Handle(context.Background(), readFixture(t, "s3-put.json")); err != nil {
		t.Fatal(err)
	}
	got := we.entries(t)
	if len(got) != 1 {
		t.Fatalf("entries: %+v", got)
	}
	for _, p := range got[0].Prefixes {
		if strings.HasPrefix(p, testJournalPrefix) {
			t.Errorf("purged the journal's own key %q", p)
		}
	}
	if !slices.Contains(got[0].Prefixes, "uploads/raw/scan 0001.tif") {
		t.Errorf("prefixes: %q", got[0].Prefixes)
	}
}

func TestWorkerOtherBucketAndStale(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{Bucket: "other", TilesPrefix: "tiles/"})
	if _, err := we.w.Handle(context.Background(), readFixture(t, "s3-put.json")); err != nil {
		t.Fatal(err)
	}
	if got := we.entries(t); len(got) != 0 {
		t.Errorf("purged another bucket's keys: %+v", got)
	}
	we = newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
	b, err := s3event.Decode(readFixture(t, "sqs-s3.json"))
	if err != nil {
		t.Fatal(err)
	}
	res := we.w.Process(context.Background(), b)
	if res.Stale != 2 || res.Relevant != 5 || res.Seq != 1 {
		t.Errorf("result: %+v", res)
	}
}

func TestWorkerUnrecognised(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"})
	if _, err := we.w.Handle(context.Background(), json.RawMessage(`{"hello":"world"}`)); !errors.Is(err, s3event.ErrUnrecognized) {
		t.Errorf("got %v, want ErrUnrecognized", err)
	}
}

func TestWorkerSettleDelay(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/", SettleDelay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := we.w.Handle(ctx, readFixture(t, "s3-put.json")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the deadline", err)
	}
	if n := len(we.entries(t)); n != 1 {
		t.Errorf("journal entries: %d (recorded before waiting)", n)
	}
	if n := len(we.cf.Requests()); n != 0 {
		t.Errorf("CDN called before the settle delay")
	}
	// No distribution: no wait at all.
	e := newEnv(t)
	var none *cdn.Invalidator
	w := NewWorker(WorkerConfig{Bucket: testBucket, TilesPrefix: "tiles/", SettleDelay: time.Hour}, e.journal(JournalOptions{}), none, nil)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if _, err := w.Handle(ctx2, readFixture(t, "s3-put.json")); err != nil {
		t.Errorf("without CDN: %v", err)
	}
}

func TestWorkerConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (WorkerConfig{Bucket: "tiles", TilesPrefix: "tiles/"}).Validate(); err != nil {
		t.Error(err)
	}
	err := WorkerConfig{TilesPrefix: "tiles", SettleDelay: -1}.Validate()
	if err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("got %v, want three problems", err)
	}
}
