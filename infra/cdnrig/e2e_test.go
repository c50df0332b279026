package cdnrig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/cdnrig"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
)

const (
	distribution = "E2RIGEXAMPLE"
	// The storm's tiles: stormDirs directories of stormPerDir tiles at
	// stormZoom, 2,000 in all.
	stormZoom   = 10
	stormDirs   = 40
	stormPerDir = 50
	// eventBatch is the template's WorkerBatchSize default: what the queue
	// hands the worker at once.
	eventBatch = 1000
	// completeAfter keeps each invalidation in progress a while after its
	// bans, so the storm meets CloudFront's budget of paths in progress.
	completeAfter = time.Second
)

// loop is the tile function behind the cache, with the worker invalidating
// the cache through the CloudFront stand-in.
type loop struct {
	st     *stack.Stack
	rig    *cdnrig.Rig
	cf     *cdntest.Server
	policy cdnrig.Policy
}

func stormKey(dir, i int) string { return fmt.Sprintf("storm/%d/%d/%d.png", stormZoom, dir, i) }

func tileBytes(key, version string) []byte {
	return []byte("\x89PNG\r\n\x1a\n" + version + " " + key)
}

// startLoop starts the local stack with the storm's first versions in S3,
// varnishd in front of it configured from the template, and the stand-in.
func startLoop(t *testing.T) *loop {
	t.Helper()
	cdnrig.Varnishd(t) // before the stack starts
	policy := templatePolicy(t)
	rigSlot := &atomic.Pointer[cdnrig.Rig]{}
	cf := cdntest.NewWithOptions(t, cdntest.Options{
		CompleteAfter: completeAfter,
		// Laxer than CloudFront, so that Peak shows what the worker put in
		// progress rather than what the stand-in let through: keeping within
		// 15 wildcards is the worker's job.
		MaxWildcardPaths: 1000, MaxExactPaths: 100000,
		// The stack needs the CDN before the cache can know the stack's
		// address; no invalidation is made before both run.
		Apply: func(ctx context.Context, id string, paths []string) error {
			r := rigSlot.Load()
			if r == nil {
				return fmt.Errorf("cdnrig: invalidation %s before the cache started", id)
			}
			return r.BanPaths(paths)
		},
	})
	inv := cloudfront.New(cf.Client(), cloudfront.Config{
		DistributionID: distribution,
		// Quick retries: the stand-in completes in completeAfter, not in
		// CloudFront's minutes.
		BaseDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
		BudgetWait: 60 * time.Second,
	}, nil)

	env := map[string]string{
		"SYNC_INTERVAL": "100ms",
		"SYNC_TIMEOUT":  "100ms",
		"LOG_LEVEL":     "warn",
	}
	for _, h := range policy.OriginHeaders {
		if strings.EqualFold(h.Name, "X-Tilesieve-Cdn") {
			env["CDN_SECRET"] = h.Value // the template hands the function the same value
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{
		Env:      func(k string) string { return env[k] },
		Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0",
		CDN:        inv,
		EventBatch: eventBatch,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		st.Close(ctx)
	})
	rig := cdnrig.Start(t, cdnrig.Options{Origin: strings.TrimPrefix(st.URL, "http://"), Policy: policy})
	rigSlot.Store(rig)
	l := &loop{st: st, rig: rig, cf: cf, policy: policy}
	// The storm's first versions, announced to nobody: as if they had been
	// there before the stack started.
	st.Notifier.SetEnabled(false)
	parallel(t, stormKeys(), func(key string) error {
		_, err := s3local.Put(context.Background(), st.Client, st.Tiles.Bucket, st.Tiles.TilesPrefix+key, tileBytes(key, "v1"), "image/png", "")
		return err
	})
	st.Notifier.SetEnabled(true)
	return l
}

// stormKeys are the storm's 2,000 keys.
func stormKeys() []string {
	var keys []string
	for d := range stormDirs {
		for i := range stormPerDir {
			keys = append(keys, stormKey(d, i))
		}
	}
	return keys
}

// put writes an object to the stack's S3; its notification reaches the
// worker.
func (l *loop) put(t *testing.T, key string, body []byte, contentType string) {
	t.Helper()
	s3localtest.Put(t, l.st.Client, l.st.Tiles.Bucket, l.st.Tiles.TilesPrefix+key, body, contentType, "")
}

// covered reports whether invalidation path p covers URL path u.
func covered(p, u string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(u, prefix)
	}
	return p == u
}

// awaitInvalidated waits until an invalidation created after the first
// `after` requests covers each URL path and none is in progress any more:
// from then on, the cache may not answer any of them with old bytes.
func (l *loop) awaitInvalidated(after int, paths []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		reqs := l.cf.Requests()
		missing := ""
		for _, u := range paths {
			found := false
			for _, r := range reqs[min(after, len(reqs)):] {
				for _, p := range r.Paths {
					found = found || covered(p, u)
				}
			}
			if !found {
				missing = u
				break
			}
		}
		inProgress := l.cf.InProgress()
		if missing == "" && inProgress == (cdntest.Usage{}) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %d paths, %q not invalidated yet, %+v paths in progress, apply errors %v",
				within, len(paths), missing, inProgress, l.cf.ApplyErrors())
		}
		time.Sleep(20 * time.Millisecond) // polling for completion, not ordering
	}
}

// TestThroughTheCache drives viewers through varnishd, configured from the
// template, in front of the local stack whose worker invalidates it through
// the CloudFront stand-in.
func TestThroughTheCache(t *testing.T) {
	t.Parallel()
	l := startLoop(t)
	viewerHost := l.rig.Addr

	t.Run("documents name the CDN's host", func(t *testing.T) {
		if !l.policy.ViewerHostAsForwardedHost {
			// Without it the function sees its own Host and no forwarded
			// one: documents name the function URL.
			t.Fatal("template.yaml has no viewer-request CloudFront Function setting X-Forwarded-Host from the viewer's Host")
		}
		for _, doc := range l.newDocuments(t, "maps") {
			t.Run(doc.path, func(t *testing.T) {
				a := get(t, "GET", l.rig.URL+doc.path, nil)
				if a.status != http.StatusOK {
					t.Fatalf("got %v, want 200", a)
				}
				if host := hostOf(t, doc.url, a.body); host != viewerHost {
					t.Errorf("document's URL host: got %v, want %v (the Host the viewer used)", host, viewerHost)
				}
			})
		}
	})

	t.Run("a poisoning request changes nothing", func(t *testing.T) {
		if !l.policy.ViewerHostAsForwardedHost {
			t.Fatal("template.yaml has no viewer-request CloudFront Function setting X-Forwarded-Host from the viewer's Host")
		}
		for _, doc := range l.newDocuments(t, "poison") {
			t.Run(doc.path, func(t *testing.T) {
				if got := poisoned(t, l.rig, doc); got != "" {
					t.Errorf("got %v, want no document naming evil.example", got)
				}
			})
		}
	})

	// The check above can fail: in front of a cache that forwards the
	// viewer's X-Forwarded-Host (the template without its viewer-request
	// function), the attacker's URLs reach the next viewer.
	t.Run("without the viewer function the check finds the poison", func(t *testing.T) {
		p := l.policy
		p.ViewerHostAsForwardedHost = false
		bare := cdnrig.Start(t, cdnrig.Options{Origin: strings.TrimPrefix(l.st.URL, "http://"), Policy: p})
		for _, doc := range l.newDocuments(t, "control") {
			t.Run(doc.path, func(t *testing.T) {
				if got := poisoned(t, bare, doc); got == "" {
					t.Errorf("got no poisoned document, want the next viewer to get evil.example")
				}
			})
		}
	})

	t.Run("after an S3 upload", func(t *testing.T) {
		for _, tc := range []struct{ key, url string }{
			{stormKey(0, 0), "/" + stormKey(0, 0)},
			// The worker's exact path is escaped as viewers' URLs are.
			{"my maps/10/0/0.png", "/my%20maps/10/0/0.png"},
		} {
			t.Run(tc.key, func(t *testing.T) {
				if tc.key != stormKey(0, 0) { // not loaded at start: its first version's invalidation first
					before := len(l.cf.Requests())
					l.put(t, tc.key, tileBytes(tc.key, "v1"), "image/png")
					if err := l.awaitInvalidated(before, []string{tc.url}, 30*time.Second); err != nil {
						t.Fatal(err)
					}
				}
				warm(t, l, tc.url, tileBytes(tc.key, "v1"))
				before := len(l.cf.Requests())
				l.put(t, tc.key, tileBytes(tc.key, "v2"), "image/png")
				stale := pollUntilInvalidated(t, l, before, tc.url, tileBytes(tc.key, "v2"))
				t.Logf("reads before the invalidation completed: %d of old bytes", stale)
			})
		}
	})

	t.Run("after an admin purge", func(t *testing.T) {
		key := stormKey(1, 0)
		u := "/" + key
		warm(t, l, u, tileBytes(key, "v1"))
		// A new version in S3 that no event announces: only the purge
		// makes the tiers and the cache let go of the old one.
		l.st.Notifier.SetEnabled(false)
		l.put(t, key, tileBytes(key, "v2"), "image/png")
		l.st.Notifier.SetEnabled(true)
		if a := get(t, "GET", l.rig.URL+u, nil); a.body != string(tileBytes(key, "v1")) {
			t.Fatalf("before the purge: got %q, want the cached v1", a.body)
		}
		before := len(l.cf.Requests())
		purge := get(t, "POST", l.rig.URL+"/_tilesieve/purge?prefix="+url.QueryEscape(fmt.Sprintf("storm/%d/1/", stormZoom)),
			// Origin access control replaces Authorization: the token travels
			// in its own header.
			map[string]string{admin.TokenHeader: l.st.Tiles.AdminToken})
		if purge.status/100 != 2 {
			t.Fatalf("admin purge through the cache: got %v, want 2xx", purge)
		}
		stale := pollUntilInvalidated(t, l, before, u, tileBytes(key, "v2"))
		t.Logf("reads before the invalidation completed: %d of old bytes", stale)
	})

	t.Run("a 2,000-upload storm", func(t *testing.T) {
		testStorm(t, l)
	})
}

// document is a path whose answer names a URL, and how to read it.
type document struct {
	path string
	url  func(body string) (string, error)
}

// newDocuments writes a TileJSON source (NAME/metadata.json), a MapLibre
// style authored against another host (NAME/style.json) and a IIIF
// info.json that no request has read yet.
func (l *loop) newDocuments(t *testing.T, name string) []document {
	t.Helper()
	l.put(t, name+"/metadata.json", []byte(`{"format":"png","maxzoom":"3"}`), "application/json")
	l.put(t, name+"/style.json", []byte(`{"version":8,"sources":{"s":{"type":"raster","url":"http://127.0.0.1:8080/`+name+`.json"}},`+
		`"sprite":"http://127.0.0.1:8080/`+name+`/sprite","glyphs":"/fonts/{fontstack}/{range}.pbf","layers":[]}`), "application/json")
	l.put(t, "books/"+name+"/info.json", []byte(`{"@context":"http://iiif.io/api/image/3/context.json","id":"https://old.example/x","type":"ImageService3","width":100}`), "application/json")
	return []document{{"/" + name + ".json", tileJSONURL}, {"/" + name + "/style.json", styleURL}, {"/books/" + name + "/info.json", infoID}}
}

// poisoned sends the attacker's request first (it fills the cache), then a
// viewer's, and describes what named evil.example ("" when nothing did).
func poisoned(t *testing.T, r *cdnrig.Rig, doc document) string {
	t.Helper()
	evil := get(t, "GET", r.URL+doc.path, map[string]string{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http"})
	if evil.cache != "miss" {
		t.Fatalf("poisoning request: got %v, want the miss that fills the cache", evil)
	}
	next := get(t, "GET", r.URL+doc.path, nil)
	if next.status != http.StatusOK || next.cache != "hit" {
		t.Fatalf("next viewer: got %v, want a hit", next)
	}
	if host := hostOf(t, doc.url, next.body); host != r.Addr {
		return fmt.Sprintf("the next viewer's document names %s: %s", host, next.body)
	}
	if strings.Contains(evil.body, "evil.example") {
		return "the attacker's own answer names it: " + evil.body
	}
	return ""
}

// warm reads u through the cache until the cache holds want.
func warm(t *testing.T, l *loop, u string, want []byte) {
	t.Helper()
	get(t, "GET", l.rig.URL+u, nil)
	if a := get(t, "GET", l.rig.URL+u, nil); a.cache != "hit" || a.body != string(want) {
		t.Fatalf("%s warmed: got %v, want a hit of %q", u, a, want)
	}
}

// pollUntilInvalidated reads u through the cache until the invalidation of
// u has completed (old bytes are fine until then), then reads it again and
// again: every read after completion must be want. It returns the old reads
// of the window.
func pollUntilInvalidated(t *testing.T, l *loop, before int, u string, want []byte) (stale int) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- l.awaitInvalidated(before, []string{u}, 30*time.Second) }()
	for polling := true; polling; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			polling = false
		default:
			if a := get(t, "GET", l.rig.URL+u, nil); a.body != string(want) {
				stale++
			}
			time.Sleep(5 * time.Millisecond) // pacing the polls, not ordering
		}
	}
	bad := 0
	const reads = 50
	for i := range reads {
		hdr := map[string]string(nil)
		if i%2 == 1 {
			hdr = map[string]string{"Accept-Encoding": "gzip"} // another key of the same path
		}
		if a := get(t, "GET", l.rig.URL+u, hdr); a.status != http.StatusOK || a.body != string(want) {
			bad++
			if bad == 1 {
				t.Errorf("read %d after the invalidation completed: got %v, want %q", i, a, want)
			}
		}
	}
	if bad != 0 {
		t.Errorf("old or failed reads after the invalidation completed: got %v of %v, want 0", bad, reads)
	}
	return stale
}

func testStorm(t *testing.T, l *loop) {
	start := time.Now()
	keys := stormKeys()
	// Every key in the cache first, as v1 (or v2 for the ones the subtests
	// above changed).
	parallel(t, keys, func(key string) error {
		a, err := fetch("GET", l.rig.URL+"/"+key, nil)
		if err == nil && a.status != http.StatusOK {
			err = fmt.Errorf("warm %s: got %v, want 200", key, a)
		}
		return err
	})
	if a := get(t, "GET", l.rig.URL+"/"+keys[len(keys)-1], nil); a.cache != "hit" {
		t.Fatalf("after warming: got %v, want a hit", a)
	}
	warmed := time.Since(start)
	before := len(l.cf.Requests())

	parallel(t, keys, func(key string) error {
		_, err := s3local.Put(context.Background(), l.st.Client, l.st.Tiles.Bucket, l.st.Tiles.TilesPrefix+key, tileBytes(key, "v3"), "image/png", "")
		return err
	})
	uploaded := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := l.st.Notifier.Flush(ctx); err != nil {
		t.Fatalf("the worker did not take every notification: %v", err)
	}
	if st := l.st.Notifier.Stats(); st.Failed != 0 {
		t.Fatalf("notifications: got %+v, want none failed", st)
	}
	var urls []string
	for _, k := range keys {
		urls = append(urls, "/"+k)
	}
	if err := l.awaitInvalidated(before, urls, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	settled := time.Since(start)

	var oldReads atomic.Int64
	parallel(t, keys, func(key string) error {
		a, err := fetch("GET", l.rig.URL+"/"+key, nil)
		if err != nil {
			return err
		}
		if a.body != string(tileBytes(key, "v3")) && oldReads.Add(1) == 1 {
			return fmt.Errorf("%s after the storm: got %v, want v3", key, a)
		}
		return nil
	})
	reqs := l.cf.Requests()[before:]
	peak := l.cf.Peak()
	t.Logf("storm: %d uploads, %d CreateInvalidation calls, %d invalidations refused for the budget, peak in progress %d wildcard %d exact; "+
		"warm %v, uploads done %v, all invalidations completed %v, total %v",
		len(keys), len(reqs), l.cf.Refused(), peak.Wildcard, peak.Exact,
		warmed.Round(time.Millisecond), uploaded.Round(time.Millisecond), settled.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if n := oldReads.Load(); n != 0 {
		t.Errorf("keys still old at the cache after the storm: got %v, want 0", n)
	}
	if peak.Wildcard > cdntest.MaxWildcardPaths {
		t.Errorf("wildcard paths in progress at once: got %v, want at most %v", peak.Wildcard, cdntest.MaxWildcardPaths)
	}
	if n := l.cf.Refused(); n != 0 {
		t.Errorf("invalidations refused for the budget: got %v, want 0", n)
	}
	if peak.Wildcard == 0 {
		t.Errorf("wildcard paths in progress at once: got 0, want the storm to use the budget")
	}
}

// parallel runs f over keys on a few goroutines and fails on the first error.
func parallel(t *testing.T, keys []string, f func(string) error) {
	t.Helper()
	ch := make(chan string)
	errs := make(chan error, len(keys))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range ch {
				if err := f(k); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, k := range keys {
		ch <- k
	}
	close(ch)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// tileJSONURL is the first tile URL of a TileJSON.
func tileJSONURL(body string) (string, error) {
	var tj struct {
		Tiles []string `json:"tiles"`
	}
	if err := json.Unmarshal([]byte(body), &tj); err != nil || len(tj.Tiles) == 0 {
		return "", fmt.Errorf("TileJSON %q: %v", body, err)
	}
	return tj.Tiles[0], nil
}

// styleURL is the sprite URL of a style whose source, sprite and glyphs
// URLs all name one host: an error when they do not.
func styleURL(body string) (string, error) {
	var st struct {
		Sources map[string]struct {
			URL string `json:"url"`
		} `json:"sources"`
		Sprite string `json:"sprite"`
		Glyphs string `json:"glyphs"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Sprite == "" || st.Glyphs == "" || st.Sources["s"].URL == "" {
		return "", fmt.Errorf("style %q: %v", body, err)
	}
	host := func(u string) string {
		h, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://"), "/")
		return h
	}
	if h := host(st.Sprite); host(st.Glyphs) != h || host(st.Sources["s"].URL) != h {
		return "", fmt.Errorf("style %q: its URLs name more than one host", body)
	}
	return st.Sprite, nil
}

// infoID is the id of a IIIF Image API 3 info.json.
func infoID(body string) (string, error) {
	var info struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil || info.ID == "" {
		return "", fmt.Errorf("info.json %q: %v", body, err)
	}
	return info.ID, nil
}

func hostOf(t *testing.T, extract func(string) (string, error), body string) string {
	t.Helper()
	raw, err := extract(body)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(strings.ReplaceAll(strings.ReplaceAll(raw, "{", "%7B"), "}", "%7D"))
	if err != nil {
		t.Fatalf("URL %q: %v", raw, err)
	}
	return u.Host
}
