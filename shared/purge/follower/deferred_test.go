package follower

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// deferredCase is one case of TestDeferredFirstCheckKeepsEveryPurge.
type deferredCase struct {
	name     string
	window   int  // the journal's window; 0: journal.DefaultWindow
	inFlight bool // the first check runs while the fill's GET is under way
	disk     bool // an empty disk tier beside memory, its position in a file
	// more appends entries beside the purge of a/ (after the follower
	// began); fresh: no journal before that purge.
	more  [][]string
	fresh bool
	other tiers.Source // where b/0.png (fetched before the check, purged only before the start) comes from after it
}

// The keys of TestDeferredFirstCheckKeepsEveryPurge.
const deferredKey, deferredOther = "a/0.png", "b/0.png"

// TestDeferredFirstCheckKeepsEveryPurge: a follower begun with Defer reads
// the journal only once requests run, so a fill can begin before its first
// check reads the head. The object is replaced after the fill's GET began
// and its purge recorded before the head is read: the entry is at or below
// the head the check adopts, and the bytes the fill holds must not outlive
// the check, whether the fill ended before the check or ends after it. What
// was recorded before the follower began (less ClockMargin) is not applied
// again; a head that no longer holds every entry since then drops what the
// tiers took in.
func TestDeferredFirstCheckKeepsEveryPurge(t *testing.T) {
	t.Parallel()
	for _, tc := range []deferredCase{
		{name: "fill ended before the first check", other: tiers.FromMemory},
		{name: "fill under way across the first check", inFlight: true, other: tiers.FromMemory},
		{name: "with an empty disk tier", disk: true, other: tiers.FromMemory},
		{name: "unrelated entries since the start", more: [][]string{{"c/"}, {"d/"}}, other: tiers.FromMemory},
		{name: "entries since the start out of the head's window", window: 2, more: [][]string{{"c/"}, {"d/"}}, other: tiers.FromOrigin},
		{name: "journal first written since the start", fresh: true, other: tiers.FromMemory},
		{name: "journal first written since the start, fill under way", fresh: true, inFlight: true, other: tiers.FromMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkDeferredCase(t, tc)
		})
	}
}

// deferredRig is one instance whose follower was begun with Defer and
// whose first check failed, and the worker's journal beside it.
type deferredRig struct {
	e      *env
	clock  *clock
	worker *journal.Journal
	eng    *tiers.Engine
	f      *Follower
	fcfg   Config
}

func (r *deferredRig) put(t *testing.T, k, body string) {
	t.Helper()
	s3localtest.Put(t, r.e.api, testBucket, "tiles/"+k, []byte(body), "image/png", "")
}

func (r *deferredRig) appendAt(t *testing.T, prefixes ...string) {
	t.Helper()
	if _, err := r.worker.Append(context.Background(), prefixes, "test"); err != nil {
		t.Fatal(err)
	}
}

func (r *deferredRig) get(t *testing.T, k string) (string, tiers.Source) {
	t.Helper()
	res, err := r.eng.Get(context.Background(), k, r.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Tile.Body), res.Source
}

// newDeferredRig puts both keys' first versions, records a purge of b/
// well before the follower begins (unless tc.fresh), and begins the
// follower with Defer.
func newDeferredRig(t *testing.T, tc deferredCase) *deferredRig {
	t.Helper()
	r := &deferredRig{e: newEnv(t), clock: newClock()}
	r.worker = r.e.journal(journal.Options{Now: r.clock.Now, Window: tc.window})
	r.put(t, deferredKey, "v1")
	r.put(t, deferredOther, "b1")
	if !tc.fresh {
		// A purge of b/ recorded well before the follower begins:
		// no copy the tiers will hold is older than it.
		r.clock.Advance(-2 * ClockMargin)
		r.appendAt(t, "b/")
		r.clock.Advance(2 * ClockMargin)
	}

	mem, err := memory.New(memory.Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r.fcfg = Config{Interval: time.Second, Timeout: 10 * time.Second, Now: r.clock.Now}
	var d *disk.Store
	if tc.disk {
		dir := t.TempDir()
		if d, err = disk.Open(disk.Config{Dir: dir, MaxBytes: 1 << 20}, nil); err != nil {
			t.Fatal(err)
		}
		r.fcfg.Position = journal.PositionFile{Path: filepath.Join(dir, journal.PositionFileName)}
	}
	r.eng, err = tiers.New(tiers.Config{Now: r.clock.Now, RevalidateAfter: time.Hour}, tiers.Deps{
		Memory: mem, Disk: d,
		Origin: origin.NewWithS3(r.e.api, origin.Config{Bucket: testBucket, Prefix: "tiles/", Now: r.clock.Now}),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.f = New(r.e.journal(journal.Options{Now: r.clock.Now}), r.eng, r.fcfg, nil)
	r.eng.Follow(r.f)
	r.f.Defer(r.clock.Now())
	r.clock.Advance(time.Second)
	return r
}

func checkDeferredCase(t *testing.T, tc deferredCase) {
	ctx := context.Background()
	r := newDeferredRig(t, tc)
	const key, other = deferredKey, deferredOther

	// A first check that fails (S3 refuses the head) leaves the next
	// one a second away, so the fills below run before any check
	// succeeds, in the order the test sets.
	r.e.srv.Faults().Add(s3local.Fault{Match: matchPath("GET", "journal/head.json"), Status: 403})
	if err := r.f.Sync(ctx); err == nil {
		t.Fatal("first check: got no error, want the refused head's")
	}
	r.e.srv.Faults().Reset()

	if body, src := r.get(t, other); body != "b1" || src != tiers.FromOrigin {
		t.Fatalf("%s before the first check: got %v %q, want %v %q", other, src, body, tiers.FromOrigin, "b1")
	}
	checked := false
	// S3 has read v1 for the fill; before the fill receives it, v2
	// replaces it and the worker records the purge.
	r.e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/" + key), Times: 1, Hold: func() {
		r.put(t, key, "v2")
		r.appendAt(t, "a/")
		for _, p := range tc.more {
			r.appendAt(t, p...)
		}
		if tc.inFlight {
			checked = true
			if err := r.f.Sync(ctx); err != nil {
				t.Errorf("first good check, fill under way: %v", err)
			}
		}
	}})
	if body, src := r.get(t, key); body != "v1" || src != tiers.FromOrigin {
		t.Fatalf("the fill: got %v %q, want %v %q", src, body, tiers.FromOrigin, "v1")
	}
	if !checked {
		if err := r.f.Sync(ctx); err != nil {
			t.Fatalf("first good check: %v", err)
		}
	}
	if body, src := r.get(t, key); body != "v2" || src != tiers.FromOrigin {
		t.Errorf("%s after the first good check: got %v %q, want %v %q", key, src, body, tiers.FromOrigin, "v2")
	}
	if _, src := r.get(t, other); src != tc.other {
		t.Errorf("%s after the first good check: got %v, want %v", other, src, tc.other)
	}
	if tc.disk {
		pos, ok, err := r.fcfg.Position.Load()
		if err != nil || !ok || pos.Seq != r.f.Applied() || pos.Seq == 0 {
			t.Errorf("saved position: got %+v %v %v, want seq %d", pos, ok, err, r.f.Applied())
		}
	}
}

// TestDeferredFirstCheckAppliesOnlyAfterALookup: a deferred follower's first
// good check applies the entries recorded since it began only when a lookup
// asked Trusted before the head was read (a fill may have begun); with none,
// it takes the head as its position and purges nothing.
func TestDeferredFirstCheckAppliesOnlyAfterALookup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lookup bool
		want   []string
	}{
		{name: "no lookup before the check", want: nil},
		{name: "a lookup before the check", lookup: true, want: []string{"prefix a/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fe := newFollowerEnv(t, Config{})
			fe.w = fe.journal(journal.Options{Now: fe.clock.Now}) // entries on the test's clock
			fe.append(t, "old/")
			fe.clock.Advance(2 * ClockMargin)
			fe.f.Defer(fe.clock.Now())
			fe.append(t, "a/")
			if tc.lookup {
				fe.f.Trusted(time.Time{}, fe.clock.Now())
			}
			if err := fe.f.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := fe.rec.take(); !slices.Equal(got, tc.want) {
				t.Errorf("purges: got %v, want %v", got, tc.want)
			}
			if got, want := fe.f.Applied(), uint64(2); got != want {
				t.Errorf("applied: got %v, want %v", got, want)
			}
			// Later checks apply what follows, as usual.
			fe.append(t, "b/")
			fe.clock.Advance(time.Second)
			fe.f.Trusted(time.Time{}, fe.clock.Now())
			if err := fe.f.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got, want := fe.rec.take(), []string{"prefix b/"}; !slices.Equal(got, want) {
				t.Errorf("purges of the next check: got %v, want %v", got, want)
			}
		})
	}
}
