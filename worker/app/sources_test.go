package app_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	tilesapp "github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/infra/devstack/s3notify"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/worker/app"
)

// workerTarget delivers the notifications to the worker's Lambda handler.
type workerTarget struct{ a *app.App }

func (t workerTarget) Handle(ctx context.Context, ev json.RawMessage) (any, error) {
	return t.a.Handle(ctx, app.Event(ev))
}

// TestTwoSourcesPurgedByTheirOwnEvents: tilesets in two more buckets (one
// requester-pays) are served side by side with the default bucket's, and a
// change in one bucket, delivered as S3 notifies it, purges that source's
// tiles only.
func TestTwoSourcesPurgedByTheirOwnEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := s3local.New(s3local.Config{Buckets: []string{bucket, "alpha-maps", "beta-open"}})
	if err != nil {
		t.Fatal(err)
	}
	var worker *app.App
	front := &frontHandler{}
	hs := httptest.NewServer(front)
	t.Cleanup(hs.Close)
	api := srv.Client(hs.URL)
	stat := func(ctx context.Context, b, key string) (int64, string, error) {
		out, err := api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key), RequestPayer: types.RequestPayerRequester})
		if err != nil {
			return 0, "", err
		}
		return aws.ToInt64(out.ContentLength), aws.ToString(out.ETag), nil
	}
	notifier := s3notify.New(s3localtest.RequesterPays("beta-open", nil)(srv.Handler()), stat, targetFunc(func(ctx context.Context, ev json.RawMessage) (any, error) {
		return workerTarget{worker}.Handle(ctx, ev)
	}), s3notify.Config{Region: s3local.DefaultRegion}, nil)
	notifier.SetEnabled(false) // until the worker is built
	front.h = notifier
	t.Cleanup(func() { notifier.Close(ctx) })

	env := envOf(map[string]string{
		"TILES_BUCKET": bucket, "TILES_PREFIX": "tiles/", "METRICS": "false", "DISK_CACHE_BYTES": "0",
		"SOURCES":          "a=s3://alpha-maps/maps/a/, b=s3://beta-open/?requester-pays",
		"AWS_ENDPOINT_URL": hs.URL, "S3_FORCE_PATH_STYLE": "true",
	})
	wcfg, err := config.LoadWorker(env)
	if err != nil {
		t.Fatal(err)
	}
	var none time.Duration
	worker, err = app.New(ctx, wcfg, app.Options{S3: api, SettleDelay: &none, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tcfg, err := config.LoadTiles(env)
	if err != nil {
		t.Fatal(err)
	}
	tiles, err := tilesapp.NewWithOrigin(ctx, tcfg, origin.NewWithS3(api, tilesapp.OriginConfig(tcfg)), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	put := func(b, key, body string) {
		t.Helper()
		s3localtest.Put(t, api, b, key, []byte(body), "image/png", "")
	}
	put(bucket, "tiles/roads/1/0/0.png", "roads-1")
	put(bucket, "tiles/a/1/0/0.png", "shadowed") // the source a serves a/, not this
	put("alpha-maps", "maps/a/1/0/0.png", "a-1")
	put("beta-open", "1/0/0.png", "b-1")
	notifier.SetEnabled(true)

	type want struct{ path, body, cache string }
	check := func(step string, wants ...want) {
		t.Helper()
		for _, w := range wants {
			rec := httptest.NewRecorder()
			tiles.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, w.path, nil))
			if rec.Code != http.StatusOK || rec.Body.String() != w.body || rec.Header().Get("X-Cache") != w.cache {
				t.Errorf("%s: GET %s: got %d %q %s, want 200 %q %s", step, w.path, rec.Code, rec.Body, rec.Header().Get("X-Cache"), w.body, w.cache)
			}
		}
	}
	settled := func() {
		t.Helper()
		if err := notifier.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tiles.Follower.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check("first reads", want{"/a/1/0/0.png", "a-1", "MISS"}, want{"/b/1/0/0.png", "b-1", "MISS"}, want{"/roads/1/0/0.png", "roads-1", "MISS"})
	check("second reads", want{"/a/1/0/0.png", "a-1", "HIT-MEMORY"}, want{"/b/1/0/0.png", "b-1", "HIT-MEMORY"}, want{"/roads/1/0/0.png", "roads-1", "HIT-MEMORY"})

	put("alpha-maps", "maps/a/1/0/0.png", "a-2")
	settled()
	check("after a's upload", want{"/a/1/0/0.png", "a-2", "MISS"}, want{"/b/1/0/0.png", "b-1", "HIT-MEMORY"}, want{"/roads/1/0/0.png", "roads-1", "HIT-MEMORY"})

	put("beta-open", "1/0/0.png", "b-2")
	settled()
	check("after b's upload", want{"/a/1/0/0.png", "a-2", "HIT-MEMORY"}, want{"/b/1/0/0.png", "b-2", "MISS"}, want{"/roads/1/0/0.png", "roads-1", "HIT-MEMORY"})

	// Changes no tileset reads: outside a's prefix, and the default's a/,
	// which the source shadows.
	put("alpha-maps", "elsewhere/1/0/0.png", "x")
	put(bucket, "tiles/a/1/0/0.png", "shadowed-2")
	settled()
	check("after unread changes", want{"/a/1/0/0.png", "a-2", "HIT-MEMORY"}, want{"/b/1/0/0.png", "b-2", "HIT-MEMORY"})

	snap, err := worker.Journal.Read(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, e := range snap.Entries {
		got = append(got, e.Prefixes)
	}
	if wantEntries := [][]string{{"a/1/0/0.png"}, {"b/1/0/0.png"}}; !slices.EqualFunc(got, wantEntries, slices.Equal) {
		t.Errorf("journal entries %q, want %q", got, wantEntries)
	}

	rec := httptest.NewRecorder()
	tiles.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/_tilesieve/catalog", nil))
	var cat docs.Catalog
	if err := json.Unmarshal(rec.Body.Bytes(), &cat); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("catalog: %d %s", rec.Code, rec.Body)
	}
	var names []string
	for _, e := range cat.Tilesets {
		names = append(names, e.Name+":"+e.Kind)
	}
	if want := []string{"a:objects", "b:objects", "roads:objects"}; !slices.Equal(names, want) {
		t.Errorf("catalog %q, want %q", names, want)
	}
}

// frontHandler lets the endpoint's handler be set after its URL is known.
type frontHandler struct{ h http.Handler }

func (f *frontHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }

type targetFunc func(ctx context.Context, ev json.RawMessage) (any, error)

func (f targetFunc) Handle(ctx context.Context, ev json.RawMessage) (any, error) { return f(ctx, ev) }
