package archive_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmtilestest"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// TestOriginReadsArchivesAndObjects: a key under NAME/ is read from
// NAME.pmtiles when it exists, with an ETag that names the archive's
// version (a revalidation with it is answered unread); NAME.json is its
// TileJSON; any other key is the object origin's; a purge of the archive
// makes the origin open it afresh.
func TestOriginReadsArchivesAndObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ep := s3localtest.Start(t, "tiles")
	put := func(key string, body []byte) {
		t.Helper()
		s3localtest.Put(t, ep.Client, "tiles", "tiles/"+key, body, "", "")
	}
	put("world.pmtiles", pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0, X: 0, Y: 0}: []byte("root"), {Z: 1, X: 1, Y: 0}: []byte("east")}, pmtilestest.Options{}))
	put("photos/0/0/0.png", []byte("object"))
	oc := origin.NewWithS3(ep.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"})
	purged := map[string]bool{}
	o, err := archive.New(archive.Config{}, archive.Deps{Next: oc, Store: oc})
	if err != nil {
		t.Fatal(err)
	}
	o.Follow(&engine{purged: purged})
	for _, tc := range []struct {
		key, body string
		wantErr   error
	}{
		{"world/0/0/0.png", "root", nil},
		{"world/1/1/0.png", "east", nil},
		{"world/1/0/0.png", "", tile.ErrNotFound},  // not in the archive
		{"world/0/0/0.webp", "", tile.ErrNotFound}, // not its tile type
		{"photos/0/0/0.png", "object", nil},
		{"photos/1/0/0.png", "", tile.ErrNotFound},
	} {
		t.Run(tc.key, func(t *testing.T) {
			got, err := o.Get(ctx, tc.key, "")
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got error %v, want %v", err, tc.wantErr)
			}
			if err == nil && string(got.Body) != tc.body {
				t.Errorf("got %q, want %q", got.Body, tc.body)
			}
		})
	}
	first, err := o.Get(ctx, "world/0/0/0.png", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Get(ctx, "world/0/0/0.png", first.ETag); !errors.Is(err, tile.ErrNotModified) {
		t.Errorf("revalidation with the tile's ETag: got %v, want ErrNotModified", err)
	}
	tj, err := o.Get(ctx, "world.json", "")
	if err != nil || tj.ContentType != "application/json" {
		t.Fatalf("world.json: got %+v %v, want a TileJSON", tj, err)
	}
	if n := o.Names(); n != 2 {
		t.Errorf("names remembered: got %d, want 2 (world and photos)", n)
	}
	if len(purged) != 0 {
		t.Errorf("tiers purged: got %v, want none (no archive changed under a read)", purged)
	}
	// Replaced in S3 without a purge: the read pinned to the old version
	// fails, the tileset is dropped from the tiers, and the new one is read.
	// (Of the same size: the old ranges stay inside it.)
	put("world.pmtiles", pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0, X: 0, Y: 0}: []byte("ROOT"), {Z: 1, X: 1, Y: 0}: []byte("EAST")}, pmtilestest.Options{}))
	got, err := o.Get(ctx, "world/0/0/0.png", "")
	if err != nil || string(got.Body) != "ROOT" {
		t.Fatalf("after a replacement: got %v %v, want the new root", got, err)
	}
	if !purged["world/"] || !purged["world.json"] {
		t.Errorf("tiers purged: got %v, want world/ and world.json", purged)
	}
	o.Forget("world/")
	if n := o.Names(); n != 1 {
		t.Errorf("names after a purge of world/: got %d, want 1", n)
	}
}

// TestProbeDropsTheObjectRead: the first read under a name probes for
// NAME.pmtiles beside the object read of the key. When the name is an
// archive, the object read is cancelled before Get returns, so none of it
// outlives the answer: no S3 request of it goes out later (on Lambda, from a
// frozen environment), and an object is not downloaded for nothing. S3
// answers the probe only once the object read has reached it, and holds
// that read until its client gives up.
func TestProbeDropsTheObjectRead(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}) // the object read reached S3
	gaveUp := make(chan struct{})  // and its client went away
	release := make(chan struct{}) // the test is over
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{"tiles"}}, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tiles/world/0/0/0.png"):
				close(arrived)
				select {
				case <-r.Context().Done():
					close(gaveUp)
				case <-release:
				}
				return
			case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tiles/world.pmtiles"):
				select {
				case <-arrived:
				case <-release:
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	t.Cleanup(func() { close(release) }) // before the endpoint closes
	s3localtest.Put(t, ep.Client, "tiles", "tiles/world.pmtiles", pmtilestest.Build(map[pmtiles.ZXY][]byte{{Z: 0, X: 0, Y: 0}: []byte("root")}, pmtilestest.Options{}), "", "")
	oc := origin.NewWithS3(ep.Client, origin.Config{Bucket: "tiles", Prefix: "tiles/"})
	o, err := archive.New(archive.Config{}, archive.Deps{Next: oc, Store: oc})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Get(context.Background(), "world/0/0/0.png", "")
	if err != nil || string(got.Body) != "root" {
		t.Fatalf("got %v, %v; want the archive's tile", got, err)
	}
	select {
	case <-gaveUp:
	case <-time.After(10 * time.Second):
		t.Fatal("the object read started beside the probe still ran 10 s after Get answered from the archive")
	}
}

// engine records the purges an archive origin drives and, as the tier
// engine does, runs the hooks registered with OnPurge inside each.
type engine struct {
	purged map[string]bool
	hooks  []func(string)
}

func (e *engine) Purge(prefix string) (int, error) {
	e.purged[prefix] = true
	for _, h := range e.hooks {
		h(prefix)
	}
	return 0, nil
}

func (e *engine) Trusted(time.Time, time.Time) bool { return true }

func (e *engine) OnPurge(fn func(string)) { e.hooks = append(e.hooks, fn) }
