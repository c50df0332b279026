package tileserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

const (
	syncInterval = time.Second
	syncTimeout  = 200 * time.Millisecond // real time: it bounds S3 calls; generous enough for a loaded machine
	// bound is the promise: no instance answers with bytes older than the
	// newest write that is at least this old (on the fleet's clock; the
	// worker runs at once there).
	bound = syncInterval + syncTimeout
)

// fleet is several warm instances of the tile function over one bucket,
// sync workers, and one injected clock: what runs in AWS, in one process.
// Instances keep their disk tier in a directory of their own, so one can be
// killed and restarted over it, as Lambda does with /tmp.
type fleet struct {
	t      *testing.T
	clock  *clock
	s3     *s3local.Server
	api    *s3.Client   // the instances'
	s3Reqs atomic.Int64 // requests that reached S3
	// workerHost is the address the workers reach S3 at: a slow journal
	// (slowJournal) is slow for the instances' checks only, since a worker
	// has no deadline of its own and would wait each delay out in real
	// time without changing what the fleet's clock shows.
	workerHost string
	timeout    time.Duration // SYNC_TIMEOUT: syncTimeout unless newFleetTimeout
	workers    []*purge.Worker
	instances  []*instance
	memBytes   int64
	seq        int // S3's sequencer, rising per event
}

type instance struct {
	dir      string
	mem      *memory.Cache
	disk     *disk.Store
	srv      *servertest.Stack
	follower *follower.Follower
	handler  http.Handler
	startErr error
}

func newFleet(t *testing.T, n int, memBytes int64) *fleet {
	t.Helper()
	return newFleetTimeout(t, n, memBytes, syncTimeout)
}

// newFleetTimeout is newFleet with instances whose checks wait at most
// timeout (SYNC_TIMEOUT).
func newFleetTimeout(t *testing.T, n int, memBytes int64, timeout time.Duration) *fleet {
	t.Helper()
	f := &fleet{t: t, clock: newClock(), memBytes: memBytes, timeout: timeout}
	srv, err := s3local.New(s3local.Config{Buckets: []string{bucket}})
	if err != nil {
		t.Fatal(err)
	}
	f.s3 = srv
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.s3Reqs.Add(1)
		srv.Handler().ServeHTTP(w, r)
	})
	hs := httptest.NewServer(counted)
	t.Cleanup(hs.Close)
	f.api = srv.Client(hs.URL)
	hw := httptest.NewServer(counted)
	t.Cleanup(hw.Close)
	f.workerHost = strings.TrimPrefix(hw.URL, "http://")
	workerAPI := srv.Client(hw.URL)
	// Two workers with journals of their own: concurrent writers, each
	// with its own (possibly lagging) idea of the head.
	for range 2 {
		j := journal.New(workerAPI, bucket, "_tilesieve/journal/", journal.Options{Now: f.clock.Now})
		f.workers = append(f.workers, purge.NewWorker(purge.WorkerConfig{Bucket: bucket, TilesPrefix: "tiles/"}, purge.NewPurger(j, purge.PurgerConfig{}, nil), nil))
	}
	for range n {
		in := &instance{dir: t.TempDir()}
		f.instances = append(f.instances, in)
		f.start(in, nil)
	}
	return f
}

// newFleetV1 is where the single-instance cases start: one instance, key
// written with v1 and its purge applied.
func newFleetV1(t *testing.T, key string) *fleet {
	t.Helper()
	f := newFleet(t, 1, 16<<20)
	f.change(key, []byte("v1"))
	f.catchUp()
	return f
}

// start (re)starts an instance over its disk directory, as app.New does:
// open the disk tier, read the journal before trusting it, then stage
// (when stageKeys is not nil), then read the journal again.
func (f *fleet) start(in *instance, stagePrefixes []string) {
	f.t.Helper()
	f.startWith(in, stagePrefixes, false)
}

// startWith is start, with archives on when archives is set.
func (f *fleet) startWith(in *instance, stagePrefixes []string, archives bool) {
	f.t.Helper()
	if in.srv != nil {
		// A restart: the killed process wrote nothing more, so its checks
		// still running beside answers end before the next one opens the
		// directory.
		in.srv.Drain()
	}
	var err error
	in.mem, err = memory.New(memory.Config{MaxBytes: f.memBytes})
	if err != nil {
		f.t.Fatal(err)
	}
	in.disk, err = disk.Open(disk.Config{Dir: in.dir, MaxBytes: 64 << 20, Now: f.clock.Now}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	o := origin.NewWithS3(f.api, origin.Config{Bucket: bucket, Prefix: "tiles/", Now: f.clock.Now, MaxAttempts: 1})
	j := journal.New(f.api, bucket, "_tilesieve/journal/", journal.Options{Now: f.clock.Now})
	follow := func(eng *tiers.Engine) tiers.Syncer {
		in.follower = follower.New(j, eng, follower.Config{
			Interval: syncInterval, Timeout: f.timeout, Now: f.clock.Now,
			Position: journal.PositionFile{Path: filepath.Join(in.dir, journal.PositionFileName)},
		}, nil)
		return in.follower
	}
	deps := servertest.Deps{Memory: in.mem, Disk: in.disk, Origin: o, Follow: follow}
	if archives {
		deps.Archives = o
	}
	in.srv, err = servertest.New(servertest.Config{Now: f.clock.Now, RevalidateAfter: 24 * time.Hour}, deps)
	if err != nil {
		f.t.Fatal(err)
	}
	// Checks started beside the last answers end before the test's
	// directories are removed.
	srv := in.srv
	f.t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			f.t.Errorf("Close: %v", err)
		}
	})
	in.startErr = in.follower.Start(context.Background())
	if stagePrefixes != nil {
		stage.Run(context.Background(), stage.Config{Prefixes: stagePrefixes, Budget: 10 * time.Second}, o, in.disk, nil)
		in.follower.Sync(context.Background())
	}
	in.handler = in.srv
}

// put writes key in S3 without telling anybody (the event is sent later).
func (f *fleet) put(key string, body []byte) {
	f.t.Helper()
	s3localtest.Put(f.t, f.api, bucket, "tiles/"+key, body, "image/png", "")
}

// notify runs worker w on the event S3 sends for a change of key, one
// record per notification, as S3 does.
func (f *fleet) notify(w int, key string, deleted bool) {
	f.t.Helper()
	if err := f.tryNotify(w, key, deleted); err != nil {
		f.t.Fatal(err)
	}
}

// tryNotify is notify that reports a worker that could not record the purge
// (SQS would deliver the event again).
func (f *fleet) tryNotify(w int, key string, deleted bool) error {
	kind, event := s3event.Created, "ObjectCreated:Put"
	if deleted {
		kind, event = s3event.Removed, "ObjectRemoved:Delete"
	}
	f.seq++
	res := f.workers[w].Process(context.Background(), s3event.Batch{Changes: []s3event.Change{{
		Bucket: bucket, Key: "tiles/" + key, Kind: kind, Event: event, Sequencer: fmt.Sprintf("%016X", f.seq),
	}}})
	if res.Err != nil || res.Seq == 0 {
		return fmt.Errorf("worker: %+v", res)
	}
	return nil
}

// change writes (body != nil) or deletes key in S3 and runs the worker on
// the event S3 would send.
func (f *fleet) change(key string, body []byte) {
	f.t.Helper()
	if body == nil {
		if _, err := f.api.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("tiles/" + key)}); err != nil {
			f.t.Fatal(err)
		}
	} else {
		f.put(key, body)
	}
	f.notify(0, key, body == nil)
}

// catchUp moves the clock one SYNC_INTERVAL on and has every instance
// check the journal, as their next requests would.
func (f *fleet) catchUp() {
	f.clock.Advance(syncInterval)
	for _, in := range f.instances {
		in.follower.Sync(context.Background())
	}
}

// expectDue is the answer of instance i at a due check: the copy the last
// check vouches for (stale), at once, with the check run beside it; then,
// once that check has ended, code/body (fresh). S3 holds the check's
// journal answer until the stale answer is out, so a check that outruns
// the answer cannot make it fresh; were the answer to wait for the check,
// the hold gives up after a minute and the answer is fresh, not stale.
func (f *fleet) expectDue(i int, key string, staleCode int, stale string, code int, body, xcache string) {
	f.t.Helper()
	release := make(chan struct{})
	var held atomic.Bool
	f.s3.Faults().Add(s3local.Fault{Times: 1, Match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/head.json") && r.Host != f.workerHost
	}, Hold: func() {
		held.Store(true)
		select {
		case <-release:
		case <-time.After(time.Minute):
		}
	}})
	f.expect(i, key, staleCode, stale, "")
	close(release)
	f.instances[i].srv.Drain()
	if !held.Load() {
		f.t.Fatalf("instance %d %s: no journal check beside the answer", i, key)
	}
	f.expect(i, key, code, body, xcache)
}

// get asks instance i for key: status, body, X-Cache.
func (f *fleet) get(i int, key string) (int, string, string) {
	rec := httptest.NewRecorder()
	f.instances[i].handler.ServeHTTP(rec, httptest.NewRequest("GET", "/"+key, nil))
	return rec.Code, rec.Body.String(), rec.Header().Get("X-Cache")
}

func (f *fleet) expect(i int, key string, code int, body, xcache string) {
	f.t.Helper()
	gotCode, gotBody, gotX := f.get(i, key)
	if gotCode != code || (body != "" && gotBody != body) || (xcache != "" && gotX != xcache) {
		f.t.Fatalf("instance %d %s: got %d %q %s, want %d %q %s", i, key, gotCode, gotBody, gotX, code, body, xcache)
	}
}

// bound is the promise of this fleet's instances (see the constant).
func (f *fleet) bound() time.Duration { return syncInterval + f.timeout }

// journalFault makes the journal head fail for every reader.
func (f *fleet) journalFault(status int) {
	f.s3.Faults().Add(s3local.Fault{Status: status, Match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/head.json")
	}})
}

// slowJournal makes the journal head slower than an instance's check may
// wait: twice its deadline, a margin for a loaded machine's timers (S3
// starts the delay after the check starts its deadline). The workers'
// reads are not delayed (see workerHost).
func (f *fleet) slowJournal() {
	f.s3.Faults().Add(s3local.Fault{Delay: 2 * f.timeout, Match: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/head.json") && r.Host != f.workerHost
	}})
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
	// request runs the due check before it answers.
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		rec := httptest.NewRecorder()
		f.instances[i].handler.ServeHTTP(rec, httptest.NewRequest("GET", "/_tilesieve/health", nil))
		for _, k := range []string{"osm/3/1/1.png", "other/3/1/1.png"} {
			f.expect(i, k, 200, "", "MISS")
		}
	}

	f.change("osm/3/1/1.png", []byte("v2"))
	// Within SYNC_INTERVAL an instance may still answer from its tiers.
	f.expect(0, "osm/3/1/1.png", 200, "v1", "HIT-MEMORY")
	// At SYNC_INTERVAL the check is due: it runs beside the next answer
	// (still vouched for, so it is not delayed), and the one after it has
	// the new bytes.
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		f.expectDue(i, "osm/3/1/1.png", 200, "v1", 200, "v2", "MISS")
		f.expect(i, "other/3/1/1.png", 200, "unrelated", "HIT-MEMORY")
		if _, ok := f.instances[i].disk.Get("other/3/1/1.png"); !ok {
			t.Fatalf("instance %d: unrelated tile gone from disk", i)
		}
	}

	f.change("osm/3/1/1.png", nil)
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		f.expectDue(i, "osm/3/1/1.png", 200, "v2", 404, "", "")
	}
}

// TestRestartWithKeptDisk is the restart case: an instance is killed, the
// tile changes and the worker runs while it is down, and the instance
// restarts over the same disk directory. It must not answer from disk with
// the old bytes.
func TestRestartWithKeptDisk(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1, 16<<20)
	const key = "osm/3/1/1.png"
	f.change(key, []byte("v1"))
	f.change("other/1/1/1.png", []byte("kept"))
	f.catchUp()
	f.expect(0, key, 200, "v1", "MISS")
	f.expect(0, "other/1/1/1.png", 200, "kept", "MISS")
	f.clock.Advance(syncInterval)
	f.expect(0, key, 200, "v1", "HIT-MEMORY") // a check ran: the position is saved

	// Killed; the upload and its purge happen while it is down.
	f.change(key, []byte("v2"))
	f.clock.Advance(time.Minute)
	f.start(f.instances[0], nil)
	if err := f.instances[0].startErr; err != nil {
		t.Fatal(err)
	}
	f.expect(0, key, 200, "v2", "MISS")
	// What no purge touched is still served from the kept disk.
	f.expect(0, "other/1/1/1.png", 200, "kept", "HIT-DISK")
}

// TestRestartWithKeptDiskJournalDown: restarted over a kept disk while the
// journal cannot be read, an instance does not trust the disk: it
// revalidates each copy with S3.
func TestRestartWithKeptDiskJournalDown(t *testing.T) {
	t.Parallel()
	const key = "osm/3/1/1.png"
	f := newFleetV1(t, key)
	f.expect(0, key, 200, "v1", "MISS")
	if _, ok := f.instances[0].disk.Get(key); !ok {
		t.Fatal("v1 not on disk")
	}
	f.change(key, []byte("v2"))
	f.journalFault(http.StatusServiceUnavailable)
	f.clock.Advance(time.Minute)
	f.start(f.instances[0], nil)
	if f.instances[0].startErr == nil {
		t.Fatal("start read a failing journal")
	}
	f.expect(0, key, 200, "v2", "MISS") // the revalidation found a new version
}

// TestStagingRacesAPurge is the staging case: a purge recorded while
// staging copies a tile applies to the staged copy before the first answer.
func TestStagingRacesAPurge(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 0, 16<<20)
	const key = "stage/1/1/1.png"
	f.put(key, []byte("v1"))
	// Staging's GET of the tile is answered with v1, and v2 is uploaded and
	// its purge recorded before the answer arrives.
	f.s3.Faults().Add(s3local.Fault{
		Match: s3local.MatchGet("/tiles/" + key),
		Times: 1,
		Hold: func() {
			f.put(key, []byte("v2"))
			f.notify(0, key, false)
		},
	})
	in := &instance{dir: t.TempDir()}
	f.instances = append(f.instances, in)
	f.start(in, []string{"stage/"})
	f.s3.Faults().Reset()
	f.expect(0, key, 200, "v2", "MISS")
}

// TestJoinerAfterAPurge is the in-flight fill case: a request that arrives
// after a purge of its key must not join a fetch that began before it.
func TestJoinerAfterAPurge(t *testing.T) {
	t.Parallel()
	const key = "osm/3/1/1.png"
	f := newFleetV1(t, key)
	type answer struct {
		code     int
		body, xc string
	}
	// The first fetch gets v1 from S3; its answer is held until released.
	answered, release := make(chan struct{}), make(chan struct{})
	f.s3.Faults().Add(s3local.Fault{
		Match: s3local.MatchGet("/tiles/" + key),
		Times: 1,
		Hold:  func() { close(answered); <-release },
	})
	early := make(chan answer)
	go func() {
		c, b, x := f.get(0, key)
		early <- answer{c, b, x}
	}()
	<-answered // S3 produced v1 for the early request
	f.change(key, []byte("v2"))
	f.catchUp()
	// After the purge: a fetch of its own, not the held one (joining it
	// would wait for the release below: a deadlock the timer reports).
	late := make(chan answer, 1)
	go func() {
		c, b, x := f.get(0, key)
		late <- answer{c, b, x}
	}()
	select {
	case a := <-late:
		if a.code != 200 || a.body != "v2" || a.xc != "MISS" {
			t.Errorf("request after the purge: %+v, want 200 v2 MISS", a)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a request after the purge joined the fetch that began before it")
	}
	close(release)
	if a := <-early; a.body != "v1" {
		t.Errorf("early request: %+v (it arrived before the purge; v1 expected)", a)
	}
	// The overtaken fill was not inserted.
	f.expect(0, key, 200, "v2", "HIT-MEMORY")
}

// TestIdleWakeUpBehind1000 is the idle case: an instance frozen while
// 1,000 purges were recorded answers its first request fresh, with one
// journal GET and one tile GET.
func TestIdleWakeUpBehind1000(t *testing.T) {
	t.Parallel()
	const key = "osm/3/1/1.png"
	f := newFleetV1(t, key)
	f.expect(0, key, 200, "v1", "MISS")
	for i := range 999 {
		f.notify(0, fmt.Sprintf("other/%d/0/0.png", i), false)
	}
	f.change(key, []byte("v2"))
	f.clock.Advance(30 * time.Minute)
	before := f.instances[0].follower.Stats()
	n := f.s3Reqs.Load()
	f.expect(0, key, 200, "v2", "MISS")
	if got := f.s3Reqs.Load() - n; got != 2 {
		t.Errorf("S3 requests for the first answer after waking: %d, want 2 (the journal head, the tile)", got)
	}
	if s := f.instances[0].follower.Stats(); s.Applied != 1001 || s.PurgeAlls != before.PurgeAlls {
		t.Errorf("follower %+v, want every entry applied and nothing dropped", s)
	}
}

// TestWipedJournal is the reset case: after the journal is wiped, the first
// upload reaches instances within the bound.
func TestWipedJournal(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2, 16<<20)
	const key = "osm/3/1/1.png"
	f.change(key, []byte("v1"))
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		f.instances[i].follower.Sync(context.Background())
		f.expect(i, key, 200, "v1", "MISS")
	}
	if _, err := f.api.DeleteObject(context.Background(), &s3.DeleteObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("_tilesieve/journal/head.json"),
	}); err != nil {
		t.Fatal(err)
	}
	f.put(key, []byte("v2"))
	f.notify(1, key, false) // the other, warm, worker
	f.clock.Advance(syncInterval)
	for i := range f.instances {
		f.expectDue(i, key, 200, "v1", 200, "v2", "MISS")
	}
}

// TestJournalSlowerThanTheTimeout and a failing journal: checks never
// succeed, and copies are revalidated with S3 once the last good check is
// older than the bound, so an upload still reaches the instance in time.
func TestJournalSlowOrFailing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(*fleet)
	}{
		{"slower than the timeout", (*fleet).slowJournal},
		{"failing", func(f *fleet) { f.journalFault(http.StatusInternalServerError) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const key = "osm/3/1/1.png"
			f := newFleetV1(t, key)
			f.expect(0, key, 200, "v1", "MISS")
			f.expect(0, key, 200, "v1", "HIT-MEMORY")
			tc.fault(f)
			f.change(key, []byte("v2"))
			f.clock.Advance(bound)
			f.expect(0, key, 200, "v2", "MISS")
			// Copies fetched since are served until they are as old.
			f.clock.Advance(bound / 2)
			f.expect(0, key, 200, "v2", "HIT-MEMORY")
			f.clock.Advance(bound)
			f.expect(0, key, 200, "v2", "REVALIDATED")
			if s := f.instances[0].follower.Stats(); s.Failures == 0 || s.Applied != 1 {
				t.Errorf("follower %+v", s)
			}
		})
	}
}

// TestRandomCoherence runs random uploads, deletes, purges and reads across
// several instances with the clock advancing, two workers recording every
// event, and faults mixed in: instances killed and restarted over their
// disk (some while the journal is down, some staging), idle periods, a
// journal slower than the check timeout, and a failing one (during which
// the workers fail too, and their events are delivered again until they
// succeed, as SQS does). A checker that knows only the promise counts reads
// past the bound: there must be none.
func TestRandomCoherence(t *testing.T) {
	t.Parallel()
	const (
		instances = 3
		keys      = 12
	)
	rounds := 2000
	if testing.Short() {
		rounds = 200 // the inner loop's share; the full run is `go test` without -short
	}
	// A small memory tier, so eviction and the disk tier take part too.
	// Checks wait half the other tests' SYNC_TIMEOUT: each one in a slow
	// journal period waits it out in real time, and a healthy check that
	// misses it on a loaded machine is one more failed check, which the
	// promise (and so the checker) allows for.
	f := newFleetTimeout(t, instances, 2<<10+12*memory.EntryOverhead, syncTimeout/2)
	bound := f.bound()
	rng := rand.New(rand.NewPCG(1, 2))
	type write struct {
		at   time.Time // when the worker recorded it; zero while its event is undelivered
		body string    // "" is a delete (or the key not yet written)
	}
	type event struct {
		k, w    int // key, and the write in history[k]
		deleted bool
	}
	history := make([][]write, keys) // per key, in S3's order
	for k := range history {
		history[k] = []write{{at: f.clock.Now().Add(-time.Hour)}}
	}
	var pending []event // events not yet recorded, in S3's order
	keyName := func(k int) string { return "t/" + strconv.Itoa(k%3) + "/" + strconv.Itoa(k) + ".png" }
	version := 0
	var reads, restarts, faults, staged, redelivered int
	faulty := false

	for round := range rounds {
		// Deliver what is pending, in order, while the worker succeeds.
		for len(pending) > 0 {
			ev := pending[0]
			if err := f.tryNotify(rng.IntN(2), keyName(ev.k), ev.deleted); err != nil {
				redelivered++
				break
			}
			history[ev.k][ev.w].at = f.clock.Now()
			pending = pending[1:]
		}
		k := rng.IntN(keys)
		switch op := rng.IntN(100); {
		case op < 25: // upload
			version++
			body := fmt.Sprintf("k%d-v%d-%s", k, version, string(make([]byte, rng.IntN(200))))
			f.put(keyName(k), []byte(body))
			history[k] = append(history[k], write{body: body})
			pending = append(pending, event{k: k, w: len(history[k]) - 1})
		case op < 32: // delete
			if history[k][len(history[k])-1].body != "" {
				if _, err := f.api.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("tiles/" + keyName(k))}); err != nil {
					t.Fatal(err)
				}
				history[k] = append(history[k], write{})
				pending = append(pending, event{k: k, w: len(history[k]) - 1, deleted: true})
			}
		case op < 36: // a purge on one instance, as the admin API applies it
			f.instances[rng.IntN(instances)].srv.Engine().Purge("t/" + strconv.Itoa(rng.IntN(3)) + "/")
		case op < 40: // kill one instance and restart it over its disk
			restarts++
			var prefixes []string
			if rng.IntN(2) == 0 {
				prefixes = []string{"t/"}
				staged++
			}
			f.start(f.instances[rng.IntN(instances)], prefixes)
		case op < 44: // the journal turns slow or failing, or recovers
			f.s3.Faults().Reset()
			faulty = !faulty
			if faulty {
				faults++
				if rng.IntN(2) == 0 {
					f.slowJournal()
				} else {
					f.journalFault(http.StatusServiceUnavailable)
				}
			}
		case op < 46: // an idle period
			f.clock.Advance(time.Duration(rng.IntN(600)) * time.Second)
		default: // read
			i := rng.IntN(instances)
			code, body, xc := f.get(i, keyName(k))
			reads++
			// Acceptable answers: the newest write recorded at least the
			// bound ago, or anything newer (recorded or not).
			now := f.clock.Now()
			floor := 0
			for j, w := range history[k] {
				if !w.at.IsZero() && now.Sub(w.at) >= bound {
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
	t.Logf("%d rounds, %d reads (0 past the bound), %d versions, %d restarts (%d staging), %d journal fault periods, %d redeliveries",
		rounds, reads, version, restarts, staged, faults, redelivered)
}
