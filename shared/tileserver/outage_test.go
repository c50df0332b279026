package tileserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// TestOutageAnswers: when S3 answers neither the journal nor the tile, a
// cached copy the journal no longer vouches for goes out marked STALE with
// the short stale Cache-Control; in strict mode it is today's 502.
func TestOutageAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		strict bool
		status int
		xcache string
	}{
		{"stale", false, http.StatusOK, "STALE"},
		{"strict", true, http.StatusBadGateway, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withFollower(follower.Config{Interval: time.Second, Timeout: 200 * time.Millisecond}),
				withConfig(func(c *servertest.Config) {
					c.StrictOutage = tc.strict
					c.StaleCacheControl = "public, max-age=15"
				}))
			t.Cleanup(e.srv.Drain)
			if err := e.follower.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.put("o/1/0/0.png", []byte("tile"), "image/png", "")
			expect(t, e.do("GET", "/o/1/0/0.png"), http.StatusOK, "MISS")
			e.s3.Faults().Add(s3local.Fault{Status: http.StatusServiceUnavailable})
			e.clock.Advance(2 * time.Hour)
			r := e.do("GET", "/o/1/0/0.png")
			expect(t, r, tc.status, tc.xcache)
			if tc.strict {
				return
			}
			if got, want := r.Header.Get("Cache-Control"), "public, max-age=15"; got != want {
				t.Errorf("Cache-Control: got %q, want %q", got, want)
			}
			if got, want := body(t, r), "tile"; got != want {
				t.Errorf("body: got %q, want %q", got, want)
			}
			if got, want := e.srv.Stats().Handler.OutageStale, int64(1); got != want {
				t.Errorf("outage answers: got %v, want %v", got, want)
			}
		})
	}
}
