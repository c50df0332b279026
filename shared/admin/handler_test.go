package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

const token = "test-admin-token"

// newHandler is the admin API over a real tier engine (memory only) reading
// from an in-process S3 endpoint holding key.
func newHandler(t *testing.T, key string) (*admin.Handler, *tiers.Engine) {
	t.Helper()
	ep := s3localtest.Start(t, "tiles")
	s3localtest.Put(t, ep.Client, "tiles", "tiles/"+key, []byte("x"), "image/png", "")
	mem, err := memory.New(memory.Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := tiers.New(tiers.Config{}, tiers.Deps{Memory: mem, Origin: origin.NewWithS3(ep.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"})})
	if err != nil {
		t.Fatal(err)
	}
	h, err := admin.New(admin.Config{Token: token}, admin.Deps{Engine: eng, Memory: mem,
		Handler: func() admin.HandlerStats { return admin.HandlerStats{Requests: 7} }})
	if err != nil {
		t.Fatal(err)
	}
	return h, eng
}

func do(h http.Handler, method, path, tok string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if tok != "" {
		r.Header.Set(admin.TokenHeader, tok)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestHandlerRoutes: the health check needs no token, the admin routes a
// right one, the catalog is absent without a lister, and nothing the
// handler answers may be cached.
func TestHandlerRoutes(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(t, "a/0/0/0.png")
	for _, tc := range []struct {
		method, path, tok string
		want              int
	}{
		{"GET", "/_tilesieve/health", "", 200},
		{"POST", "/_tilesieve/health", "", 405},
		{"GET", "/_tilesieve/catalog", "", 404},
		{"GET", "/_tilesieve/stats", "", 401},
		{"GET", "/_tilesieve/stats", "wrong", 403},
		{"GET", "/_tilesieve/stats", token, 200},
		{"GET", "/_tilesieve/purge?prefix=a/", token, 405},
		{"POST", "/_tilesieve/purge", token, 400},
		{"GET", "/_tilesieve/nothing", token, 404},
	} {
		t.Run(tc.method+" "+tc.path+" "+tc.tok, func(t *testing.T) {
			w := do(h, tc.method, tc.path, tc.tok)
			if w.Code != tc.want {
				t.Errorf("got %d, want %d", w.Code, tc.want)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control: got %q, want no-store", got)
			}
		})
	}
}

// TestHandlerPurgesThisInstance: without a purger an admin purge still
// empties this instance's tiers under the prefix, and the stats count the
// HTTP layer's requests beside the engine's.
func TestHandlerPurgesThisInstance(t *testing.T) {
	t.Parallel()
	const key = "a/0/0/0.png"
	h, eng := newHandler(t, key)
	now := time.Now()
	if _, err := eng.Get(context.Background(), key, now); err != nil {
		t.Fatal(err)
	}
	w := do(h, "POST", "/_tilesieve/purge?prefix=a/", token)
	var res admin.PurgeResult
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil || w.Code != 200 {
		t.Fatalf("purge: got %d %s (%v), want 200", w.Code, w.Body, err)
	}
	if res.MemoryEntries != 1 {
		t.Errorf("memory entries purged: got %d, want 1", res.MemoryEntries)
	}
	if r, err := eng.Get(context.Background(), key, now); err != nil || r.Source != tiers.FromOrigin {
		t.Errorf("after the purge: got source %v (%v), want the origin", r.Source, err)
	}
	st := h.Stats()
	if st.Handler.Requests != 7 || st.Handler.Misses != 2 {
		t.Errorf("stats: got %d requests, %d misses; want 7 and 2", st.Handler.Requests, st.Handler.Misses)
	}
}
