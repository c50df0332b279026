package purge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
)

// stores are the two kinds of S3 the journal may be deployed against.
var stores = []struct {
	name   string
	ignore bool // the store accepts If-Match / If-None-Match on PUT and ignores them
}{
	{"honouring", false},
	{"ignoring", true},
}

// TestJournalConcurrentWritersNoSilentLoss: two writers append at once.
// Against a store that honours conditional writes every append lands;
// against one that ignores them every append is refused with
// ErrNoConditionalWrites. Either way, no append that reported success is
// missing from the journal.
func TestJournalConcurrentWritersNoSilentLoss(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.srv.SetIgnoreWriteConditions(st.ignore)
			const writers, each = 2, 30
			var mu sync.Mutex  // guards landed and errs
			var landed []Entry // the appends that reported success
			var errs []error
			e.appendConcurrently(writers, each, func(_ string, en Entry, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				} else {
					landed = append(landed, en)
				}
			})
			head, err := e.journal(JournalOptions{}).Read(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			inHead := map[uint64]string{}
			for _, en := range head.Entries {
				inHead[en.Seq] = en.Prefixes[0]
			}
			lost := 0
			for _, en := range landed {
				if inHead[en.Seq] != en.Prefixes[0] {
					lost++
				}
			}
			if lost != 0 {
				t.Errorf("%d of %d appends reported success and are not in the journal", lost, len(landed))
			}
			checkRefusals(t, st.ignore, writers*each, len(landed), errs)
		})
	}
}

// TestWorkerConcurrentNoSilentLoss: two sync workers (two processes) handle
// SQS batches at once. Every batch either lands in the journal or has its
// messages reported failed, so that SQS delivers them again and, after its
// retries, to the dead-letter queue.
func TestWorkerConcurrentNoSilentLoss(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			ep := s3localtest.StartConfig(t, s3local.Config{Buckets: []string{workerBucket}, IgnoreWriteConditions: st.ignore})
			const workers, batches = 2, 15
			var wg sync.WaitGroup
			var mu sync.Mutex // guards failed and errs
			failed := map[string]bool{}
			var errs []error
			var logs syncbuf.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			for w := range workers {
				j := NewJournal(ep.Client, workerBucket, workerJournal, JournalOptions{Logger: log})
				wk := testWorker{NewWorker(WorkerConfig{Bucket: workerBucket, TilesPrefix: "tiles/"}, NewPurger(j, PurgerConfig{}, log), log)}
				wg.Go(func() {
					for b := range batches {
						seq := w*batches + b
						key := fmt.Sprintf("w%d/%d/0/0.png", w, b)
						out, err := wk.Handle(context.Background(), sqsBatch(t, "ObjectCreated:Put", []string{key}, seq))
						if err != nil {
							t.Error(err)
							return
						}
						ids := failedIDs(t, out)
						mu.Lock()
						for _, id := range ids {
							failed[id] = true
						}
						if len(ids) != 0 {
							errs = append(errs, fmt.Errorf("batch %d failed", seq))
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			head, err := NewJournal(ep.Client, workerBucket, workerJournal, JournalOptions{}).Read(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			inHead := map[string]bool{}
			for _, en := range head.Entries {
				for _, p := range en.Prefixes {
					inHead[p] = true
				}
			}
			silent, landed := 0, 0
			for w := range workers {
				for b := range batches {
					seq := w*batches + b
					id, key := fmt.Sprintf("m-%07d", seq), fmt.Sprintf("w%d/%d/0/0.png", w, b)
					switch {
					case inHead[key]:
						landed++
					case !failed[id]:
						silent++
					}
				}
			}
			if silent != 0 {
				t.Errorf("%d of %d batches reported handled and are not in the journal", silent, workers*batches)
			}
			if st.ignore && landed != 0 || !st.ignore && landed != workers*batches {
				t.Errorf("got %d batches in the journal, %d failed; want %d in it", landed, len(errs), map[bool]int{false: workers * batches}[st.ignore])
			}
			// The operator is told why, naming the missing S3 feature.
			if got := strings.Contains(logs.String(), "does not honour conditional writes"); got != st.ignore {
				t.Errorf("log names the missing feature: got %v, want %v; log:\n%s", got, st.ignore, logs.String())
			}
		})
	}
}

// checkRefusals checks the outcome of n appends, of which ok succeeded:
// against an ignoring store all were refused with ErrNoConditionalWrites,
// against an honouring one none failed.
func checkRefusals(t *testing.T, ignore bool, n, ok int, errs []error) {
	t.Helper()
	if !ignore {
		if ok != n || len(errs) != 0 {
			t.Errorf("got %d appends landed and errors %v, want all %d landed", ok, errors.Join(errs...), n)
		}
		return
	}
	if ok != 0 {
		t.Errorf("got %d appends landed, want every one refused", ok)
	}
	for _, err := range errs {
		if !errors.Is(err, ErrNoConditionalWrites) {
			t.Errorf("got %v, want ErrNoConditionalWrites", err)
			return
		}
	}
}

// TestJournalProbe: the probe's requests and verdict against stores that
// honour conditional writes, ignore them (both, or If-Match only), do not
// implement them, or refuse the writer.
func TestJournalProbe(t *testing.T) {
	t.Parallel()
	conditional := func(header string) func(*http.Request) bool {
		return func(r *http.Request) bool { return r.Method == http.MethodPut && r.Header.Get(header) != "" }
	}
	tests := []struct {
		name     string
		ignore   bool
		faults   []s3local.Fault
		statuses []int
		refused  bool   // the error wraps ErrNoConditionalWrites
		errText  string // in the error; "" for none
	}{
		{"honouring", false, nil, []int{200, 412, 412}, false, ""},
		{"ignoring", true, nil, []int{200, 200}, true, "ignores If-None-Match: * on PUT"},
		{"ignoring If-Match only", true, []s3local.Fault{{Match: conditional("If-None-Match"), Status: http.StatusPreconditionFailed}},
			[]int{200, 412, 200}, true, "ignores If-Match on PUT"},
		{"not implemented", false, []s3local.Fault{{Match: conditional("If-None-Match"), Status: http.StatusNotImplemented}},
			[]int{200, 501}, true, "answered 501"},
		{"conflict is a refusal", false, []s3local.Fault{{Match: conditional("If-Match"), Status: http.StatusConflict}},
			[]int{200, 412, 409}, false, ""},
		{"access denied", false, []s3local.Fault{{Match: matchPath(http.MethodPut, "probe.json"), Status: http.StatusForbidden}},
			[]int{403}, false, "probe of conditional writes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.srv.SetIgnoreWriteConditions(tc.ignore)
			for _, f := range tc.faults {
				e.srv.Faults().Add(f)
			}
			j := e.journal(JournalOptions{})
			steps, err := j.Probe(context.Background())
			var got []int
			for _, s := range steps {
				got = append(got, s.Status)
			}
			if !slices.Equal(got, tc.statuses) {
				t.Errorf("statuses: got %v, want %v", got, tc.statuses)
			}
			if errors.Is(err, ErrNoConditionalWrites) != tc.refused || (err == nil) != (tc.errText == "") ||
				err != nil && !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("got %v, want an error with %q (refused: %v)", err, tc.errText, tc.refused)
			}
			// Append goes by the same verdict, and writes no head when it refuses.
			_, aerr := j.Append(context.Background(), []string{"a/"}, "test")
			if (aerr == nil) != (err == nil) || errors.Is(aerr, ErrNoConditionalWrites) != tc.refused {
				t.Errorf("append: got %v, want the probe's verdict %v", aerr, err)
			}
			if s := read(t, j); aerr != nil && !s.Missing {
				t.Errorf("refused append left a head: %+v", s)
			}
		})
	}
}

// TestJournalVerifyOnce: a passed probe is remembered, so later appends cost
// nothing more; a failed one is not, so a store that is fixed is used.
func TestJournalVerifyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.SetIgnoreWriteConditions(true)
	j := e.journal(JournalOptions{})
	for range 2 {
		before := e.reqs.count()
		if err := j.Verify(context.Background()); !errors.Is(err, ErrNoConditionalWrites) {
			t.Fatalf("got %v, want ErrNoConditionalWrites", err)
		}
		if n := e.reqs.count() - before; n != 2 {
			t.Errorf("refused verify: got %d requests, want 2 (a probe each time)", n)
		}
	}
	e.srv.SetIgnoreWriteConditions(false)
	for i, want := range []int{3, 0, 0} {
		before := e.reqs.count()
		if err := j.Verify(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := e.reqs.count() - before; n != want {
			t.Errorf("verify %d: got %d requests, want %d", i, n, want)
		}
	}
	if en, err := j.Append(context.Background(), []string{"a/"}, "test"); err != nil || en.Seq != 1 {
		t.Errorf("append after the store was fixed: got %+v %v, want seq 1", en, err)
	}
}

// BenchmarkJournalProbe is the once-per-process cost of Verify against the
// in-process endpoint: its requests and its time.
func BenchmarkJournalProbe(b *testing.B) {
	reqs := &requestLog{}
	ep := s3localtest.StartBehind(b, s3local.Config{Buckets: []string{testBucket}}, reqs.counting)
	j := NewJournal(ep.Client, testBucket, testJournalPrefix, JournalOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Probe(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(reqs.count())/float64(b.N), "requests/op")
}
