package journal

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
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
			head, err := e.journal(Options{}).Read(context.Background(), "")
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
			j := e.journal(Options{})
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
	j := e.journal(Options{})
	for range 2 {
		before := e.reqs.Count()
		if err := j.Verify(context.Background()); !errors.Is(err, ErrNoConditionalWrites) {
			t.Fatalf("got %v, want ErrNoConditionalWrites", err)
		}
		if n := e.reqs.Count() - before; n != 2 {
			t.Errorf("refused verify: got %d requests, want 2 (a probe each time)", n)
		}
	}
	e.srv.SetIgnoreWriteConditions(false)
	for i, want := range []int{3, 0, 0} {
		before := e.reqs.Count()
		if err := j.Verify(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := e.reqs.Count() - before; n != want {
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
	reqs := &s3localtest.RequestLog{}
	ep := s3localtest.StartBehind(b, s3local.Config{Buckets: []string{testBucket}}, reqs.Counting)
	j := New(ep.Client, testBucket, testJournalPrefix, Options{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Probe(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(reqs.Count())/float64(b.N), "requests/op")
}
