package purge

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/s3local"
)

type followerEnv struct {
	*env
	clock *clock
	j     *Journal // the follower's
	w     *Journal // a worker's
	rec   *recorder
	f     *Follower
}

func newFollowerEnv(t *testing.T, cfg FollowerConfig) *followerEnv {
	t.Helper()
	e := newEnv(t)
	fe := &followerEnv{env: e, clock: newClock(), rec: &recorder{}}
	fe.j = e.journal(JournalOptions{})
	fe.w = e.journal(JournalOptions{})
	cfg.Now = fe.clock.Now
	fe.f = NewFollower(fe.j, fe.rec, cfg, nil)
	return fe
}

func (fe *followerEnv) append(t *testing.T, prefixes ...string) {
	t.Helper()
	if _, err := fe.w.Append(context.Background(), prefixes, "test"); err != nil {
		t.Fatal(err)
	}
}

func TestFollowerAppliesInOrder(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{})
	ctx := context.Background()
	fe.append(t, "old/") // before the instance started: not applied
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if fe.f.Applied() != 1 {
		t.Fatalf("applied after start: %d", fe.f.Applied())
	}
	fe.append(t, "osm/12/")
	fe.append(t, "a/1.png", "b/")
	fe.append(t, "c/")
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(ctx)
	want := []string{"prefix osm/12/", "prefix a/1.png", "prefix b/", "prefix c/"}
	if got := fe.rec.take(); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if fe.f.Applied() != 4 {
		t.Errorf("applied: got %d, want 4", fe.f.Applied())
	}
}

func TestFollowerRateLimited(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{Interval: time.Second})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "a/")
	// Within the interval of Start: no check, no request.
	n := fe.reqs.count()
	fe.clock.Advance(999 * time.Millisecond)
	fe.f.MaybeSync(ctx)
	if fe.reqs.count() != n || len(fe.rec.take()) != 0 {
		t.Fatal("checked before the interval passed")
	}
	fe.clock.Advance(time.Millisecond)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
		t.Fatalf("got %q", got)
	}
	// Nothing new: exactly one GET per interval, however many requests.
	for range 3 {
		fe.clock.Advance(time.Second)
		n := fe.reqs.count()
		for range 50 {
			fe.f.MaybeSync(ctx)
		}
		if reqs := fe.reqs.since(n); len(reqs) != 1 || reqs[0][:4] != "GET " {
			t.Fatalf("requests in one interval: %q", reqs)
		}
	}
	if s := fe.f.Stats(); s.Checks != 4 || s.Failures != 0 {
		t.Errorf("stats: %+v", s)
	}
}

// TestFollowerOneCheckAtATime: concurrent requests make one check; the others
// neither wait nor check.
func TestFollowerOneCheckAtATime(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{Timeout: 2 * time.Second})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "a/")
	fe.clock.Advance(time.Second)
	// Hold the check in S3 so that every other caller arrives during it.
	arrived := make(chan struct{})
	var once sync.Once
	fe.srv.Faults().Add(s3local.Fault{
		Match: func(r *http.Request) bool {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/entries/") {
				once.Do(func() { close(arrived) })
				return true
			}
			return false
		},
		Times: 1,
		Delay: time.Hour,
	})
	var checker sync.WaitGroup
	checker.Go(func() { fe.f.MaybeSync(ctx) })
	<-arrived
	start := time.Now()
	var others sync.WaitGroup
	for range 16 {
		others.Go(func() { fe.f.MaybeSync(ctx) })
	}
	others.Wait()
	if d := time.Since(start); d > time.Second {
		t.Errorf("other callers waited %v for the check", d)
	}
	checker.Wait()
	if s := fe.f.Stats(); s.Checks != 1 || s.Failures != 1 {
		t.Errorf("stats: got %+v, want one (timed out) check", s)
	}
}

func TestFollowerBehindRetention(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{Retention: 5, MaxEntries: 4})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 9 {
		fe.append(t, "x/")
	}
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("got %q, want everything dropped once", got)
	}
	if fe.f.Applied() != 9 {
		t.Errorf("applied: got %d, want the head 9", fe.f.Applied())
	}
	// Within retention it reads, in several reads if need be.
	for range 5 {
		fe.append(t, "y/")
	}
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); len(got) != 5 || got[0] != "prefix y/" {
		t.Errorf("got %q, want 5 purges", got)
	}
}

func TestFollowerSilentTooLong(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{MaxSilence: 10 * time.Minute})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Frozen for long, nothing appended meanwhile: the tiers are current.
	fe.clock.Advance(time.Hour)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); len(got) != 0 {
		t.Errorf("nothing appended: got %q", got)
	}
	// Frozen for long while something was appended: drop everything.
	fe.append(t, "a/")
	fe.clock.Advance(11 * time.Minute)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("got %q, want everything dropped", got)
	}
	if fe.f.Applied() != 1 {
		t.Errorf("applied: %d", fe.f.Applied())
	}
	// Failing checks count as silence too.
	fe.srv.Faults().Add(s3local.Fault{Status: http.StatusInternalServerError})
	for range 11 {
		fe.clock.Advance(time.Minute)
		fe.f.MaybeSync(ctx)
	}
	fe.srv.Faults().Reset()
	fe.append(t, "b/")
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("after failing checks: got %q, want everything dropped", got)
	}
}

func TestFollowerEntriesGone(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{VerifyEvery: time.Minute})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		fe.append(t, "x/")
	}
	// The entries this instance needs expire before it reads them.
	for seq := uint64(1); seq <= 3; seq++ {
		if _, err := fe.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String(fe.w.EntryKey(seq))}); err != nil {
			t.Fatal(err)
		}
	}
	fe.clock.Advance(time.Minute)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("got %q, want everything dropped", got)
	}
	if fe.f.Applied() != 5 {
		t.Errorf("applied: got %d, want 5", fe.f.Applied())
	}
}

func TestFollowerJournalReset(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{VerifyEvery: time.Minute})
	ctx := context.Background()
	for range 5 {
		fe.append(t, "x/")
	}
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The journal is wiped and starts again.
	out, err := fe.api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(testBucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out.Contents {
		if _, err := fe.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: o.Key}); err != nil {
			t.Fatal(err)
		}
	}
	w := fe.env.journal(JournalOptions{})
	if _, err := w.Append(ctx, []string{"new/"}, "t"); err != nil {
		t.Fatal(err)
	}
	fe.clock.Advance(time.Minute)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("got %q, want everything dropped", got)
	}
	if fe.f.Applied() != 1 {
		t.Errorf("applied: got %d, want 1", fe.f.Applied())
	}
	if _, err := w.Append(ctx, []string{"next/"}, "t"); err != nil {
		t.Fatal(err)
	}
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix next/"}) {
		t.Errorf("got %q", got)
	}
}

func TestFollowerFailedCheck(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{Timeout: 100 * time.Millisecond})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "a/")

	// S3 answers 500: the check fails quietly, within its timeout.
	fe.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/entries/"), Status: http.StatusInternalServerError})
	fe.clock.Advance(time.Second)
	start := time.Now()
	fe.f.MaybeSync(ctx)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("failed check took %v", d)
	}
	if got := fe.rec.take(); len(got) != 0 || fe.f.Applied() != 0 {
		t.Errorf("failed check applied %q", got)
	}

	// S3 hangs: the check gives up at its timeout.
	fe.srv.Faults().Reset()
	fe.srv.Faults().SetLatency(time.Hour)
	fe.clock.Advance(time.Second)
	start = time.Now()
	fe.f.MaybeSync(ctx)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("hung check took %v, timeout 100ms", d)
	}
	if s := fe.f.Stats(); s.Failures != 2 {
		t.Errorf("failures: got %d, want 2", s.Failures)
	}

	// Not retried within the interval; retried after it, and catches up.
	fe.srv.Faults().Reset()
	fe.f.MaybeSync(ctx)
	if fe.f.Applied() != 0 {
		t.Error("retried within the interval")
	}
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
		t.Errorf("after recovery: got %q", got)
	}
}

func TestFollowerCancelledRequestDoesNotCutCheck(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{})
	if err := fe.f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "a/")
	fe.clock.Advance(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/"}) {
		t.Errorf("got %q", got)
	}
}

func TestFollowerStartFailed(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{})
	fe.append(t, "a/")
	fe.srv.Faults().Add(s3local.Fault{Status: http.StatusForbidden})
	if err := fe.f.Start(context.Background()); err == nil {
		t.Fatal("start succeeded against a failing S3")
	}
	fe.srv.Faults().Reset()
	fe.append(t, "b/")
	fe.clock.Advance(time.Second)
	fe.f.MaybeSync(context.Background())
	if got := fe.rec.take(); !slices.Equal(got, []string{"all"}) {
		t.Errorf("got %q, want everything dropped", got)
	}
	if fe.f.Applied() != 2 {
		t.Errorf("applied: got %d, want 2", fe.f.Applied())
	}
}

func TestFollowerUnreadableEntry(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s3local.Put(ctx, fe.api, testBucket, fe.w.EntryKey(1), []byte("garbage"), "application/json", ""); err != nil {
		t.Fatal(err)
	}
	fe.append(t, "b/")
	fe.clock.Advance(time.Second)
	if err := fe.f.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fe.rec.take(); !slices.Equal(got, []string{"all", "prefix b/"}) {
		t.Errorf("got %q", got)
	}
}

func TestFollowerGapInTheMiddle(t *testing.T) {
	t.Parallel()
	fe := newFollowerEnv(t, FollowerConfig{VerifyEvery: time.Minute})
	ctx := context.Background()
	if err := fe.f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a/", "b/", "c/", "d/"} {
		fe.append(t, p)
	}
	if _, err := fe.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String(fe.w.EntryKey(3))}); err != nil {
		t.Fatal(err)
	}
	fe.clock.Advance(time.Minute)
	fe.f.MaybeSync(ctx)
	if got := fe.rec.take(); !slices.Equal(got, []string{"prefix a/", "prefix b/", "all"}) {
		t.Errorf("got %q", got)
	}
	if fe.f.Applied() != 4 {
		t.Errorf("applied: got %d, want 4", fe.f.Applied())
	}
}
