package tiers_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// outageRig is an S3 endpoint with its fault injector, counted at the HTTP
// level, and a clock; instances built on it keep their disk tier in dir.
type outageRig struct {
	t         testing.TB
	srv       *s3local.Server
	api       *s3.Client
	clock     *fakeclock.Clock
	dir       string
	tileGets  atomic.Int64 // GETs of tiles that reached the endpoint
	journalIO atomic.Int64 // requests for the journal head that reached it
}

func newOutageRig(t testing.TB) *outageRig {
	t.Helper()
	r := &outageRig{t: t, clock: fakeclock.New(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)), dir: t.TempDir()}
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{bucket}}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			switch {
			case strings.HasSuffix(req.URL.Path, "/head.json"):
				r.journalIO.Add(1)
			case req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/"+bucket+"/tiles/"):
				r.tileGets.Add(1)
			}
			h.ServeHTTP(w, req)
		})
	})
	r.srv, r.api = ep.Server, ep.Client
	return r
}

// instance starts one tile function instance over the rig's disk
// directory: engine, follower (its position kept beside the disk tier) and
// Start, whose error it returns.
func (r *outageRig) instance(cfg tiers.Config) (*tiers.Engine, *follower.Follower, error) {
	r.t.Helper()
	mem, err := memory.New(memory.Config{MaxBytes: 16 << 20})
	if err != nil {
		r.t.Fatal(err)
	}
	d, err := disk.Open(disk.Config{Dir: r.dir, MaxBytes: 16 << 20, Now: r.clock.Now}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	j := journal.New(r.api, bucket, "_tilesieve/journal/", journal.Options{Now: r.clock.Now})
	cfg.Now = r.clock.Now
	eng, err := tiers.New(cfg, tiers.Deps{
		Memory: mem, Disk: d,
		Origin: origin.NewWithS3(r.api, origin.Config{Bucket: bucket, Prefix: "tiles/", Now: r.clock.Now, MaxAttempts: 1}),
	})
	if err != nil {
		r.t.Fatal(err)
	}
	fol := follower.New(j, eng, follower.Config{
		Interval: time.Second, Timeout: 200 * time.Millisecond, Now: r.clock.Now,
		Position: journal.PositionFile{Path: filepath.Join(r.dir, journal.PositionFileName)},
	}, nil)
	eng.Follow(fol)
	r.t.Cleanup(eng.Drain) // before the disk tier's directory goes
	return eng, fol, fol.Start(context.Background())
}

func (r *outageRig) put(key, body string) { putTile(r.t, r.api, key, body) }

// TestOutageRestartServesKeptDisk: an instance restarted over its disk tier
// while S3 answers neither the journal nor the tiles answers the tiles it
// kept, stale; in strict mode it fails as before.
func TestOutageRestartServesKeptDisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		strict bool
		src    tiers.Source
		err    bool
	}{
		{"stale from the kept disk", false, tiers.Stale, false},
		{"strict", true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newOutageRig(t)
			const key = "osm/3/1/1.png"
			r.put(key, "v1")
			cfg := tiers.Config{RevalidateAfter: time.Hour, StaleIfError: 24 * time.Hour, StrictOutage: tc.strict}
			eng, fol, err := r.instance(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if res, err := eng.Get(ctx, key, r.clock.Now()); err != nil || res.Source != tiers.FromOrigin {
				t.Fatalf("first answer: got %v %v, want %v", res.Source, err, tiers.FromOrigin)
			}
			r.clock.Advance(2 * time.Second)
			if err := fol.Sync(ctx); err != nil { // the position is saved with the disk tier
				t.Fatal(err)
			}
			eng.Drain()

			// Restarted with S3 down for everything.
			r.srv.Faults().Add(s3local.Fault{Status: http.StatusServiceUnavailable})
			r.clock.Advance(time.Minute)
			eng, _, err = r.instance(cfg)
			if err == nil {
				t.Fatal("Start read a journal S3 does not serve")
			}
			res, err := eng.Get(ctx, key, r.clock.Now())
			if got, want := err != nil, tc.err; got != want {
				t.Fatalf("error: got %v, want an error %v", err, want)
			}
			if res.Source != tc.src {
				t.Fatalf("source: got %v, want %v", res.Source, tc.src)
			}
			if !tc.err && string(res.Tile.Body) != "v1" {
				t.Errorf("body: got %q, want %q", res.Tile.Body, "v1")
			}
			wantOutage := int64(1)
			if tc.strict {
				wantOutage = 0
			}
			if got := eng.Stats().OutageStale; got != wantOutage {
				t.Errorf("outage answers: got %v, want %v", got, wantOutage)
			}
		})
	}
}

// TestOutageSecondRequestAtOnce: with S3 hung for the journal and the
// tiles, an expired copy is answered stale after the first request's
// timeouts, and the second request within ORIGIN_FAILURE_WINDOW answers at
// once: it sends nothing to S3 that it waits for. In strict mode the second
// request fails after waiting for S3 again, as before.
func TestOutageSecondRequestAtOnce(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "stale at once", true: "strict"}[strict], func(t *testing.T) {
			t.Parallel()
			r := newOutageRig(t)
			keys := []string{"osm/3/1/1.png", "osm/3/1/2.png"}
			for _, k := range keys {
				r.put(k, "v1")
			}
			eng, _, err := r.instance(tiers.Config{
				RevalidateAfter: time.Hour, StaleIfError: 24 * time.Hour, StrictOutage: strict,
				OriginTimeout: 300 * time.Millisecond, OriginFailureWindow: time.Hour,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, k := range keys {
				if _, err := eng.Get(ctx, k, r.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			r.clock.Advance(2 * time.Hour) // expired, and no longer vouched for
			// S3 hangs: each request is held until its client gives up.
			r.srv.Faults().Add(s3local.Fault{Delay: time.Hour})

			res, err := eng.Get(ctx, keys[0], r.clock.Now())
			if strict {
				if err == nil {
					t.Fatalf("strict, first request: got %v, want an error", res.Source)
				}
			} else if err != nil || res.Source != tiers.Stale {
				t.Fatalf("first request: got %v %v, want %v", res.Source, err, tiers.Stale)
			}
			eng.Drain()
			tiles, journal := r.tileGets.Load(), r.journalIO.Load()
			began := time.Now()
			res, err = eng.Get(ctx, keys[1], r.clock.Now())
			took := time.Since(began)
			t.Logf("second request answered in %v", took)
			if strict {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("strict, second request: got %v %v, want a timeout", res.Source, err)
				}
				if got := r.tileGets.Load() - tiles; got != 1 {
					t.Errorf("strict, second request: got %v tile GETs, want 1", got)
				}
				return
			}
			if err != nil || res.Source != tiers.Stale || string(res.Tile.Body) != "v1" {
				t.Fatalf("second request: got %v %v, want %v v1", res.Source, err, tiers.Stale)
			}
			// What it started runs beside it (a check, a revalidation); it
			// returned before either could end, as each is held by S3 for
			// its whole timeout.
			if took >= 100*time.Millisecond {
				t.Errorf("second request took %v, want under 100ms (the held check and fetch time out after 200ms and 300ms)", took)
			}
			eng.Drain()
			if got := r.tileGets.Load() - tiles; got > 1 {
				t.Errorf("second request: got %v tile GETs, want at most the one background revalidation", got)
			}
			if got := r.journalIO.Load() - journal; got > 1 {
				t.Errorf("second request: got %v journal GETs, want at most the one background check", got)
			}
			if got, want := eng.Stats().OutageStale, int64(2); got != want {
				t.Errorf("outage answers: got %v, want %v", got, want)
			}
		})
	}
}

// TestOutageNeedsBoth: a copy the journal no longer vouches for is
// answered stale only when both fail. With the journal answering, the
// check vouches again and an S3 that fails the tile gets today's
// stale-by-age answer (no outage answer); with S3 answering "not found",
// the copy is forgotten, never served, though the journal fails.
func TestOutageNeedsBoth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault s3local.Fault
		del   bool
		want  tiers.Source // 0: an error
	}{
		{"journal answers, tiles fail", s3local.Fault{Match: s3local.MatchGet("/" + bucket + "/tiles/"), Status: http.StatusServiceUnavailable}, false, tiers.Stale},
		{"journal fails, tile deleted", s3local.Fault{Match: s3local.MatchGet("/head.json"), Status: http.StatusServiceUnavailable}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newOutageRig(t)
			const key = "osm/3/1/1.png"
			r.put(key, "v1")
			eng, fol, err := r.instance(tiers.Config{RevalidateAfter: time.Hour, StaleIfError: 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := eng.Get(ctx, key, r.clock.Now()); err != nil {
				t.Fatal(err)
			}
			if tc.del {
				if _, err := r.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: ptr(bucket), Key: ptr("tiles/" + key)}); err != nil {
					t.Fatal(err)
				}
			}
			r.srv.Faults().Add(tc.fault)
			r.clock.Advance(2 * time.Hour)
			for i := range 2 {
				res, err := eng.Get(ctx, key, r.clock.Now())
				if res.Source != tc.want || (err != nil) != (tc.want == 0) {
					t.Fatalf("request %d: got %v %v, want %v", i, res.Source, err, tc.want)
				}
				if tc.del && !errors.Is(err, tile.ErrNotFound) {
					t.Fatalf("request %d: got %v, want %v", i, err, tile.ErrNotFound)
				}
			}
			if got := eng.Stats().OutageStale; got != 0 {
				t.Errorf("outage answers: got %v, want 0", got)
			}
			if got, want := fol.Unreachable(), tc.del; got != want {
				t.Errorf("journal unreachable: got %v, want %v", got, want)
			}
		})
	}
}

func ptr(s string) *string { return &s }
