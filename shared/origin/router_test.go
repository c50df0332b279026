package origin_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// routerEnv is one endpoint with three buckets: the default ("tiles", under
// tiles/), a directory source and an archive source in "other", and a
// requester-pays directory source in "paid", whose reads are refused
// without x-amz-request-payer: requester, as S3 refuses them.
func routerEnv(t *testing.T) (*origin.Router, *counter, func(bucket, key, body string)) {
	t.Helper()
	return routerEnvTB(t)
}

func routerEnvTB(t testing.TB) (*origin.Router, *counter, func(bucket, key, body string)) {
	t.Helper()
	req := &counter{}
	payer := s3localtest.RequesterPays("paid", nil)
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{"tiles", "other", "paid"}}, func(h http.Handler) http.Handler {
		return req.wrap(payer(h))
	})
	api := ep.Client
	def := origin.NewWithS3(api, origin.Config{Bucket: "tiles", Prefix: "tiles/"})
	table := sources.New(sources.Default{Bucket: "tiles", Prefix: "tiles/"}, []sources.Source{
		{Name: "osm", Bucket: "other", Prefix: "maps/osm/"},
		{Name: "world", Bucket: "other", Prefix: "maps/world.pmtiles"},
		{Name: "sat", Bucket: "paid", Prefix: "v1/", RequesterPays: true},
		{Name: "gone", Bucket: "other", Prefix: "maps/gone.pmtiles"},
	})
	put := func(bucket, key, body string) {
		t.Helper()
		s3localtest.Put(t, api, bucket, key, []byte(body), "application/octet-stream", "")
	}
	put("tiles", "tiles/roads/1/0/0.png", "roads")
	put("tiles", "tiles/osm/1/0/0.png", "shadowed")
	put("tiles", "tiles/world.pmtiles", "shadowed archive")
	put("tiles", "tiles/plain.pmtiles", "default archive")
	put("other", "maps/osm/1/0/0.png", "osm")
	put("other", "maps/osm/metadata.json", "{}")
	put("other", "maps/world.pmtiles", "world archive")
	put("paid", "v1/2/1/1.jpg", "sat")
	return origin.NewRouter(def, table), req, put
}

func TestRouterGet(t *testing.T) {
	t.Parallel()
	r, req, _ := routerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		key, want string // want "" for tile.ErrNotFound
		s3Calls   int
	}{
		{"roads/1/0/0.png", "roads", 1},
		{"osm/1/0/0.png", "osm", 1},
		{"osm/metadata.json", "{}", 1},
		{"sat/2/1/1.jpg", "sat", 1},
		{"sat/2/1/2.jpg", "", 1},
		{"world.pmtiles", "world archive", 1},
		{"plain.pmtiles", "default archive", 1},
		// No object can exist: answered without S3.
		{"osm.pmtiles", "", 0},
		{"world/1/0/0.png", "", 0},
		{"gone.mbtiles", "", 0},
	} {
		t.Run(tc.key, func(t *testing.T) {
			total := func() int {
				req.mu.Lock()
				defer req.mu.Unlock()
				n := 0
				for k, v := range req.n {
					if strings.HasPrefix(k, "GET ") {
						n += v
					}
				}
				return n
			}
			start := total()
			got, err := r.Get(ctx, tc.key, "")
			switch {
			case tc.want == "" && !errors.Is(err, tile.ErrNotFound):
				t.Errorf("got %v, want tile.ErrNotFound", err)
			case tc.want != "" && (err != nil || string(got.Body) != tc.want):
				t.Errorf("got %v %v, want %q", got, err, tc.want)
			}
			if n := total() - start; n != tc.s3Calls {
				t.Errorf("got %d S3 requests, want %d", n, tc.s3Calls)
			}
		})
	}
}

func TestRouterHeadAndRange(t *testing.T) {
	t.Parallel()
	r, _, _ := routerEnv(t)
	ctx := context.Background()
	h, err := r.Head(ctx, "sat/2/1/1.jpg")
	if err != nil || h.ETag == "" {
		t.Fatalf("head of a requester-pays tile: got %v %v, want its ETag", h, err)
	}
	rg, err := r.GetRange(ctx, r.ObjectKey("world.pmtiles"), 6, 7, "")
	if err != nil || string(rg.Body) != "archive" || rg.Size != int64(len("world archive")) {
		t.Fatalf("range of a source's archive: got %+v %v, want \"archive\" of 13", rg, err)
	}
	rg, err = r.GetRange(ctx, r.ObjectKey("plain.pmtiles"), 0, 7, "")
	if err != nil || string(rg.Body) != "default" {
		t.Fatalf("range of a default archive: got %+v %v, want \"default\"", rg, err)
	}
	if _, err := r.GetRange(ctx, r.ObjectKey("osm.pmtiles"), 0, 7, ""); !errors.Is(err, tile.ErrNotFound) {
		t.Fatalf("range of a directory source's archive: got %v, want tile.ErrNotFound", err)
	}
}

// TestRequesterPaysIsSent: without the header, the bucket refuses reads.
func TestRequesterPaysIsSent(t *testing.T) {
	t.Parallel()
	r, _, _ := routerEnv(t)
	ctx := context.Background()
	if _, err := r.Get(ctx, "sat/2/1/1.jpg", ""); err != nil {
		t.Errorf("get: got %v, want the tile", err)
	}
	if _, _, err := r.Prefixes(ctx, "sat/", 10); err != nil {
		t.Errorf("list: got %v, want the listing", err)
	}
	c, key, ok := r.Locate("sat/2/1/1.jpg")
	if !ok || key != "v1/2/1/1.jpg" || c.Bucket() != "paid" || c.RequestPayer() != "requester" {
		t.Errorf("locate: got %s %q %v payer %q, want paid v1/2/1/1.jpg requester", c.Bucket(), key, ok, c.RequestPayer())
	}
	// The same bucket read as if it were free is refused: the check is real.
	free := origin.NewWithS3(r.Default().S3(), origin.Config{Bucket: "paid"})
	if _, err := free.Get(ctx, "v1/2/1/1.jpg", ""); err == nil {
		t.Error("a read without the header was served; want it refused")
	}
}

func TestRouterPrefixes(t *testing.T) {
	t.Parallel()
	r, _, _ := routerEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		dir           string
		dirs, objects []string
	}{
		// The default's osm/ and world.pmtiles are shadowed by the sources;
		// gone.pmtiles does not exist.
		{"", []string{"roads/", "osm/", "sat/"}, []string{"plain.pmtiles", "world.pmtiles"}},
		{"osm/", []string{"osm/1/"}, []string{"osm/metadata.json"}},
		{"osm/1/", []string{"osm/1/0/"}, nil},
		{"osm/1/0/", nil, []string{"osm/1/0/0.png"}},
		{"sat/", []string{"sat/2/"}, nil},
		{"roads/1/", []string{"roads/1/0/"}, nil},
		{"world/", nil, nil},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dirs, objects, err := r.Prefixes(ctx, tc.dir, 100)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, o := range objects {
				keys = append(keys, o.Key)
			}
			if !slices.Equal(dirs, tc.dirs) || !slices.Equal(keys, tc.objects) {
				t.Errorf("got %q %q, want %q %q", dirs, keys, tc.dirs, tc.objects)
			}
		})
	}
}
