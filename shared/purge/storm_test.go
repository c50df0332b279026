package purge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
)

// TestWorkerStormAsDeployed delivers a 10,000-tile upload the way the deployed
// stack does: S3 sends one single-record notification per object to the queue,
// and the event source mapping hands the worker batches of up to 100 messages.
// Invalidations take a minute on CloudFront's (injected) clock; the worker may
// wait 45 s of it per invocation, as a 60 s function would. A batch that finds
// no budget left fails its messages, which come back 30 s later (the
// visibility timeout) behind the rest of the queue.
//
// It asserts what CloudFront would enforce and the journal needs: never more
// than 15 wildcard or 3,000 exact paths in progress (and no invalidation
// refused for it: the worker counted right across invocations), every
// notification processed in the end, and at most one journal entry per
// invocation.
func TestWorkerStormAsDeployed(t *testing.T) {
	t.Parallel()
	const (
		notifications = 10000
		batchSize     = 100
		visibility    = 30 * time.Second
	)
	sl := newFakeSleep()
	we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/"}, workerOpts{
		settle: 2 * time.Second,
		cf:     cdntest.Options{Now: sl.clock.Now, CompleteAfter: time.Minute},
		cdn:    cloudfront.Config{BudgetWait: 45 * time.Second, BaseDelay: 500 * time.Millisecond},
		sleep:  sl.Sleep,
	})

	keys := stormKeys(notifications)
	queue := make([]stormMessage, 0, notifications)
	for i, k := range keys {
		queue = append(queue, stormMessage{k, i})
	}

	ctx := context.Background()
	invocations, failures := 0, 0
	for len(queue) > 0 {
		if invocations > 10*notifications/batchSize {
			t.Fatalf("%d invocations and %d messages still queued: the storm does not drain", invocations, len(queue))
		}
		n := min(batchSize, len(queue))
		batch := queue[:n]
		queue = queue[n:]
		failed := deliverStormBatch(ctx, t, we, batch)
		invocations++
		if len(failed) > 0 {
			failures++
			queue = append(queue, failed...)
			sl.clock.Advance(visibility)
		}
		if p := we.cf.InProgress(); p.Wildcard > cdntest.MaxWildcardPaths || p.Exact > cdntest.MaxExactPaths {
			t.Fatalf("after invocation %d: %+v in progress", invocations, p)
		}
	}

	peak := we.cf.Peak()
	if peak.Wildcard > cdntest.MaxWildcardPaths || peak.Exact > cdntest.MaxExactPaths {
		t.Errorf("peak in progress %+v, want at most %d wildcard and %d exact paths", peak, cdntest.MaxWildcardPaths, cdntest.MaxExactPaths)
	}
	if n := we.cf.Refused(); n != 0 {
		t.Errorf("CloudFront refused %d invalidations: the worker misjudged what was in progress", n)
	}
	entries := we.head(t)
	if entries > uint64(invocations) {
		t.Errorf("journal entries %d, want at most one per invocation (%d)", entries, invocations)
	}
	if minBatches := notifications / batchSize; invocations < minBatches || entries < uint64(minBatches) {
		t.Errorf("invocations %d, entries %d: want at least %d", invocations, entries, minBatches)
	}
	checkEveryKeyInvalidated(t, we, keys)
	t.Logf("%d notifications: %d invocations (%d with failures), %d journal entries, %d invalidations, peak %+v, %v of CloudFront time, %d ListInvalidations, %d GetInvalidation",
		notifications, invocations, failures, entries, we.cf.Invalidations(), peak,
		sl.clock.Now().Sub(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)), we.cf.Calls("ListInvalidations"), we.cf.Calls("GetInvalidation"))
}

// stormMessage is one S3 notification on the queue.
type stormMessage struct {
	key string
	seq int
}

// stormKeys are n distinct tile keys of three tilesets; one of them hot, so
// that some directories fill up and some keys stay single.
func stormKeys(n int) []string {
	r := rand.New(rand.NewPCG(11, 12))
	seen := map[string]bool{}
	var keys []string
	for len(keys) < n {
		var key string
		switch n := r.IntN(10); {
		case n < 5:
			z := 6 + r.IntN(12)
			key = fmt.Sprintf("osm/%d/%d/%d.png", z, r.IntN(1<<z), r.IntN(1<<z))
		case n < 8:
			key = fmt.Sprintf("sat/14/%d/%d.jpg", 8000+r.IntN(4), r.IntN(64))
		default:
			key = fmt.Sprintf("iiif/scan %d/0,0,512,512/full/0/default.jpg", r.IntN(5000))
		}
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// deliverStormBatch has the worker handle batch, each message its own
// single-record notification, as one invocation, and returns the messages
// it reported failed.
func deliverStormBatch(ctx context.Context, t *testing.T, we *workerEnv, batch []stormMessage) []stormMessage {
	t.Helper()
	var keys []string
	var seqs []int
	byID := map[string]stormMessage{}
	for _, m := range batch {
		keys, seqs = append(keys, m.key), append(seqs, m.seq)
		byID[fmt.Sprintf("m-%07d", m.seq)] = m
	}
	out, err := we.w.Handle(ctx, sqsBatchOf(t, "ObjectCreated:Put", keys, seqs))
	if err != nil {
		t.Fatal(err)
	}
	var failed []stormMessage
	for _, id := range failedIDs(t, out) {
		m, ok := byID[id]
		if !ok {
			t.Fatalf("failure %q is not a message of the batch", id)
		}
		failed = append(failed, m)
	}
	return failed
}

// checkEveryKeyInvalidated checks that every key is covered by a path
// CloudFront was asked to invalidate.
func checkEveryKeyInvalidated(t *testing.T, we *workerEnv, keys []string) {
	t.Helper()
	var paths []string
	for _, req := range we.cf.Requests() {
		paths = append(paths, req.Paths...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	for _, k := range keys {
		p := cdn.Paths("", []string{k})[0]
		if !slices.ContainsFunc(paths, func(q string) bool { return q == p || covers(q, p) }) {
			t.Fatalf("key %q never invalidated", k)
		}
	}
}

// covers reports whether the wildcard path q covers the path p.
func covers(q, p string) bool {
	w, ok := strings.CutSuffix(q, "*")
	return ok && strings.HasPrefix(p, w)
}
