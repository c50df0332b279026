package follower

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

type followerEnv struct {
	*env
	clock *clock
	j     *journal.Journal // the follower's
	w     *journal.Journal // a worker's
	rec   *recorder
	f     *Follower
}

func newFollowerEnv(t *testing.T, cfg Config) *followerEnv {
	t.Helper()
	e := newEnv(t)
	fe := &followerEnv{env: e, clock: newClock(), rec: &recorder{}}
	fe.j = e.journal(journal.Options{})
	fe.w = e.journal(journal.Options{})
	cfg.Now = fe.clock.Now
	fe.f = New(fe.j, fe.rec, cfg, nil)
	return fe
}

func (fe *followerEnv) append(t *testing.T, prefixes ...string) {
	t.Helper()
	if _, err := fe.w.Append(context.Background(), prefixes, "test"); err != nil {
		t.Fatal(err)
	}
}

// startAt restarts the follower with its position saved at pos, and
// starts it.
func (fe *followerEnv) startAt(t *testing.T, pos journal.PositionFile) {
	t.Helper()
	fe.restart(Config{Position: pos})
	if err := fe.f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// syncAfter lets d pass and has the follower check the journal, as a
// request would.
func (fe *followerEnv) syncAfter(ctx context.Context, d time.Duration) {
	fe.clock.Advance(d)
	fe.f.MaybeSync(ctx)
}

// restart is a new follower of the same journal over the same position
// file: a process restarted over a kept disk tier.
func (fe *followerEnv) restart(cfg Config) {
	cfg.Now = fe.clock.Now
	fe.rec = &recorder{}
	fe.f = New(fe.env.journal(journal.Options{}), fe.rec, cfg, nil)
}

func TestFollowerAppliesInOrder(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{})
	ctx := context.Background()
	fe.append(t, "old/") // before the instance started, whose tiers are empty: not applied
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fe.rec.take(); fe.f.Applied() != 1 || len(got) != 0 {
		t.Fatalf("after start: applied %d, purged %q; want 1 and nothing", fe.f.Applied(), got)
	}
	fe.append(t, "osm/12/")
	fe.append(t, "a/1.png", "b/")
	fe.append(t, "c/")
	fe.syncAfter(ctx, time.Second)
	want := []string{"prefix osm/12/", "prefix a/1.png", "prefix b/", "prefix c/"}
	if got := fe.rec.take(); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if fe.f.Applied() != 4 {
		t.Errorf("applied: got %d, want 4", fe.f.Applied())
	}
}

// TestFollowerRateLimited: at most one check per interval, and a check
// that finds nothing is one GET answered 304.
func TestFollowerRateLimited(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{Interval: time.Second})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "a/")
	n := fe.reqs.Count()
	fe.syncAfter(ctx, 999*time.Millisecond)
	if fe.reqs.Count() != n || len(fe.rec.take()) != 0 {
		t.Fatal("checked before the interval passed")
	}
	fe.syncAfter(ctx, time.Millisecond)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
		t.Fatalf("got %q", got)
	}
	for range 3 {
		fe.clock.Advance(time.Second)
		n := fe.reqs.Count()
		for range 50 {
			fe.f.MaybeSync(ctx)
		}
		if reqs := fe.reqs.Since(n); len(reqs) != 1 || reqs[0][:4] != "GET " {
			t.Fatalf("requests in one interval: %q", reqs)
		}
	}
	if s := fe.f.Stats(); s.Checks != 5 || s.Unchanged != 3 || s.Failures != 0 {
		t.Errorf("stats: %+v, want 5 checks (one at start), 3 unchanged", s)
	}
}

// TestFollowerOneCheckAtATime: concurrent requests make one check; while
// the last good check still vouches, the others do not wait for it.
func TestFollowerOneCheckAtATime(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{Interval: time.Second, Timeout: 5 * time.Second})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "a/")
	fe.clock.Advance(time.Second)
	release := make(chan struct{})
	arrived := make(chan struct{})
	var once sync.Once
	fe.srv.Faults().Add(s3local.Fault{Match: func(r *http.Request) bool {
		if r.Method == http.MethodGet {
			once.Do(func() { close(arrived) })
			<-release
		}
		return false
	}})
	done := make(chan struct{})
	go func() { fe.f.MaybeSync(ctx); close(done) }()
	<-arrived
	n := fe.reqs.Count()
	for range 20 {
		fe.f.MaybeSync(ctx) // returns at once: the check is taken and Start's still vouches
	}
	close(release)
	<-done
	if fe.reqs.Count() != n {
		t.Errorf("%d more requests while a check was in flight", fe.reqs.Count()-n)
	}
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
		t.Errorf("got %q", got)
	}
}

// TestFollowerIdleWakeUpBehind1000 is the idle wake-up case: an instance
// frozen while 1,000 entries were appended catches up in one GET, applying
// every one of them.
func TestFollowerIdleWakeUpBehind1000(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	appendN(t, fe.w, 1000, "p%d/")
	fe.clock.Advance(10 * time.Minute)
	n := fe.reqs.Count()
	fe.f.MaybeSync(ctx)
	if got := fe.reqs.Since(n); len(got) != 1 {
		t.Errorf("catch-up requests: %v, want one GET", got)
	}
	if got := fe.rec.take(); len(got) != 1000 || got[999] != "prefix p999/" {
		t.Errorf("applied %d purges, want 1000 ending with p999/", len(got))
	}
	if fe.f.Applied() != 1000 || fe.f.Stats().PurgeAlls != 0 {
		t.Errorf("stats %+v", fe.f.Stats())
	}
}

// TestFollowerBehindTheWindow: an instance further behind than the head
// keeps drops both tiers, in one GET.
func TestFollowerBehindTheWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clk := newClock()
	rec := &recorder{}
	f := New(e.journal(journal.Options{}), rec, Config{Now: clk.Now}, nil)
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendN(t, e.journal(journal.Options{Window: 50}), 120, "p%d/")
	clk.Advance(time.Second)
	f.MaybeSync(context.Background())
	if got := rec.take(); !slices.Equal(got, []string{"all"}) || f.Applied() != 120 {
		t.Errorf("got %q at %d, want everything dropped, at 120", got, f.Applied())
	}
}

// TestFollowerJournalWiped is the journal-reset case: a wiped journal is
// noticed at the next check (its head is gone), and so is the new journal
// the next upload creates; both drop the tiers.
func TestFollowerJournalWiped(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{})
	ctx := context.Background()
	fe.append(t, "a/")
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fe.deleteHead(t)
	fe.syncAfter(ctx, time.Second)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Fatalf("after the wipe: %q, want everything dropped", got)
	}
	fe.append(t, "b/") // a new journal, seq 1
	fe.syncAfter(ctx, time.Second)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix b/"}) {
		t.Fatalf("first entry of the new journal: %q, want it applied", got)
	}
	// Wiped and written again between two checks: a new id.
	fe.deleteHead(t)
	fe.append(t, "c/")
	fe.syncAfter(ctx, time.Second)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Fatalf("new journal id: %q, want everything dropped", got)
	}
}

// TestFollowerFailClosed: with the journal failing or slower than the
// check timeout, the follower stops vouching for cached copies once its
// last good check is older than Interval+Timeout; a copy fetched since is
// trusted. A later good check vouches again and applies what was missed.
func TestFollowerFailClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault s3local.Fault
	}{
		{"failing", s3local.Fault{Match: matchPath(http.MethodGet, "head.json"), Status: http.StatusServiceUnavailable}},
		{"slower than the timeout", s3local.Fault{Match: matchPath(http.MethodGet, "head.json"), Delay: 4 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A timeout generous enough that a good check never hits it on
			// a loaded machine; the slow journal is slower still.
			const timeout = time.Second
			fe := newFollowerEnv(t, Config{Interval: time.Second, Timeout: timeout})
			ctx := context.Background()
			if err := fe.f.Start(ctx); err != nil {
				t.Fatal(err)
			}
			cached := fe.clock.Now()
			fe.append(t, "a/")
			fe.srv.Faults().Add(tc.fault)
			fe.syncAfter(ctx, time.Second)
			if !fe.f.Trusted(cached, fe.clock.Now()) {
				t.Fatal("distrusted within Interval+Timeout of the last good check")
			}
			fe.clock.Advance(timeout + time.Millisecond)
			now := fe.clock.Now()
			if fe.f.Trusted(cached, now) {
				t.Fatal("a copy older than the last good check + Interval + Timeout is still trusted")
			}
			if !fe.f.Trusted(now.Add(-time.Second), now) {
				t.Error("a copy fetched after the horizon is not trusted")
			}
			if s := fe.f.Stats(); s.Failures != 1 || fe.f.Applied() != 0 {
				t.Errorf("stats %+v", s)
			}
			fe.srv.Faults().Reset()
			fe.syncAfter(ctx, time.Second)
			if !fe.f.Trusted(cached, fe.clock.Now()) || fe.f.Applied() != 1 {
				t.Errorf("after a good check: trusted %v, applied %d", fe.f.Trusted(cached, fe.clock.Now()), fe.f.Applied())
			}
			if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
				t.Errorf("got %q", got)
			}
		})
	}
}

// TestFollowerStartFailed: a start that cannot read the journal vouches
// for nothing; the first good check applies everything since the position
// the tiers were at (here: empty tiers of a new journal, so every entry).
func TestFollowerStartFailed(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{})
	ctx := context.Background()
	fe.srv.Faults().Add(s3local.Fault{Match: matchPath(http.MethodGet, "head.json"), Times: 1, Status: http.StatusInternalServerError})
	if err := fe.f.Start(ctx); err == nil {
		t.Fatal("start succeeded through a failing journal")
	}
	if s := fe.f.Stats(); s.Failures != 1 || !s.LastOK.IsZero() {
		t.Errorf("stats %+v, want one failure and no good check", s)
	}
	if fe.f.Trusted(fe.clock.Now().Add(-5*time.Second), fe.clock.Now()) {
		t.Error("an unverified copy is trusted")
	}
	fe.append(t, "a/")
	fe.syncAfter(ctx, time.Second)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
		t.Errorf("got %q, want the entry applied", got)
	}
}

// TestFollowerRestartWithKeptDisk is the restart case: the position saved
// with the disk tier makes a restarted process apply what it missed while
// it was down, before anything is served, and nothing more.
func TestFollowerRestartWithKeptDisk(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{})
	pos := tempPosition(t)
	ctx := context.Background()
	fe.append(t, "before/")
	fe.startAt(t, pos)
	// No position saved yet: what the disk holds is of unknown age.
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Fatalf("first start: %q, want the kept disk dropped", got)
	}
	fe.append(t, "seen/")
	fe.syncAfter(ctx, time.Second)
	fe.rec.take()
	// The process dies; two purges are recorded while it is down.
	fe.append(t, "missed/1/")
	fe.append(t, "missed/2/")
	fe.startAt(t, pos)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix missed/1/", "prefix missed/2/"}) {
		t.Fatalf("restart: %q, want exactly the two missed purges", got)
	}
	if p, ok, err := pos.Load(); err != nil || !ok || p.Seq != 4 {
		t.Errorf("saved position %+v %v %v, want seq 4", p, ok, err)
	}
}

// TestFollowerStartEmpty: over tiers that hold nothing, a start that reads
// the journal drops nothing and applies nothing recorded so far, saves the
// head as the disk tier's position (so a restart over what is then put in
// the tiers applies only what comes after), and applies what comes after
// it. When its read fails, the first good check drops both tiers: what was
// put in them meanwhile may be older than a purge it did not see.
func TestFollowerStartEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("read", func(t *testing.T) {
		t.Parallel()
		fe := newFollowerEnv(t, Config{})
		pos := tempPosition(t)
		fe.append(t, "before/1/")
		fe.append(t, "before/2/")
		fe.restart(Config{Position: pos})
		if err := fe.f.StartEmpty(ctx); err != nil {
			t.Fatal(err)
		}
		if got := fe.rec.take(); len(got) != 0 || fe.f.Stats().PurgeAlls != 0 {
			t.Fatalf("start over empty tiers: %q, %d purge-alls; want nothing", got, fe.f.Stats().PurgeAlls)
		}
		if p, ok, err := pos.Load(); err != nil || !ok || p.Seq != 2 {
			t.Fatalf("saved position %+v %v %v, want seq 2", p, ok, err)
		}
		fe.append(t, "after/")
		fe.syncAfter(ctx, time.Second)
		if got := fe.rec.take(); !slices.Equal(got, []string{"prefix after/"}) {
			t.Errorf("check after the start: %q, want the new entry", got)
		}
		fe.append(t, "missed/")
		fe.startAt(t, pos)
		if got := fe.rec.take(); !slices.Equal(got, []string{"prefix missed/"}) {
			t.Errorf("restart: %q, want the purge missed while down", got)
		}
	})
	t.Run("read failed", func(t *testing.T) {
		t.Parallel()
		fe := newFollowerEnv(t, Config{})
		fe.append(t, "before/")
		fe.restart(Config{Position: tempPosition(t)})
		fe.srv.Faults().Add(s3local.Fault{Match: matchPath(http.MethodGet, "head.json"), Times: 1, Status: http.StatusInternalServerError})
		if err := fe.f.StartEmpty(ctx); err == nil {
			t.Fatal("start succeeded through a failing journal")
		}
		fe.syncAfter(ctx, time.Second)
		if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
			t.Errorf("first good check: %q, want both tiers dropped", got)
		}
	})
}

// TestFollowerUnlinkFailureNotSaved: a purge that left files on disk is not
// recorded as applied there, so a restart applies it again; a later purge
// of everything that succeeds moves the saved position on.
func TestFollowerUnlinkFailureNotSaved(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, Config{})
	pos := tempPosition(t)
	ctx := context.Background()
	fe.startAt(t, pos)
	fe.append(t, "ro/")
	fe.append(t, "later/")
	fe.rec.setFail(true)
	fe.syncAfter(ctx, time.Second)
	if p, _, _ := pos.Load(); p.Seq != 0 {
		t.Fatalf("saved position %d after a purge that left files, want 0", p.Seq)
	}
	fe.startAt(t, pos)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix ro/", "prefix later/"}) {
		t.Fatalf("restart: %q, want both purges applied again", got)
	}
	if p, _, _ := pos.Load(); p.Seq != 2 {
		t.Errorf("saved position %d, want 2", p.Seq)
	}
}
