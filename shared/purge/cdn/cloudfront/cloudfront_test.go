package cloudfront_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/purge/cdn"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
)

func newInvalidator(t *testing.T, cfg cloudfront.Config) (*cloudfront.Invalidator, *cdntest.Server) {
	t.Helper()
	srv := cdntest.New(t)
	if cfg.DistributionID == "" {
		cfg.DistributionID = "E2QWRUHEXAMPLE"
	}
	if cfg.BaseDelay == 0 {
		cfg.BaseDelay = time.Millisecond
	}
	return cloudfront.New(srv.Client(), cfg, nil), srv
}

func TestInvalidate(t *testing.T) {
	t.Parallel()
	inv, srv := newInvalidator(t, cloudfront.Config{PathPrefix: "/maps/"})
	ctx := context.Background()
	out, err := inv.InvalidateTargets(ctx, []string{"osm/12/", "sat/1/0/0.png"}, "b1", nil)
	if err != nil {
		t.Fatal(err)
	}
	paths := out.Paths
	want := []string{"/maps/osm/12/*", "/maps/sat/1/0/0.png"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths: got %q, want %q", paths, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests: got %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.DistributionID != "E2QWRUHEXAMPLE" || !slices.Equal(r.Paths, want) || r.Quantity != 2 {
		t.Errorf("request: got %+v", r)
	}
	if r.CallerReference != cdn.CallerReference("b1", want) {
		t.Errorf("caller reference: got %s", r.CallerReference)
	}
	// The same batch again: the same reference, so no second invalidation.
	if _, err := inv.InvalidateTargets(ctx, []string{"sat/1/0/0.png", "osm/12/"}, "b1", nil); err != nil {
		t.Fatal(err)
	}
	reqs = srv.Requests()
	if reqs[1].CallerReference != r.CallerReference {
		t.Errorf("retried batch: reference %s, want %s", reqs[1].CallerReference, r.CallerReference)
	}
	if srv.Invalidations() != 1 {
		t.Errorf("invalidations: got %d, want 1", srv.Invalidations())
	}
}

func TestInvalidateRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	inv, srv := newInvalidator(t, cloudfront.Config{})
	srv.Fail(cdntest.TooMany, cdntest.Throttling, cdntest.Unavailable)
	if _, err := inv.InvalidateTargets(context.Background(), []string{"osm/"}, "b", nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("requests: got %d, want 4", len(reqs))
	}
	for _, r := range reqs {
		if r.CallerReference != reqs[0].CallerReference {
			t.Errorf("reference changed between attempts")
		}
	}
	if srv.Invalidations() != 1 {
		t.Errorf("invalidations: got %d, want 1", srv.Invalidations())
	}
}

// TestInvalidateTargetsCountsThrottling: answers of throttling and of too
// many invalidations in progress count as throttled; a server error is
// retried but is not throttling.
func TestInvalidateTargetsCountsThrottling(t *testing.T) {
	t.Parallel()
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	inv, srv := newInvalidator(t, cloudfront.Config{Sleep: noWait})
	srv.Fail(cdntest.TooMany, cdntest.Throttling, cdntest.Unavailable)
	out, err := inv.InvalidateTargets(context.Background(), []string{"osm/", "sat/1/0/0.png"}, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/osm/*", "/sat/1/0/0.png"}; out.Throttled != 2 || !slices.Equal(out.Paths, want) {
		t.Errorf("outcome %+v, want paths %q and 2 throttled", out, want)
	}

	inv, srv = newInvalidator(t, cloudfront.Config{Sleep: noWait, MaxAttempts: 2})
	srv.Fail(cdntest.Throttling, cdntest.Throttling)
	if out, err = inv.InvalidateTargets(context.Background(), []string{"osm/"}, "b", nil); err == nil || out.Throttled != 2 {
		t.Errorf("given up: %+v, %v; want an error and 2 throttled", out, err)
	}
}

func TestInvalidateGivesUp(t *testing.T) {
	t.Parallel()
	inv, srv := newInvalidator(t, cloudfront.Config{MaxAttempts: 3})
	srv.Fail(cdntest.TooMany, cdntest.TooMany, cdntest.TooMany, cdntest.TooMany)
	_, err := inv.InvalidateTargets(context.Background(), []string{"osm/"}, "b", nil)
	if err == nil {
		t.Fatal("no error after MaxAttempts failures")
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("requests: got %d, want 3", n)
	}
}

func TestInvalidateNoRetryOnBadRequest(t *testing.T) {
	t.Parallel()
	inv, srv := newInvalidator(t, cloudfront.Config{})
	srv.Fail(cdntest.BadPath)
	if _, err := inv.InvalidateTargets(context.Background(), []string{"osm/"}, "b", nil); err == nil {
		t.Fatal("no error")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests: got %d, want 1", n)
	}
}

func TestInvalidateHonoursContext(t *testing.T) {
	t.Parallel()
	inv, srv := newInvalidator(t, cloudfront.Config{BaseDelay: time.Hour, MaxDelay: time.Hour})
	srv.Fail(cdntest.TooMany)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := inv.InvalidateTargets(ctx, []string{"osm/"}, "b", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	srv := cdntest.New(t)
	inv := cloudfront.New(srv.Client(), cloudfront.Config{}, nil)
	if inv.Enabled() {
		t.Error("enabled without a distribution")
	}
	out, err := inv.InvalidateTargets(context.Background(), []string{"osm/"}, "b", nil)
	if out.Paths != nil || err != nil {
		t.Errorf("got %v, %v", out, err)
	}
	var none *cloudfront.Invalidator
	if out, err := none.InvalidateTargets(context.Background(), []string{"osm/"}, "b", nil); out.Paths != nil || err != nil {
		t.Errorf("nil invalidator: got %v, %v", out, err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("a disabled invalidator called CloudFront")
	}
}
