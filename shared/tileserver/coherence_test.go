package tileserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/disk"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/s3event"
	"github.com/tilesieve/tilesieve/shared/s3local"
	"github.com/tilesieve/tilesieve/shared/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

const syncInterval = time.Second

// fleet is several warm instances of the tile function over one bucket, the
// sync worker, and one injected clock: what runs in AWS, in one process.
type fleet struct {
	t         *testing.T
	clock     *clock
	api       *s3.Client
	worker    *purge.Worker
	instances []*instance
	seq       int // S3's sequencer, rising per event
}

type instance struct {
	mem     *cache.Cache
	disk    *disk.Store
	srv     *tileserver.Server
	handler http.Handler
}

func newFleet(t *testing.T, n int, memBytes int64) *fleet {
	t.Helper()
	f := &fleet{t: t, clock: newClock()}
	f.api = s3localtest.Start(t, bucket).Client
	journal := purge.NewJournal(f.api, bucket, "_tilesieve/journal/", purge.JournalOptions{Now: f.clock.Now})
	f.worker = purge.NewWorker(purge.WorkerConfig{Bucket: bucket, TilesPrefix: "tiles/"}, journal, nil, nil)
	for range n {
		in := &instance{}
		var err error
		in.mem, err = cache.New(cache.Config{MaxBytes: memBytes})
		if err != nil {
			t.Fatal(err)
		}
		in.disk, err = disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 64 << 20, Now: f.clock.Now}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := origin.NewWithS3(f.api, origin.Config{Bucket: bucket, Prefix: "tiles/", Now: f.clock.Now})
		in.srv, err = tileserver.New(tileserver.Config{Now: f.clock.Now, RevalidateAfter: 24 * time.Hour},
			tileserver.Deps{Memory: in.mem, Disk: in.disk, Origin: o})
		if err != nil {
			t.Fatal(err)
		}
		fol := purge.NewFollower(journal, in.srv, purge.FollowerConfig{Interval: syncInterval, Now: f.clock.Now}, nil)
		if err := fol.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		in.handler = in.srv.WithSync(fol)
		f.instances = append(f.instances, in)
	}
	return f
}

// change writes (body != nil) or deletes key in S3 and runs the worker on
// the event S3 would send.
func (f *fleet) change(key string, body []byte) {
	f.t.Helper()
	ctx := context.Background()
	kind, event := s3event.Created, "ObjectCreated:Put"
	if body == nil {
		kind, event = s3event.Removed, "ObjectRemoved:Delete"
		if _, err := f.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("tiles/" + key)}); err != nil {
			f.t.Fatal(err)
		}
	} else if _, err := s3local.Put(ctx, f.api, bucket, "tiles/"+key, body, "image/png", ""); err != nil {
		f.t.Fatal(err)
	}
	f.seq++
	res := f.worker.Process(ctx, s3event.Batch{Changes: []s3event.Change{{
		Bucket: bucket, Key: "tiles/" + key, Kind: kind, Event: event,
		Sequencer: fmt.Sprintf("%016X", f.seq), Size: int64(len(body)),
	}}})
	if res.Err != nil || res.Seq == 0 {
		f.t.Fatalf("worker: %+v", res)
	}
}

// get asks instance i for key: status, body, X-Cache.
func (f *fleet) get(i int, key string) (int, string, string) {
	rec := httptest.NewRecorder()
	f.instances[i].handler.ServeHTTP(rec, httptest.NewRequest("GET", "/"+key, nil))
	return rec.Code, rec.Body.String(), rec.Header().Get("X-Cache")
}

// TestUploadReachesEveryInstance: new bytes under a cached key, the worker
// runs on the event, and after SYNC_INTERVAL both instances refill with the
// new bytes while unrelated tiles stay cached in memory and on disk.
func TestUploadReachesEveryInstance(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, 16<<20)
	f.change("osm/3/1/1.png", []byte("v1"))
	f.change("other/3/1/1.png", []byte("unrelated"))
	// The instances apply those two uploads' entries first: a health
	// request runs the due check before it answers. (A tile request would
	// run it beside the fetch, and a fill that a purge overtakes is not
	// inserted, so the tile would not be cached for the check below.)
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		rec := httptest.NewRecorder()
		f.instances[i].handler.ServeHTTP(rec, httptest.NewRequest("GET", "/_tilesieve/health", nil))
	}
	for i := range f.instances {
		for _, k := range []string{"osm/3/1/1.png", "other/3/1/1.png"} {
			if code, _, xc := f.get(i, k); code != 200 || xc != "MISS" {
				t.Fatalf("instance %d %s: %d %s", i, k, code, xc)
			}
		}
	}

	f.change("osm/3/1/1.png", []byte("v2"))
	// Within SYNC_INTERVAL an instance may still answer from its tiers.
	if _, body, xc := f.get(0, "osm/3/1/1.png"); body != "v1" || xc != "HIT-MEMORY" {
		t.Fatalf("before the interval: %q %s", body, xc)
	}
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		code, body, xc := f.get(i, "osm/3/1/1.png")
		if code != 200 || body != "v2" || xc != "MISS" {
			t.Fatalf("instance %d after the interval: %d %q %s, want 200 v2 MISS", i, code, body, xc)
		}
		if _, body, xc := f.get(i, "other/3/1/1.png"); body != "unrelated" || xc != "HIT-MEMORY" {
			t.Fatalf("instance %d unrelated tile: %q %s, want it still in memory", i, body, xc)
		}
		if _, ok := f.instances[i].disk.Get("other/3/1/1.png"); !ok {
			t.Fatalf("instance %d: unrelated tile gone from disk", i)
		}
	}

	f.change("osm/3/1/1.png", nil)
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		if code, _, _ := f.get(i, "osm/3/1/1.png"); code != 404 {
			t.Fatalf("instance %d after delete: %d, want 404", i, code)
		}
	}
}

// TestRandomCoherence runs random uploads, deletes, admin-style purges and
// reads across several instances with the clock advancing, the worker run on
// every event. No read may return bytes older than the newest write that is
// more than SYNC_INTERVAL old.
func TestRandomCoherence(t *testing.T) {
	t.Parallel()
	const (
		instances = 3
		keys      = 12
		rounds    = 600
	)
	// A small memory tier, so eviction and the disk tier take part too.
	f := newFleet(t, instances, 2<<10+12*cache.EntryOverhead)
	rng := rand.New(rand.NewPCG(1, 2))
	type write struct {
		at   time.Time
		body string // "" is a delete
	}
	history := make([][]write, keys) // per key, in order
	keyName := func(k int) string { return "t/" + strconv.Itoa(k%3) + "/" + strconv.Itoa(k) + ".png" }
	version := 0
	reads := 0

	for round := range rounds {
		k := rng.IntN(keys)
		switch op := rng.IntN(10); {
		case op < 3: // upload
			version++
			body := fmt.Sprintf("k%d-v%d-%s", k, version, string(make([]byte, rng.IntN(200))))
			f.change(keyName(k), []byte(body))
			history[k] = append(history[k], write{f.clock.Now(), body})
		case op < 4: // delete
			if len(history[k]) > 0 && history[k][len(history[k])-1].body != "" {
				f.change(keyName(k), nil)
				history[k] = append(history[k], write{f.clock.Now(), ""})
			}
		case op < 5: // a purge on one instance (as the journal would apply it)
			f.instances[rng.IntN(instances)].srv.PurgePrefix("t/" + strconv.Itoa(rng.IntN(3)) + "/")
		default: // read
			i := rng.IntN(instances)
			code, body, xc := f.get(i, keyName(k))
			reads++
			if len(history[k]) == 0 {
				if code != 404 {
					t.Fatalf("round %d: never-written key %s: %d", round, keyName(k), code)
				}
				break
			}
			// Acceptable answers: the newest write older than SYNC_INTERVAL,
			// or anything newer than it.
			now := f.clock.Now()
			floor := 0
			for j, w := range history[k] {
				if now.Sub(w.at) >= syncInterval {
					floor = j
				}
			}
			ok := false
			for _, w := range history[k][floor:] {
				if (w.body == "" && code == 404) || (w.body != "" && code == 200 && body == w.body) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("round %d: instance %d read %s: %d %.20q (%s); acceptable: %d write(s) since %v ago",
					round, i, keyName(k), code, body, xc, len(history[k])-floor, now.Sub(history[k][floor].at))
			}
		}
		f.clock.Advance(time.Duration(rng.IntN(400)) * time.Millisecond)
	}
	t.Logf("%d rounds, %d reads, %d versions written", rounds, reads, version)
}
