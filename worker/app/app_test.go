package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"

	tilesapp "github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/testkit/fakeclock"
	"github.com/tilesieve/tilesieve/worker/app"
)

const (
	bucket     = "tiles"
	dist       = "E2QWRUHEXAMPLE"
	adminToken = "test-admin-token"
	settle     = 10 * time.Second
)

func envOf(m map[string]string) config.Env { return func(k string) string { return m[k] } }

// settleWatch is the worker's wait: it moves the fake clock, and records
// what the CDN and the journal looked like at each wait.
type settleWatch struct {
	clock *fakeclock.Clock
	cf    *cdntest.Server
	mu    sync.Mutex // guards waits
	waits []wait
}

type wait struct {
	d       time.Duration
	creates int // CreateInvalidation calls the stand-in had seen when the wait began
}

func (s *settleWatch) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.waits = append(s.waits, wait{d: d, creates: s.cf.Calls("CreateInvalidation")})
	s.mu.Unlock()
	s.clock.Advance(d)
	return nil
}

// fill puts n wildcard paths in progress through the CloudFront API, as
// another worker's invalidations would be.
func fill(t *testing.T, cf *cdntest.Server, n int) {
	t.Helper()
	if n == 0 {
		return
	}
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf("/other/%d/*", i))
	}
	_, err := cf.Client().CreateInvalidation(context.Background(), &cloudfront.CreateInvalidationInput{
		DistributionId: aws.String(dist),
		InvalidationBatch: &types.InvalidationBatch{
			CallerReference: aws.String("fill"),
			Paths:           &types.Paths{Quantity: aws.Int32(int32(n)), Items: paths},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAdminPurgeThroughTheWorker: an admin purge on the tile function goes
// through the one purge pipeline: recorded in the journal by the tile
// function, its CDN invalidation handed to the worker, which waits the
// settle delay before it calls CloudFront, keeps within the budget of paths
// in progress (shrinking the batch, or waiting for the budget), and carries
// the names the prefix derives (an archive's tileset and TileJSON). Both
// functions are assembled as on Lambda; S3 and CloudFront are reached over
// HTTP.
func TestAdminPurgeThroughTheWorker(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		inProgress int      // wildcard paths of other invalidations in progress
		want       []string // the paths the worker sends
		waitBudget bool     // the worker must wait for the budget to free up
	}{
		{"room for the derived names", 12, []string{"/osm.json*", "/osm.pmtiles*", "/osm/*"}, false},
		{"one wildcard left: shrunk to fit", 14, []string{"/*"}, false},
		{"no wildcard left: waits for the budget", 15, []string{"/osm.json*", "/osm.pmtiles*", "/osm/*"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := fakeclock.New(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
			s3e := s3localtest.Start(t, bucket)
			cf := cdntest.NewWithOptions(t, cdntest.Options{Now: clock.Now, CompleteAfter: time.Minute})
			fill(t, cf, tt.inProgress)
			sw := &settleWatch{clock: clock, cf: cf}

			env := envOf(map[string]string{
				"TILES_BUCKET": bucket, "TILES_PREFIX": "tiles/", "DISTRIBUTION_ID": dist,
				"AWS_ENDPOINT_URL": s3e.URL, "S3_FORCE_PATH_STYLE": "true", "METRICS": "false",
				"ADMIN_TOKEN": adminToken, "DISK_CACHE_BYTES": "0",
			})
			wcfg, err := config.LoadWorker(env)
			if err != nil {
				t.Fatal(err)
			}
			delay := settle
			worker, err := app.New(context.Background(), wcfg, app.Options{
				SettleDelay: &delay, Sleep: sw.Sleep, Logger: slog.New(slog.DiscardHandler),
				AWS: awsclient.Settings{
					Region: s3local.DefaultRegion, Credentials: s3e.Credentials(),
					BaseEndpoint: cf.URL, // CloudFront; S3 has its own endpoint
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			tcfg, err := config.LoadTiles(env)
			if err != nil {
				t.Fatal(err)
			}
			tiles, err := tilesapp.NewWithOrigin(context.Background(), tcfg, origin.NewWithS3(s3e.Client, tilesapp.OriginConfig(tcfg)),
				slog.New(slog.DiscardHandler), tilesapp.WithHandoff(worker.Handoff()))
			if err != nil {
				t.Fatal(err)
			}

			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/_tilesieve/purge?prefix=osm.pmtiles", nil)
			req.Header.Set(admin.TokenHeader, adminToken)
			tiles.Handler.ServeHTTP(rec, req)
			var res admin.PurgeResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("admin purge: %d %s", rec.Code, rec.Body)
			}
			if want := []string{"osm.json", "osm.pmtiles", "osm/"}; res.JournalSeq != 1 || !slices.Equal(res.Prefixes, want) {
				t.Errorf("journal entry %d of %q, want 1 of %q", res.JournalSeq, res.Prefixes, want)
			}
			snap, err := worker.Journal.Read(context.Background(), "")
			if err != nil || len(snap.Entries) != 1 || !slices.Equal(snap.Entries[0].Prefixes, res.Prefixes) {
				t.Errorf("journal %+v, %v: want the admin entry only (the worker records nothing again)", snap.Entries, err)
			}

			// The settle delay came first, before any call of ours.
			if len(sw.waits) == 0 || sw.waits[0].d != settle || sw.waits[0].creates != min(tt.inProgress, 1) {
				t.Fatalf("waits %+v: want the settle delay %v first, before the worker's CreateInvalidation", sw.waits, settle)
			}
			if got := len(sw.waits) > 1; got != tt.waitBudget {
				t.Errorf("waits %+v: waited for the budget %v, want %v", sw.waits, got, tt.waitBudget)
			}
			reqs := cf.Requests()
			if len(reqs) == 0 {
				t.Fatal("no CreateInvalidation")
			}
			if got := reqs[len(reqs)-1].Paths; !slices.Equal(got, tt.want) {
				t.Errorf("paths %q, want %q", got, tt.want)
			}
			if cf.Refused() != 0 || cf.Peak().Wildcard > cdntest.MaxWildcardPaths {
				t.Errorf("refused %d, peak %+v: want none refused, at most %d wildcards in progress", cf.Refused(), cf.Peak(), cdntest.MaxWildcardPaths)
			}
		})
	}
}
