package purge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
)

// The bucket and journal of the worker tests (those of the fixtures).
const (
	workerBucket  = "tiles"
	workerJournal = "_tilesieve/journal/"
	workerDist    = "E2QWRUHEXAMPLE"
)

// workerEnv is a worker against a local S3 endpoint and the CloudFront
// stand-in, both reached over HTTP by the real SDK.
type workerEnv struct {
	s3 *s3localtest.Endpoint
	cf *cdntest.Server
	j  *journal.Journal
	w  testWorker
}

type workerOpts struct {
	cdn    cloudfront.Config // DistributionID, MaxAttempts and BaseDelay get test defaults
	cf     cdntest.Options   // the stand-in's
	settle time.Duration     // the Purger's SettleDelay
	// sleep is the CDN's and the Purger's wait; settleSleep, when set, the
	// Purger's alone.
	sleep       func(context.Context, time.Duration) error
	settleSleep func(context.Context, time.Duration) error
	log         *slog.Logger // of the worker, its journal and its CDN client; nil discards
}

// testWorker handles raw events as the worker's Lambda edge does: SQS
// batches report their failures in Result.Failed and no error, other
// sources return the purge's error.
type testWorker struct{ *Worker }

func (w testWorker) Handle(ctx context.Context, raw []byte) (Result, error) {
	defer w.Flush(ctx)
	b, err := s3event.Decode(raw)
	if err != nil {
		return Result{}, err
	}
	res := w.Process(ctx, b)
	if b.Source == s3event.SourceSQS {
		return res, nil
	}
	return res, res.Err
}

func newWorkerEnv(t *testing.T, cfg WorkerConfig, o workerOpts) *workerEnv {
	t.Helper()
	s3e := s3localtest.Start(t, workerBucket)
	cf := cdntest.NewWithOptions(t, o.cf)
	if cfg.Bucket == "" {
		cfg.Bucket = workerBucket
	}
	j := journal.New(s3e.Client, workerBucket, workerJournal, journal.Options{Logger: o.log})
	c := o.cdn
	c.DistributionID = workerDist
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.BaseDelay == 0 {
		c.BaseDelay = time.Millisecond
	}
	if c.Sleep == nil {
		c.Sleep = o.sleep
	}
	inv := cloudfront.New(cf.Client(), c, o.log)
	ps := o.settleSleep
	if ps == nil {
		ps = o.sleep
	}
	p := NewPurger(j, PurgerConfig{Coalesce: cfg.Coalesce, SettleDelay: o.settle, CDN: inv, Sleep: ps, Metrics: cfg.Metrics, Now: cfg.Now}, o.log)
	return &workerEnv{s3: s3e, cf: cf, j: j, w: testWorker{NewWorker(cfg, p, o.log)}}
}

// head is the journal's latest sequence number: the number of entries.
func (we *workerEnv) head(t *testing.T) uint64 {
	t.Helper()
	seq, err := we.j.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// failJournalWrites makes every PUT under the journal prefix fail.
func (we *workerEnv) failJournalWrites() {
	we.s3.Faults().Add(s3local.Fault{Match: matchPath(http.MethodPut, "/"+workerJournal), Status: http.StatusInternalServerError})
}

func matchPath(method, substr string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == method && strings.Contains(r.URL.Path, substr)
	}
}

// fakeSleep moves a fake clock instead of waiting.
type fakeSleep struct {
	clock *fakeclock.Clock
	mu    sync.Mutex // guards waits
	waits []time.Duration
}

func (s *fakeSleep) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	s.clock.Advance(d)
	return nil
}

func newFakeSleep() *fakeSleep {
	return &fakeSleep{clock: fakeclock.New(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))}
}

func decodeFixture(t testing.TB, name string) s3event.Batch {
	t.Helper()
	b, err := s3event.Decode(fixtures.Read(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handle has the worker handle the event in fixture, as Lambda would call
// it, and returns the IDs of the messages it reported failed; an error
// fails the test.
func (we *workerEnv) handle(t *testing.T, fixture string) []string {
	t.Helper()
	out, err := we.w.Handle(context.Background(), fixtures.Read(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	return failedIDs(t, out)
}

func failedIDs(t *testing.T, out Result) []string {
	t.Helper()
	return append([]string{}, out.Failed...)
}

// The sqs-s3.json batch: what it purges and which of its messages carry a
// change to a tile or are malformed, in batch order.
var (
	sqsFixturePrefixes = []string{
		"c++/1/0/1.png", "café/地図/2/1/1.pbf", "city maps/3/4/6.png",
		"iiif/page=7/100%/0,0,512,512/full/0/default.jpg", "osm hd/5/16/10.png", "osm/12/2048/1361.png",
		"osm/5/16/10.png", "osm/5/16/11.png", "weather/radar/2025-03-08T00:00Z/5/16/10.png",
	}
	sqsFixtureMalformed   = []string{"3f8b1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "d375fb46-f708-491a-a435-a0b1c2d3e4f5"}
	sqsFixtureWithChanges = []string{
		"19dd0b57-b21e-4ac1-bd88-01bbb068cb78", "3f8b1a2c-5d6e-4f70-8a9b-0c1d2e3f4a5b", "4a9c2b3d-6e7f-4081-9bac-1d2e3f4a5b6c",
		"5bad3c4e-7f80-4192-acbd-2e3f4a5b6c7d", "6c0e4d5f-8091-42a3-bdce-3f4a5b6c7d8e", "7d1f5e60-91a2-43b4-8edf-4a5b6c7d8e9f",
		"8e20a6f1-a2b3-44c5-9fe0-5b6c7d8e9fa0", "9f31b702-b3c4-45d6-a0f1-6c7d8e9fa0b1", "a042c813-c4d5-46e7-b102-7d8e9fa0b1c2",
		"d375fb46-f708-491a-a435-a0b1c2d3e4f5", "e486a057-0819-4a2b-b546-b1c2d3e4f506", "f597b168-192a-4b3c-8657-c2d3e4f50617",
		"06a8c279-2a3b-4c4d-9768-d3e4f5061728",
	}
)

// TestWorkerFixtures: each sample event purges the right prefixes in the
// journal and at the CDN, single keys as exact paths.
func TestWorkerFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file     string
		prefixes []string // nil: nothing to purge
		paths    []string
		failed   []string // SQS only
	}{
		{"s3-put.json", []string{"city maps/c++/100%/3/4/5.png"}, []string{"/city%20maps/c++/100%25/3/4/5.png"}, nil},
		{"s3-delete.json", []string{"osm/12/2048/1361.png"}, []string{"/osm/12/2048/1361.png"}, nil},
		{"s3-delete-marker.json", []string{"city maps/3/4/6.png"}, []string{"/city%20maps/3/4/6.png"}, nil},
		{"s3-lifecycle.json", []string{"weather/radar/2025-03-08T00:00Z/5/16/10.png"}, []string{"/weather/radar/2025-03-08T00:00Z/5/16/10.png"}, nil},
		{"s3-lifecycle-transition.json", nil, nil, nil},
		{"s3-test-event.json", nil, nil, nil},
		{"s3-malformed.json", nil, nil, nil},
		{"sqs-s3.json", sqsFixturePrefixes, cdn.Paths("", sqsFixturePrefixes), sqsFixtureMalformed},
		{"eventbridge-created.json", []string{"city maps/c++/3/4/5.png"}, []string{"/city%20maps/c++/3/4/5.png"}, nil},
		{"eventbridge-deleted.json", []string{"café/100%/2/1/1.pbf"}, []string{"/caf%C3%A9/100%25/2/1/1.pbf"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
			res := we.w.Process(context.Background(), decodeFixture(t, tt.file))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if !slices.Equal(res.Prefixes, tt.prefixes) && len(res.Prefixes)+len(tt.prefixes) > 0 {
				t.Errorf("prefixes: got %q, want %q", res.Prefixes, tt.prefixes)
			}
			if !slices.Equal(res.Failed, tt.failed) {
				t.Errorf("failures: got %q, want %q", res.Failed, tt.failed)
			}
			reqs := we.cf.Requests()
			if tt.prefixes == nil {
				if n := we.head(t); n != 0 || len(reqs) != 0 {
					t.Errorf("journal head %d, CDN %v; want nothing", n, reqs)
				}
				return
			}
			if n := we.head(t); n != 1 || res.Seq != n {
				t.Errorf("journal head %d, entry %d: want one entry", n, res.Seq)
			}
			if len(reqs) != 1 || !slices.Equal(reqs[0].Paths, tt.paths) {
				t.Errorf("CDN: got %+v, want one call for %q", reqs, tt.paths)
			}
		})
	}
}

// TestWorkerHandleResponses: what Lambda gets back for each kind of event.
func TestWorkerHandleResponses(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	if got := we.handle(t, "sqs-s3.json"); !slices.Equal(got, sqsFixtureMalformed) {
		t.Errorf("SQS failures: got %q, want %q", got, sqsFixtureMalformed)
	}
	for _, f := range []string{"s3-put.json", "eventbridge-created.json", "s3-malformed.json", "s3-test-event.json"} {
		if out, err := we.w.Handle(context.Background(), fixtures.Read(t, f)); len(out.Failed) != 0 || err != nil {
			t.Errorf("%s: got failures %q, %v; want none, nil", f, out.Failed, err)
		}
	}
}

func TestWorkerJournalFailure(t *testing.T) {
	t.Parallel()
	t.Run("sqs", func(t *testing.T) {
		t.Parallel()
		we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
		we.failJournalWrites()
		// Every message with a change, and the malformed ones, in batch
		// order; not the TestEvent nor the keys outside the tiles.
		if got := we.handle(t, "sqs-s3.json"); !slices.Equal(got, sqsFixtureWithChanges) {
			t.Errorf("failures: got %q, want %q", got, sqsFixtureWithChanges)
		}
		if len(we.cf.Requests()) != 0 {
			t.Error("CDN invalidated for an unrecorded purge")
		}
	})
	for _, f := range []string{"s3-put.json", "eventbridge-created.json"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
			we.failJournalWrites()
			if _, err := we.w.Handle(context.Background(), fixtures.Read(t, f)); err == nil {
				t.Error("no error: Lambda would not retry")
			}
		})
	}
}

func TestWorkerCDNFailure(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	we.cf.Fail(cdntest.TooMany, cdntest.TooMany, cdntest.TooMany)
	if got := we.handle(t, "sqs-s3.json"); !slices.Equal(got, sqsFixtureWithChanges) {
		t.Errorf("failures: got %q, want the messages with changes or problems", got)
	}
	// Recorded for the instances all the same.
	if n := we.head(t); n != 1 {
		t.Errorf("journal entries: %d", n)
	}
	// Redelivered: another (harmless) entry, and now the CDN.
	if got := we.handle(t, "sqs-s3.json"); !slices.Equal(got, sqsFixtureMalformed) {
		t.Errorf("failures after recovery: got %q", got)
	}
	if n := we.head(t); n != 2 {
		t.Errorf("journal entries: %d", n)
	}
}

// TestWorkerRedelivery: at-least-once delivery; a repeated batch reuses its
// CDN caller reference, so CloudFront makes (and charges) one invalidation.
func TestWorkerRedelivery(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	for range 2 {
		we.handle(t, "sqs-s3.json")
	}
	reqs := we.cf.Requests()
	if len(reqs) != 2 || reqs[0].CallerReference != reqs[1].CallerReference {
		t.Fatalf("CDN requests: %+v", reqs)
	}
	if we.cf.Invalidations() != 1 {
		t.Errorf("invalidations: got %d, want 1", we.cf.Invalidations())
	}
	// Another change to the same keys is another invalidation.
	we.handle(t, "s3-delete.json")
	if we.cf.Invalidations() != 2 {
		t.Errorf("invalidations: got %d, want 2", we.cf.Invalidations())
	}
}

// sqsBatch builds an SQS event of single-record S3 notifications, one per
// key, as S3 → SQS → the event source mapping delivers them.
func sqsBatch(t testing.TB, event string, keys []string, seq0 int) json.RawMessage {
	t.Helper()
	seqs := make([]int, len(keys))
	for i := range seqs {
		seqs[i] = seq0 + i
	}
	return sqsBatchOf(t, event, keys, seqs)
}

// sqsBatchOf is sqsBatch with a sequence number per key, which names its
// message ("m-" and seven digits) and gives its S3 sequencer.
func sqsBatchOf(t testing.TB, event string, keys []string, seqs []int) json.RawMessage {
	t.Helper()
	msgs := make([]events.SQSMessage, 0, len(keys))
	for i, key := range keys {
		body, err := json.Marshal(map[string]any{"Records": []any{map[string]any{
			"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "eu-west-1", "eventName": event,
			"s3": map[string]any{
				"bucket": map[string]any{"name": workerBucket, "arn": "arn:aws:s3:::" + workerBucket},
				"object": map[string]any{"key": "tiles/" + key, "size": 100, "sequencer": fmt.Sprintf("%018X", seqs[i])},
			},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, events.SQSMessage{
			MessageId: fmt.Sprintf("m-%07d", seqs[i]), Body: string(body), EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:eu-west-1:111122223333:tilesieve-tile-events", AWSRegion: "eu-west-1",
		})
	}
	raw, err := json.Marshal(events.SQSEvent{Records: msgs})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestWorkerStorm: 10,000 uploads under one tileset in one SQS batch become
// one journal entry and one CDN call of at most 15 paths.
func TestWorkerStorm(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	r := rand.New(rand.NewPCG(7, 8))
	keys := map[string]bool{}
	var list []string
	for len(keys) < 10000 {
		z := 8 + r.IntN(10)
		key := fmt.Sprintf("osm/%d/%d/%d.png", z, r.IntN(1<<z), r.IntN(1<<z))
		if !keys[key] {
			keys[key] = true
			list = append(list, key)
		}
	}
	out, err := we.w.Handle(context.Background(), sqsBatch(t, "ObjectCreated:Put", list, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, out); len(got) != 0 {
		t.Fatalf("failures: %d", len(got))
	}
	if n := we.head(t); n != 1 {
		t.Fatalf("journal entries: got %d, want 1", n)
	}
	reqs := we.cf.Requests()
	if len(reqs) != 1 || len(reqs[0].Paths) == 0 || len(reqs[0].Paths) > 15 {
		t.Fatalf("CDN: got %+v", reqs)
	}
	for k := range keys {
		if !slices.ContainsFunc(reqs[0].Paths, func(p string) bool {
			return p == "/"+k || strings.HasSuffix(p, "*") && strings.HasPrefix("/"+k, strings.TrimSuffix(p, "*"))
		}) {
			t.Fatalf("key %s not covered by %q", k, reqs[0].Paths)
		}
	}
	t.Logf("10,000 keys → %q", reqs[0].Paths)
}

// TestWorkerExactAndWildcardPaths: a crowded directory is one wildcard, a
// lone key an exact path (which does not use up the 15 wildcards).
func TestWorkerExactAndWildcardPaths(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("osm/12/2048/%d.png", i))
	}
	keys = append(keys, "sat/3/1/1.jpg", "sat/9/4/4.jpg")
	res := we.w.Process(context.Background(), decodeSQS(t, sqsBatch(t, "ObjectCreated:Put", keys, 0)))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []string{"/osm/12/2048/*", "/sat/3/1/1.jpg", "/sat/9/4/4.jpg"}
	if !slices.Equal(res.Paths, want) {
		t.Errorf("paths: got %q, want %q", res.Paths, want)
	}
	if got := we.cf.InProgress(); got.Wildcard > 1 {
		t.Errorf("in progress %+v, want at most the one wildcard", got)
	}
}

func decodeSQS(t testing.TB, raw json.RawMessage) s3event.Batch {
	t.Helper()
	b, err := s3event.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirKeys makes one key in each of n directories under tileset, so that
// (with Cap n) a batch of them is n exact keys, and coalesced upward it
// climbs to directories.
func dirKeys(tileset string, n int) []string {
	var keys []string
	for i := range n {
		for j := range 9 { // past the threshold: each directory becomes a wildcard
			keys = append(keys, fmt.Sprintf("%s/%d/%d/%d.png", tileset, i, i, j))
		}
	}
	return keys
}

// TestWorkerCDNBudgetAcrossInvocations: wildcards still in progress from an
// earlier invocation count. The next batch is coalesced upward to fit in
// what is left; when nothing is left the worker waits within its deadline,
// then fails the batch, and the redelivered batch goes through once the
// earlier invalidations have completed.
func TestWorkerCDNBudgetAcrossInvocations(t *testing.T) {
	t.Parallel()
	sl := newFakeSleep()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{
		cf:    cdntest.Options{Manual: true},
		cdn:   cloudfront.Config{BudgetWait: 30 * time.Second},
		sleep: sl.Sleep,
	})
	ctx := context.Background()

	first := we.w.Process(ctx, decodeSQS(t, sqsBatch(t, "ObjectCreated:Put", dirKeys("a", 14), 0)))
	if first.Err != nil || len(first.Paths) != 14 {
		t.Fatalf("first batch: %v, paths %q, want 14 wildcards", first.Err, first.Paths)
	}
	second := we.w.Process(ctx, decodeSQS(t, sqsBatch(t, "ObjectCreated:Put", dirKeys("b", 6), 1000)))
	if second.Err != nil {
		t.Fatal(second.Err)
	}
	if len(second.Prefixes) != 6 || !slices.Equal(second.Paths, []string{"/b/*"}) {
		t.Errorf("second batch: prefixes %q, paths %q: want 6 recorded, coalesced to the one wildcard left", second.Prefixes, second.Paths)
	}
	if got := we.cf.InProgress(); got.Wildcard > 15 {
		t.Errorf("in progress %+v", got)
	}

	raw := sqsBatch(t, "ObjectCreated:Put", dirKeys("c", 2), 2000)
	out, err := we.w.Handle(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, out); len(got) != 18 {
		t.Errorf("third batch, no budget left: %d failures, want all 18 messages back to the queue", len(got))
	}
	if len(sl.waits) == 0 {
		t.Error("gave up without waiting")
	}
	we.cf.CompleteAll()
	out, err = we.w.Handle(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(t, out); len(got) != 0 {
		t.Errorf("redelivered after completion: failures %q", got)
	}
	if we.cf.Refused() != 0 {
		t.Errorf("CloudFront refused %d invalidations: the worker misjudged the budget", we.cf.Refused())
	}
	if p := we.cf.Peak(); p.Wildcard > cdntest.MaxWildcardPaths {
		t.Errorf("peak %+v", p)
	}
}

// TestWorkerIgnoresOwnJournal: with TILES_PREFIX "" the journal's own objects
// are inside it; they must not trigger a purge (which would append again).
func TestWorkerIgnoresOwnJournal(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: ""}, workerOpts{})
	res := we.w.Process(context.Background(), decodeFixture(t, "sqs-s3.json"))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, p := range res.Prefixes {
		if strings.HasPrefix(p, workerJournal) || strings.HasPrefix(workerJournal, p) {
			t.Errorf("purged the journal's own key with %q", p)
		}
	}
	if !slices.Contains(res.Prefixes, "uploads/raw/scan 0001.tif") {
		t.Errorf("prefixes: %q", res.Prefixes)
	}
}

func TestWorkerOtherBucketAndStale(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{Bucket: "other", TilesPrefix: "tiles/"}, workerOpts{})
	we.handle(t, "sqs-s3.json")
	if n := we.head(t); n != 0 {
		t.Errorf("purged another bucket's keys: %d entries", n)
	}
	we = newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	res := we.w.Process(context.Background(), decodeFixture(t, "sqs-s3.json"))
	if res.Stale != 2 || res.Relevant != 11 || res.Seq == 0 || res.Seq != we.head(t) {
		t.Errorf("result: %+v", res)
	}
}

func TestWorkerUnrecognised(t *testing.T) {
	t.Parallel()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	if _, err := we.w.Handle(context.Background(), json.RawMessage(`{"hello":"world"}`)); !errors.Is(err, s3event.ErrUnrecognized) {
		t.Errorf("got %v, want ErrUnrecognized", err)
	}
}

// TestWorkerSettleDelay: the journal entry is written before the settle wait
// and the CDN is called only after it; a wait cut short (the invocation's
// deadline) fails the batch. The wait is injected, so nothing here depends
// on how long an append takes.
func TestWorkerSettleDelay(t *testing.T) {
	t.Parallel()
	var we *workerEnv
	var during struct {
		head  uint64
		cdn   int
		asked time.Duration
	}
	cut := func(ctx context.Context, d time.Duration) error {
		seq, err := we.j.Head(ctx)
		if err != nil {
			return err
		}
		during.head, during.cdn, during.asked = seq, len(we.cf.Requests()), d
		return context.DeadlineExceeded
	}
	we = newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{settle: time.Hour, settleSleep: cut})
	if _, err := we.w.Handle(context.Background(), fixtures.Read(t, "s3-put.json")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want the deadline", err)
	}
	if during.head != 1 || during.cdn != 0 || during.asked != time.Hour {
		t.Errorf("during the wait: journal head %d, CDN calls %d, wait %v; want 1, 0, 1h", during.head, during.cdn, during.asked)
	}
	if n := len(we.cf.Requests()); n != 0 {
		t.Errorf("CDN called after a cut-short settle delay")
	}

	// A wait that runs out: the CDN follows.
	sl := newFakeSleep()
	we2 := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{settle: time.Hour, sleep: sl.Sleep})
	we2.handle(t, "s3-put.json")
	if len(sl.waits) != 1 || sl.waits[0] != time.Hour || len(we2.cf.Requests()) != 1 {
		t.Errorf("waits %v, CDN calls %d: want one wait of 1h, then the CDN", sl.waits, len(we2.cf.Requests()))
	}

	// No distribution: no wait at all.
	s3e := s3localtest.Start(t, workerBucket)
	var none *cloudfront.Invalidator
	never := func(context.Context, time.Duration) error { t.Error("waited without a CDN"); return nil }
	p := NewPurger(journal.New(s3e.Client, workerBucket, workerJournal, journal.Options{}), PurgerConfig{SettleDelay: time.Hour, Sleep: never, CDN: none}, nil)
	w := testWorker{NewWorker(WorkerConfig{Bucket: workerBucket, TilesPrefix: "tiles/"}, p, nil)}
	if _, err := w.Handle(context.Background(), fixtures.Read(t, "s3-put.json")); err != nil {
		t.Errorf("without CDN: %v", err)
	}
}

func TestWorkerConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (WorkerConfig{Bucket: "tiles", TilesPrefix: "tiles/"}).Validate(); err != nil {
		t.Error(err)
	}
	err := WorkerConfig{TilesPrefix: "tiles"}.Validate()
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("got %v, want two problems", err)
	}
	if err := (PurgerConfig{SettleDelay: -1}).Validate(); err == nil {
		t.Error("a negative settle delay passed")
	}
}

// processOne has a worker process one S3 event of key, and checks the
// prefixes it purged and the CDN paths it invalidated.
func processOne(t *testing.T, event, key string, prefixes, paths []string) (*workerEnv, Result) {
	t.Helper()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{})
	res := we.w.Process(context.Background(), decodeSQS(t, sqsBatch(t, event, []string{key}, 0)))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if !slices.Equal(res.Prefixes, prefixes) {
		t.Errorf("prefixes: got %q, want %q", res.Prefixes, prefixes)
	}
	if !slices.Equal(res.Paths, paths) {
		t.Errorf("CDN paths: got %q, want %q", res.Paths, paths)
	}
	return we, res
}

// TestWorkerPurgesDerivedNames: a change of one key purges, in the journal
// and on the CDN, what is served from it under other names. An upload or a
// deletion of NAME.pmtiles or NAME.mbtiles purges the tileset NAME/ and its
// TileJSON NAME.json; a change of NAME/metadata.json purges NAME.json; a
// change of one font's glyph range purges its font directory, so the font
// stacks composed with that font (DIR/A,FONT/…) are purged with it.
func TestWorkerPurgesDerivedNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		event, key string
		prefixes   []string
		paths      []string
	}{
		{"ObjectCreated:Put", "osm.pmtiles", []string{"osm.json", "osm.pmtiles", "osm/"}, []string{"/osm.json", "/osm.pmtiles", "/osm/*"}},
		{"ObjectRemoved:Delete", "osm.pmtiles", []string{"osm.json", "osm.pmtiles", "osm/"}, []string{"/osm.json", "/osm.pmtiles", "/osm/*"}},
		{"ObjectCreated:Put", "topo.mbtiles", []string{"topo.json", "topo.mbtiles", "topo/"}, []string{"/topo.json", "/topo.mbtiles", "/topo/*"}},
		{"ObjectRemoved:Delete", "topo.mbtiles", []string{"topo.json", "topo.mbtiles", "topo/"}, []string{"/topo.json", "/topo.mbtiles", "/topo/*"}},
		{"ObjectCreated:Put", "sat/metadata.json", []string{"sat.json", "sat/metadata.json"}, []string{"/sat.json", "/sat/metadata.json"}},
		{"ObjectCreated:Put", "deep/a.pmtiles", []string{"deep/a.pmtiles"}, []string{"/deep/a.pmtiles"}},
		{"ObjectCreated:Put", "fonts/Noto Sans Regular/0-255.pbf", []string{"fonts/"}, []string{"/fonts/*"}},
		{"ObjectRemoved:Delete", "osm/glyphs/Open Sans/256-511.pbf", []string{"osm/glyphs/"}, []string{"/osm/glyphs/*"}},
		{"ObjectCreated:Put", "osm/1/0/0.pbf", []string{"osm/1/0/0.pbf"}, []string{"/osm/1/0/0.pbf"}},
	} {
		t.Run(tt.event+" "+tt.key, func(t *testing.T) {
			t.Parallel()
			we, res := processOne(t, tt.event, tt.key, tt.prefixes, tt.paths)
			snap, err := we.j.Read(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Entries) == 0 || snap.Seq != res.Seq || !slices.Equal(snap.Entries[len(snap.Entries)-1].Prefixes, tt.prefixes) {
				t.Errorf("journal: got %+v, want an entry %d of %q", snap, res.Seq, tt.prefixes)
			}
		})
	}
}
