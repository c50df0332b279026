package cloudfront_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfapi "github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/smithy-go"

	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
)

const dist = "E2QWRUHEXAMPLE"

// sleeper moves a fake clock instead of waiting, and records the waits.
type sleeper struct {
	clock *fakeclock.Clock
	mu    sync.Mutex // guards total and n
	total time.Duration
	n     int
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.total += d
	s.n++
	s.mu.Unlock()
	s.clock.Advance(d)
	return nil
}

func (s *sleeper) waits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *sleeper) slept() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func newClock() *fakeclock.Clock { return fakeclock.New(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)) }

// fill puts n wildcard paths in progress through another client, as another
// worker or the admin API would, so the Invalidator under test has to learn
// them from CloudFront.
func fill(t *testing.T, srv *cdntest.Server, n int, tag string) {
	t.Helper()
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf("/%s%d/*", tag, i))
	}
	if err := create(srv, "fill-"+tag, paths...); err != nil {
		t.Fatal(err)
	}
}

// create makes one invalidation of paths on the stand-in straight through
// the CloudFront API, as another worker would, with no budget of its own.
func create(srv *cdntest.Server, ref string, paths ...string) error {
	_, err := srv.Client().CreateInvalidation(context.Background(), &cfapi.CreateInvalidationInput{
		DistributionId: aws.String(dist),
		InvalidationBatch: &types.InvalidationBatch{
			CallerReference: aws.String(ref),
			Paths:           &types.Paths{Quantity: aws.Int32(int32(len(paths))), Items: paths},
		},
	}, func(o *cfapi.Options) { o.Retryer = aws.NopRetryer{} })
	return err
}

// truncate is a Shrink that keeps the first limit targets.
func truncate(targets []string, limit int) []string { return targets[:min(limit, len(targets))] }

func dirs(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("osm/%d/", i))
	}
	return out
}

func TestStandInRefusesPastTheLimits(t *testing.T) {
	t.Parallel()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Manual: true})
	inv := cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist, MaxAttempts: 1}, nil)
	ctx := context.Background()
	if err := create(srv, "a", cdn.Paths("", dirs(15))...); err != nil {
		t.Fatal(err)
	}
	err := create(srv, "b", "/x/*")
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "TooManyInvalidationsInProgress" {
		t.Fatalf("16th wildcard: got %v, want TooManyInvalidationsInProgress", err)
	}
	if srv.Refused() != 1 || srv.Invalidations() != 1 {
		t.Errorf("refused %d, invalidations %d: want 1, 1", srv.Refused(), srv.Invalidations())
	}
	// Exact paths have a budget of their own.
	if _, err := inv.InvalidateTargets(ctx, []string{"osm/1/0/0.png", "osm/1/0/1.png"}, "c", nil); err != nil {
		t.Errorf("exact paths with the wildcards used up: %v", err)
	}
	srv.CompleteAll()
	if _, err := inv.InvalidateTargets(ctx, []string{"x/"}, "b", nil); err != nil {
		t.Errorf("after completion: %v", err)
	}
	if got := srv.Peak(); got.Wildcard != 15 || got.Exact != 2 {
		t.Errorf("peak %+v, want 15 wildcard, 2 exact", got)
	}
}

func TestStandInCompletesOnItsClock(t *testing.T) {
	t.Parallel()
	clock := newClock()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Now: clock.Now, CompleteAfter: time.Minute})
	fill(t, srv, 3, "a")
	if got := srv.InProgress(); got.Wildcard != 3 {
		t.Fatalf("in progress %+v, want 3 wildcards", got)
	}
	clock.Advance(59 * time.Second)
	if got := srv.InProgress(); got.Wildcard != 3 {
		t.Errorf("after 59s: %+v, want still 3", got)
	}
	clock.Advance(time.Second)
	if got := srv.InProgress(); got != (cdntest.Usage{}) {
		t.Errorf("after 60s: %+v, want none", got)
	}
}

func TestInProgressCountsAndCaches(t *testing.T) {
	t.Parallel()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Manual: true})
	fill(t, srv, 4, "a")
	fill(t, srv, 3, "b")
	inv := cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist}, nil)
	ctx := context.Background()
	u, err := inv.InProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u != (cdn.Usage{Wildcard: 7}) {
		t.Errorf("usage %+v, want 7 wildcards", u)
	}
	if got := srv.Calls("GetInvalidation"); got != 2 {
		t.Errorf("GetInvalidation calls %d, want 2", got)
	}
	// Known invalidations are not fetched again; one of ours is known
	// from its creation.
	if _, err := inv.InvalidateTargets(ctx, []string{"c/1.png"}, "c", nil); err != nil {
		t.Fatal(err)
	}
	if u, err = inv.InProgress(ctx); err != nil || u != (cdn.Usage{Wildcard: 7, Exact: 1}) {
		t.Errorf("usage %+v, %v: want 7 wildcard, 1 exact", u, err)
	}
	if got := srv.Calls("GetInvalidation"); got != 2 {
		t.Errorf("GetInvalidation calls %d after caching, want still 2", got)
	}
	srv.CompleteAll()
	if u, err = inv.InProgress(ctx); err != nil || u != (cdn.Usage{}) {
		t.Errorf("after completion: %+v, %v", u, err)
	}
}

func TestInProgressBoundsListPages(t *testing.T) {
	t.Parallel()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Manual: true, MaxWildcardPaths: 1000})
	ctx := context.Background()
	for i := range 150 {
		if err := create(srv, fmt.Sprint(i), fmt.Sprintf("/k/%d/*", i)); err != nil {
			t.Fatal(err)
		}
	}
	inv := cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist, MaxListPages: 1}, nil)
	u, err := inv.InProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls("ListInvalidations"); got != 1 {
		t.Errorf("ListInvalidations calls %d, want MaxListPages 1", got)
	}
	if u.Wildcard != 100 {
		t.Errorf("wildcards counted %d, want the 100 on the page read", u.Wildcard)
	}
	if got := srv.Calls("GetInvalidation"); got != 100 {
		t.Errorf("GetInvalidation calls %d, want one per invalidation listed", got)
	}
	if _, err := inv.InProgress(ctx); err != nil {
		t.Fatal(err)
	}
	if got := srv.Calls("GetInvalidation"); got != 100 {
		t.Errorf("GetInvalidation calls %d on the second count, want none more", got)
	}
}

func TestInvalidateTargetsCoalescesToFit(t *testing.T) {
	t.Parallel()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Manual: true})
	fill(t, srv, 10, "a")
	inv := cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist}, nil)
	out, err := inv.InvalidateTargets(context.Background(), dirs(8), "b", truncate)
	if err != nil {
		t.Fatal(err)
	}
	if want := cdn.Paths("", dirs(5)); !slices.Equal(out.Paths, want) {
		t.Errorf("paths %q, want %q (8 shrunk to fit the 5 left)", out.Paths, want)
	}
	if out.Throttled != 0 {
		t.Errorf("throttled %d, want 0: it fitted without a wait or a refusal", out.Throttled)
	}
	if srv.Refused() != 0 || srv.Peak().Wildcard > 15 {
		t.Errorf("refused %d, peak %+v", srv.Refused(), srv.Peak())
	}
}

func TestInvalidateTargetsWaitsForCompletion(t *testing.T) {
	t.Parallel()
	clock := newClock()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Now: clock.Now, CompleteAfter: time.Minute})
	fill(t, srv, 15, "a")
	sl := &sleeper{clock: clock}
	inv := cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist, Sleep: sl.Sleep}, nil)
	out, err := inv.InvalidateTargets(context.Background(), dirs(3), "b", truncate)
	if err != nil {
		t.Fatal(err)
	}
	if out.Throttled == 0 || out.Throttled != sl.waits() {
		t.Errorf("throttled %d, want one per wait for the budget (%d)", out.Throttled, sl.waits())
	}
	if got := sl.slept(); got < time.Minute {
		t.Errorf("waited %v, want at least the minute the others take", got)
	}
	if srv.Refused() != 0 || srv.Invalidations() != 2 {
		t.Errorf("refused %d, invalidations %d", srv.Refused(), srv.Invalidations())
	}
}

func TestInvalidateTargetsGivesUp(t *testing.T) {
	t.Parallel()
	srv := cdntest.NewWithOptions(t, cdntest.Options{Manual: true})
	fill(t, srv, 15, "a")
	sl := &sleeper{clock: newClock()}
	inv := cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist, Sleep: sl.Sleep, BudgetWait: 30 * time.Second}, nil)
	out, err := inv.InvalidateTargets(context.Background(), dirs(2), "b", truncate)
	if !errors.Is(err, cdn.ErrNoBudget) {
		t.Fatalf("got %v, want ErrNoBudget", err)
	}
	if out.Throttled != sl.waits() || !slices.Equal(out.Paths, cdn.Paths("", dirs(2))) {
		t.Errorf("outcome %+v: want the paths meant and one throttle per wait (%d)", out, sl.waits())
	}
	if got := sl.slept(); got > 30*time.Second || got == 0 {
		t.Errorf("waited %v, want some, at most BudgetWait", got)
	}
	if got := srv.Calls("CreateInvalidation"); got != 1 {
		t.Errorf("CreateInvalidation calls %d, want only the filler's", got)
	}

	// A deadline closer than Reserve: no wait at all.
	sl2 := &sleeper{clock: newClock()}
	inv = cloudfront.New(srv.Client(), cloudfront.Config{DistributionID: dist, Sleep: sl2.Sleep, Reserve: time.Hour}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := inv.InvalidateTargets(ctx, dirs(1), "c", truncate); !errors.Is(err, cdn.ErrNoBudget) {
		t.Fatalf("got %v, want ErrNoBudget", err)
	}
	if sl2.slept() != 0 {
		t.Errorf("waited %v past the deadline's reserve", sl2.slept())
	}
}
