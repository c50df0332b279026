package stack_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

// TestSourcesInTheLocalStack: the local stack takes SOURCES as a deploy
// does: it creates the sources' buckets in its S3, serves their tilesets
// beside the demo, and their changes (every key, as the template's
// EventBridge rule sends them) purge that source's tiles only.
func TestSourcesInTheLocalStack(t *testing.T) {
	t.Parallel()
	st := startEmbeddedEnv(t, nil, map[string]string{"SOURCES": "more=s3://more-tiles/maps/"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	putMore := func(body string) {
		t.Helper()
		s3localtest.Put(t, st.Client, "more-tiles", "maps/1/0/0.png", []byte(body), "image/png", "")
	}
	settled := func() {
		t.Helper()
		if err := st.Notifier.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := st.App.Follower.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	putMore("more-1")
	settled()
	moreURL, demoURL := st.URL+"/more/1/0/0.png", st.TileURL(1, 0, 0)
	for _, step := range []struct {
		url, body, cache string
	}{
		{moreURL, "more-1", "MISS"},
		{moreURL, "more-1", "HIT-MEMORY"},
		{demoURL, "", "MISS"},
		{demoURL, "", "HIT-MEMORY"},
	} {
		if a := get(t, step.url); a.status != http.StatusOK || a.cache != step.cache || step.body != "" && string(a.body) != step.body {
			t.Fatalf("GET %s: got %d %s %q, want 200 %s %q", step.url, a.status, a.cache, a.body, step.cache, step.body)
		}
	}
	putMore("more-2")
	settled()
	if a := get(t, moreURL); a.status != http.StatusOK || a.cache != "MISS" || string(a.body) != "more-2" {
		t.Errorf("after the source's upload: got %d %s %q, want 200 MISS \"more-2\"", a.status, a.cache, a.body)
	}
	if a := get(t, demoURL); a.cache != "HIT-MEMORY" {
		t.Errorf("the demo tile after the source's upload: got %s, want HIT-MEMORY (not purged)", a.cache)
	}
}
