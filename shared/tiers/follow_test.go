package tiers_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/s3local"
	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
	"github.com/tilesieve/tilesieve/shared/tiers"
)

// TestFollowerBuiltWithTheEngine: the follower Deps.Follow builds purges
// the engine; a due check runs beside a lookup, and a memory hit that the
// check's purge removed meanwhile is looked up again, so the result is the
// new version.
func TestFollowerBuiltWithTheEngine(t *testing.T) {
	t.Parallel()
	srv, err := s3local.New(s3local.Config{Buckets: []string{bucket}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	api := srv.Client(hs.URL)
	clock := fakeclock.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC))
	mem, err := cache.New(cache.Config{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	j := purge.NewJournal(api, bucket, "_tilesieve/journal/", purge.JournalOptions{Now: clock.Now})
	var fol *purge.Follower
	eng, err := tiers.New(tiers.Config{Now: clock.Now, RevalidateAfter: 24 * time.Hour}, tiers.Deps{
		Memory: mem,
		Origin: origin.NewWithS3(api, origin.Config{Bucket: bucket, Prefix: "tiles/", Now: clock.Now}),
		Follow: func(e *tiers.Engine) tiers.Syncer {
			fol = purge.NewFollower(j, e, purge.FollowerConfig{Interval: time.Second, Timeout: 10 * time.Second, Now: clock.Now}, nil)
			return fol
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := fol.Start(ctx); err != nil {
		t.Fatal(err)
	}
	put := func(body string) {
		t.Helper()
		if _, err := s3local.Put(ctx, api, bucket, "tiles/a/1/0/0.png", []byte(body), "image/png", ""); err != nil {
			t.Fatal(err)
		}
	}
	get := func() tiers.Result {
		t.Helper()
		r, err := eng.Get(ctx, "a/1/0/0.png", clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put("old")
	steps := []struct {
		name   string
		before func()
		src    tiers.Source
		body   string
	}{
		{"miss", nil, tiers.FromOrigin, "old"},
		{"hit, no check due", nil, tiers.FromMemory, "old"},
		{"purged beside the lookup", func() {
			put("new")
			if _, err := j.Append(ctx, []string{"a/"}, "test"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second)
		}, tiers.FromOrigin, "new"},
		{"hit again", nil, tiers.FromMemory, "new"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		r := get()
		if r.Source != s.src || string(r.Tile.Body) != s.body {
			t.Fatalf("%s: got %v %q, want %v %q", s.name, r.Source, r.Tile.Body, s.src, s.body)
		}
	}
	if got, want := eng.Stats().Relookups, int64(1); got != want {
		t.Errorf("relookups: got %v, want %v", got, want)
	}
	if got, want := fol.Stats().Checks, uint64(2); got != want {
		t.Errorf("journal checks: got %v, want %v", got, want)
	}
}
