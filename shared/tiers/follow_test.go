package tiers_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// TestFollowerBuiltWithTheEngine: the follower set with Engine.Follow purges
// the engine. A due check runs beside an answer the last check still
// vouches for, and the answers after it have the new version; past the
// vouched window the check runs first (fail closed).
func TestFollowerBuiltWithTheEngine(t *testing.T) {
	t.Parallel()
	r := newOutageRig(t)
	api, clock := r.api, r.clock
	eng, fol, j := followedEngine(t, r)
	ctx := context.Background()
	put := func(body string) {
		t.Helper()
		s3localtest.Put(t, api, bucket, "tiles/a/1/0/0.png", []byte(body), "image/png", "")
	}
	get := func() tiers.Result {
		t.Helper()
		r, err := eng.Get(ctx, "a/1/0/0.png", clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put("old")
	steps := []struct {
		name   string
		before func()
		src    tiers.Source
		body   string
	}{
		{"miss", nil, tiers.FromOrigin, "old"},
		{"hit, no check due", nil, tiers.FromMemory, "old"},
		{"check due, copy still vouched for: answered at once", func() {
			put("new")
			if _, err := j.Append(ctx, []string{"a/"}, "test"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second)
		}, tiers.FromMemory, "old"},
		{"after the check beside it", eng.Drain, tiers.FromOrigin, "new"},
		{"hit again", nil, tiers.FromMemory, "new"},
		{"past the vouched window: the check first", func() {
			put("newer")
			if _, err := j.Append(ctx, []string{"a/"}, "test"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(12 * time.Second) // Interval + Timeout is 11s
		}, tiers.FromOrigin, "newer"},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		r := get()
		if r.Source != s.src || string(r.Tile.Body) != s.body {
			t.Fatalf("%s: got %v %q, want %v %q", s.name, r.Source, r.Tile.Body, s.src, s.body)
		}
	}
	if got, want := fol.Stats().Checks, uint64(3); got != want {
		t.Errorf("journal checks: got %v, want %v", got, want)
	}
}

// TestCheckAheadOfTheAnswer: a check soon due (within its lead, four times
// the last check's duration) or due starts beside a hit and never delays
// it while the last good check still vouches for the copy: the hit returns
// while S3 holds the journal GET. Only a request past the vouched window
// (Interval + Timeout after the last good check began) waits for it.
func TestCheckAheadOfTheAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		advance time.Duration // after the first answer; the lead is 500ms of a 1s Interval
		waits   bool
	}{
		{"soon due", 300 * time.Millisecond, false},
		{"due", 900 * time.Millisecond, false},
		// The start's check began 300ms before the first answer; a copy
		// is vouched for until Interval + Timeout (11s) after it began.
		{"past the vouched window", 10800 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newOutageRig(t)
			// The check at start takes 300ms on the engine's clock.
			r.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/head.json"), Times: 1, Hold: func() { r.clock.Advance(300 * time.Millisecond) }})
			eng, fol := followedHit(t, r)
			ctx, key := context.Background(), followedKey
			r.clock.Advance(tc.advance)
			// S3 reads the journal head and holds its answer until release.
			held, release := make(chan struct{}), make(chan struct{})
			r.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/head.json"), Times: 1, Hold: func() { close(held); <-release }})
			t.Cleanup(eng.Drain)
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			lastOK := fol.Stats().LastOK
			type answer struct {
				res    tiers.Result
				err    error
				lastOK time.Time // the follower's last good check as the answer returned
			}
			done := make(chan answer, 1)
			go func() {
				res, err := eng.Get(ctx, key, r.clock.Now())
				done <- answer{res, err, fol.Stats().LastOK}
			}()
			var a answer
			if tc.waits {
				<-held
				close(release)
				a = <-done
				if got, want := a.lastOK, r.clock.Now(); !got.Equal(want) {
					t.Errorf("last good check as the answer returned: got %v, want %v (the check it waited for)", got, want)
				}
			} else {
				select {
				case a = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("a vouched hit waited for the held journal check")
				}
				if got, want := a.lastOK, lastOK; !got.Equal(want) {
					t.Errorf("last good check as the answer returned: got %v, want %v (the held check not ended)", got, want)
				}
				select {
				case <-held: // the check started ahead reached S3
				case <-time.After(10 * time.Second):
					t.Fatal("no check started ahead of the due time")
				}
			}
			if a.err != nil || a.res.Source != tiers.FromMemory || string(a.res.Tile.Body) != "v1" {
				t.Fatalf("got %v %v, want %v v1", a.res.Source, a.err, tiers.FromMemory)
			}
		})
	}
}

// BenchmarkMemoryHitJournal20ms measures memory hits, one a millisecond,
// while every journal GET takes 20ms and a check is due every 100ms (1% of
// the hits find one due): p50, p99, p99.9 and the slowest of the hits'
// latency, beside the same hits without a follower (the floor). Run it with
// a fixed count: -benchtime=3000x.
func BenchmarkMemoryHitJournal20ms(b *testing.B) {
	for _, follow := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-follower", true: "journal-20ms"}[follow], func(b *testing.B) {
			benchMemoryHits(b, follow)
		})
	}
}

func benchMemoryHits(b *testing.B, follow bool) {
	r := newOutageRig(b)
	mem, err := memory.New(memory.Config{MaxBytes: 16 << 20})
	if err != nil {
		b.Fatal(err)
	}
	j := journal.New(r.api, bucket, "_tilesieve/journal/", journal.Options{})
	var fol *follower.Follower
	deps := tiers.Deps{Memory: mem, Origin: origin.NewWithS3(r.api, origin.Config{Bucket: bucket, Prefix: "tiles/"})}
	eng, err := tiers.New(tiers.Config{RevalidateAfter: 24 * time.Hour}, deps)
	if err != nil {
		b.Fatal(err)
	}
	if follow {
		fol = follower.New(j, eng, follower.Config{Interval: 100 * time.Millisecond, Timeout: time.Second}, nil)
		eng.Follow(fol)
	}
	b.Cleanup(eng.Drain)
	r.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/head.json"), Delay: 20 * time.Millisecond})
	ctx := context.Background()
	if fol != nil {
		if err := fol.Start(ctx); err != nil {
			b.Fatal(err)
		}
	}
	const key = "a/1/0/0.png"
	r.put(key, "v1")
	if _, err := eng.Get(ctx, key, time.Now()); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for range b.N {
		<-tick.C // pacing: one request a millisecond, as a busy instance gets them
		began := time.Now()
		res, err := eng.Get(ctx, key, began)
		lat = append(lat, time.Since(began))
		if err != nil || res.Source != tiers.FromMemory {
			b.Fatalf("got %v %v, want %v", res.Source, err, tiers.FromMemory)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	at := func(q float64) float64 { return float64(lat[int(float64(len(lat)-1)*q)].Nanoseconds()) }
	b.ReportMetric(at(0.5), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
	b.ReportMetric(at(0.999), "p99.9-ns")
	b.ReportMetric(at(1), "max-ns")
	b.ReportMetric(at(0.99)/max(at(0.5), 1), "p99/p50")
	if fol != nil {
		b.ReportMetric(float64(fol.Stats().Checks), "checks")
	}
}

// TestFailedCheckNotWaitedFor: past the vouched window, a request waits for
// the journal check only while the journal answers. Once the last check
// failed, waiting for the next would cost its whole timeout and most
// likely vouch for nothing, so the check runs beside the request and the
// copy is revalidated with S3: the answer returns while S3 holds the
// journal GET.
func TestFailedCheckNotWaitedFor(t *testing.T) {
	t.Parallel()
	r := newOutageRig(t)
	eng, fol := followedHit(t, r)
	ctx, key := context.Background(), followedKey
	// A due check, beside a vouched hit, fails.
	r.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/head.json"), Times: 1, Status: http.StatusServiceUnavailable})
	r.clock.Advance(1100 * time.Millisecond)
	if _, err := eng.Get(ctx, key, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	eng.Drain()
	if !fol.Unreachable() {
		t.Fatal("the failing check was not recorded")
	}
	// Past the vouched window (Interval + Timeout, 11s), with the journal
	// GET held by S3 until the test ends.
	r.clock.Advance(11 * time.Second)
	held, release := make(chan struct{}), make(chan struct{})
	r.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/head.json"), Times: 1, Hold: func() { close(held); <-release }})
	t.Cleanup(eng.Drain)
	t.Cleanup(func() { close(release) })
	type answer struct {
		res tiers.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := eng.Get(ctx, key, r.clock.Now())
		done <- answer{res, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the request waited for the held journal check after the last one failed")
	}
	if a.err != nil || a.res.Source != tiers.Revalidated || string(a.res.Tile.Body) != "v1" {
		t.Fatalf("got %v %v %q, want %v v1", a.res.Source, a.err, a.res.Tile.Body, tiers.Revalidated)
	}
	select {
	case <-held: // the check runs beside the answer
	case <-time.After(10 * time.Second):
		t.Fatal("no check started beside the answer")
	}
}

// followedKey is the tile followedHit puts and reads.
const followedKey = "a/1/0/0.png"

// followedHit is followedEngine with v1 of followedKey in S3 and, read
// once, in the memory tier.
func followedHit(t *testing.T, r *outageRig) (*tiers.Engine, *follower.Follower) {
	t.Helper()
	eng, fol, _ := followedEngine(t, r)
	r.put(followedKey, "v1")
	if _, err := eng.Get(context.Background(), followedKey, r.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return eng, fol
}

// followedEngine is an engine over a memory tier and the rig's S3, with a
// follower of the rig's journal j (Interval 1s, Timeout 10s), started.
func followedEngine(t *testing.T, r *outageRig) (*tiers.Engine, *follower.Follower, *journal.Journal) {
	t.Helper()
	mem, err := memory.New(memory.Config{MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	j := journal.New(r.api, bucket, "_tilesieve/journal/", journal.Options{Now: r.clock.Now})
	eng, err := tiers.New(tiers.Config{Now: r.clock.Now, RevalidateAfter: 24 * time.Hour}, tiers.Deps{
		Memory: mem,
		Origin: origin.NewWithS3(r.api, origin.Config{Bucket: bucket, Prefix: "tiles/", Now: r.clock.Now}),
	})
	if err != nil {
		t.Fatal(err)
	}
	fol := follower.New(j, eng, follower.Config{Interval: time.Second, Timeout: 10 * time.Second, Now: r.clock.Now}, nil)
	eng.Follow(fol)
	if err := fol.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng, fol, j
}
