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
	const key, other = "a/0.png", "b/0.png"
	for _, tc := range []struct {
		name     string
		window   int  // the journal's window; 0: journal.DefaultWindow
		inFlight bool // the first check runs while the fill's GET is under way
		disk     bool // an empty disk tier beside memory, its position in a file
		// more appends entries beside the purge of a/ (after the follower
		// began); fresh: no journal before that purge.
		more  [][]string
		fresh bool
		other tiers.Source // where b/0.png (fetched before the check, purged only before the start) comes from after it
	}{
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
			ctx := context.Background()
			e := newEnv(t)
			clock := newClock()
			opts := journal.Options{Now: clock.Now, Window: tc.window}
			worker := e.journal(opts)
			put := func(k, body string) {
				t.Helper()
				s3localtest.Put(t, e.api, testBucket, "tiles/"+k, []byte(body), "image/png", "")
			}
			appendAt := func(prefixes ...string) {
				t.Helper()
				if _, err := worker.Append(ctx, prefixes, "test"); err != nil {
					t.Fatal(err)
				}
			}
			put(key, "v1")
			put(other, "b1")
			if !tc.fresh {
				// A purge of b/ recorded well before the follower begins:
				// no copy the tiers will hold is older than it.
				clock.Advance(-2 * ClockMargin)
				appendAt("b/")
				clock.Advance(2 * ClockMargin)
			}

			mem, err := memory.New(memory.Config{MaxBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			fcfg := Config{Interval: time.Second, Timeout: 10 * time.Second, Now: clock.Now}
			var d *disk.Store
			if tc.disk {
				dir := t.TempDir()
				if d, err = disk.Open(disk.Config{Dir: dir, MaxBytes: 1 << 20}, nil); err != nil {
					t.Fatal(err)
				}
				fcfg.Position = journal.PositionFile{Path: filepath.Join(dir, journal.PositionFileName)}
			}
			var f *Follower
			eng, err := tiers.New(tiers.Config{Now: clock.Now, RevalidateAfter: time.Hour}, tiers.Deps{
				Memory: mem, Disk: d,
				Origin: origin.NewWithS3(e.api, origin.Config{Bucket: testBucket, Prefix: "tiles/", Now: clock.Now}),
				Follow: func(eng *tiers.Engine) tiers.Syncer {
					f = New(e.journal(journal.Options{Now: clock.Now}), eng, fcfg, nil)
					return f
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			f.Defer(clock.Now())
			clock.Advance(time.Second)

			// A first check that fails (S3 refuses the head) leaves the next
			// one a second away, so the fills below run before any check
			// succeeds, in the order the test sets.
			e.srv.Faults().Add(s3local.Fault{Match: matchPath("GET", "journal/head.json"), Status: 403})
			if err := f.Sync(ctx); err == nil {
				t.Fatal("first check: got no error, want the refused head's")
			}
			e.srv.Faults().Reset()

			get := func(k string) (string, tiers.Source) {
				t.Helper()
				r, err := eng.Get(ctx, k, clock.Now())
				if err != nil {
					t.Fatal(err)
				}
				return string(r.Tile.Body), r.Source
			}
			if body, src := get(other); body != "b1" || src != tiers.FromOrigin {
				t.Fatalf("%s before the first check: got %v %q, want %v %q", other, src, body, tiers.FromOrigin, "b1")
			}
			checked := false
			// S3 has read v1 for the fill; before the fill receives it, v2
			// replaces it and the worker records the purge.
			e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/tiles/" + key), Times: 1, Hold: func() {
				put(key, "v2")
				appendAt("a/")
				for _, p := range tc.more {
					appendAt(p...)
				}
				if tc.inFlight {
					checked = true
					if err := f.Sync(ctx); err != nil {
						t.Errorf("first good check, fill under way: %v", err)
					}
				}
			}})
			if body, src := get(key); body != "v1" || src != tiers.FromOrigin {
				t.Fatalf("the fill: got %v %q, want %v %q", src, body, tiers.FromOrigin, "v1")
			}
			if !checked {
				if err := f.Sync(ctx); err != nil {
					t.Fatalf("first good check: %v", err)
				}
			}
			if body, src := get(key); body != "v2" || src != tiers.FromOrigin {
				t.Errorf("%s after the first good check: got %v %q, want %v %q", key, src, body, tiers.FromOrigin, "v2")
			}
			if _, src := get(other); src != tc.other {
				t.Errorf("%s after the first good check: got %v, want %v", other, src, tc.other)
			}
			if tc.disk {
				pos, ok, err := fcfg.Position.Load()
				if err != nil || !ok || pos.Seq != f.Applied() || pos.Seq == 0 {
					t.Errorf("saved position: got %+v %v %v, want seq %d", pos, ok, err, f.Applied())
				}
			}
		})
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
