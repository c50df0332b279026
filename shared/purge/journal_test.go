package purge

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/s3local"
)

const testJournalPrefix = "_tilesieve/journal/"

func (e *env) journal(opts JournalOptions) *Journal {
	return NewJournal(e.api, testBucket, testJournalPrefix, opts)
}

func appendN(t *testing.T, j *Journal, n int, format string) {
	t.Helper()
	for i := range n {
		if _, err := j.Append(context.Background(), []string{fmt.Sprintf(format, i)}, "test"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestJournalAppendRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := newClock()
	j := e.journal(JournalOptions{Now: c.Now})
	ctx := context.Background()

	if head, err := j.Head(ctx); err != nil || head != 0 {
		t.Fatalf("empty journal head: got %d, %v", head, err)
	}
	if got, head, err := j.ReadAfter(ctx, 0, 10); err != nil || len(got) != 0 || head != 0 {
		t.Fatalf("empty journal: got %v %d %v", got, head, err)
	}
	for i, ps := range [][]string{{"osm/12/"}, {"a/1.png", "b/"}, {""}} {
		entry, err := j.Append(ctx, ps, "test")
		if err != nil {
			t.Fatal(err)
		}
		if entry.Seq != uint64(i+1) || !entry.Time.Equal(c.Now()) {
			t.Errorf("append %d: got %+v", i, entry)
		}
	}
	got, head, err := j.ReadAfter(ctx, 0, 10)
	if err != nil || head != 3 || len(got) != 3 {
		t.Fatalf("got %v %d %v", got, head, err)
	}
	if !slices.Equal(got[1].Prefixes, []string{"a/1.png", "b/"}) || got[2].Seq != 3 || got[0].Source != "test" {
		t.Errorf("entries: %+v", got)
	}
	if got, head, err := j.ReadAfter(ctx, 2, 10); err != nil || len(got) != 1 || got[0].Seq != 3 || head != 3 {
		t.Errorf("after 2: got %v %d %v", got, head, err)
	}

	// Objects are where the design says, and the head pointer is current.
	out, err := e.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("_tilesieve/journal/entries/00000000000000000002.json")})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if p := readObject(t, e, testJournalPrefix+"head"); strings.TrimSpace(p) != "3" {
		t.Errorf("head pointer: got %q", p)
	}
	// A fresh reader (a cold instance) finds the head.
	if head, err := e.journal(JournalOptions{}).Head(ctx); err != nil || head != 3 {
		t.Errorf("cold head: got %d, %v", head, err)
	}
	if _, err := j.Append(ctx, nil, "x"); err == nil {
		t.Error("empty append accepted")
	}
}

func readObject(t *testing.T, e *env, key string) string {
	t.Helper()
	out, err := e.api.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

// TestJournalNothingNewIsOneGET: the follower's common case costs one request.
func TestJournalNothingNewIsOneGET(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(JournalOptions{})
	appendN(t, j, 3, "p%d/")
	n := e.reqs.count()
	if got, head, err := j.ReadAfter(context.Background(), 3, 10); err != nil || len(got) != 0 || head != 3 {
		t.Fatalf("got %v %d %v", got, head, err)
	}
	if reqs := e.reqs.since(n); len(reqs) != 1 || !strings.HasPrefix(reqs[0], "GET ") {
		t.Errorf("requests: got %q, want one GET", reqs)
	}
	// One new entry: the GET that finds it and the one that does not.
	appendN(t, j, 1, "q%d/")
	n = e.reqs.count()
	if got, _, err := j.ReadAfter(context.Background(), 3, 10); err != nil || len(got) != 1 {
		t.Fatalf("got %v %v", got, err)
	}
	if reqs := e.reqs.since(n); len(reqs) > 3 {
		t.Errorf("requests for one new entry: %q", reqs)
	}
}

func TestJournalHeadLagsOrIsMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	j := e.journal(JournalOptions{})
	appendN(t, j, 40, "p%d/")

	// A pointer left behind by a lost update: probing finds the head in
	// O(log gap) requests.
	if _, err := s3local.Put(ctx, e.api, testBucket, testJournalPrefix+"head", []byte("3\n"), "text/plain", ""); err != nil {
		t.Fatal(err)
	}
	n := e.reqs.count()
	if head, err := e.journal(JournalOptions{}).Head(ctx); err != nil || head != 40 {
		t.Fatalf("lagging pointer: got %d, %v", head, err)
	}
	if reqs := e.reqs.since(n); len(reqs) > 14 {
		t.Errorf("lagging pointer took %d requests: %q", len(reqs), reqs)
	}

	// No pointer at all: the journal is listed.
	if _, err := e.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String(testJournalPrefix + "head")}); err != nil {
		t.Fatal(err)
	}
	cold := e.journal(JournalOptions{})
	if head, err := cold.Head(ctx); err != nil || head != 40 {
		t.Fatalf("no pointer: got %d, %v", head, err)
	}
	// Even with the oldest entries expired, an append continues the sequence.
	for seq := uint64(1); seq <= 10; seq++ {
		if _, err := e.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String(j.EntryKey(seq))}); err != nil {
			t.Fatal(err)
		}
	}
	if entry, err := e.journal(JournalOptions{}).Append(ctx, []string{"x/"}, "t"); err != nil || entry.Seq != 41 {
		t.Fatalf("append after expiry: got %+v, %v", entry, err)
	}

	// A garbled pointer counts as missing.
	if _, err := s3local.Put(ctx, e.api, testBucket, testJournalPrefix+"head", []byte("garbage"), "text/plain", ""); err != nil {
		t.Fatal(err)
	}
	if head, err := e.journal(JournalOptions{}).Head(ctx); err != nil || head != 41 {
		t.Fatalf("garbled pointer: got %d, %v", head, err)
	}
}

func TestJournalReadAfterMax(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(JournalOptions{})
	appendN(t, j, 30, "p%d/")
	got, head, err := j.ReadAfter(context.Background(), 5, 10)
	if err != nil || len(got) != 10 || head != 30 {
		t.Fatalf("got %d entries, head %d, %v", len(got), head, err)
	}
	for i, en := range got {
		if en.Seq != uint64(6+i) || en.Prefixes[0] != fmt.Sprintf("p%d/", 5+i) {
			t.Errorf("entry %d: %+v", i, en)
		}
	}
}

func TestJournalUnreadableEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(JournalOptions{})
	appendN(t, j, 3, "p%d/")
	if _, err := s3local.Put(context.Background(), e.api, testBucket, j.EntryKey(2), []byte("{not json"), "application/json", ""); err != nil {
		t.Fatal(err)
	}
	got, _, err := j.ReadAfter(context.Background(), 0, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("got %v %v", got, err)
	}
	if got[1].Seq != 2 || !slices.Equal(got[1].Prefixes, []string{""}) {
		t.Errorf("unreadable entry: got %+v, want a purge of everything", got[1])
	}
}

// TestJournalConcurrentAppend: writers racing over many rounds never lose an
// entry, and the sequence stays contiguous.
func TestJournalConcurrentAppend(t *testing.T) {
	t.Parallel()
	for _, writers := range []int{2, 4} {
		t.Run(fmt.Sprint(writers), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			const each = 50
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				// One Journal per writer, as in separate worker instances.
				j := e.journal(JournalOptions{})
				wg.Go(func() {
					for i := range each {
						if _, err := j.Append(context.Background(), []string{fmt.Sprintf("w%d/%d/", w, i)}, fmt.Sprint(w)); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			got, head, err := e.journal(JournalOptions{}).ReadAfter(context.Background(), 0, 10000)
			if err != nil {
				t.Fatal(err)
			}
			if head != uint64(writers*each) || len(got) != writers*each {
				t.Fatalf("got %d entries, head %d, want %d", len(got), head, writers*each)
			}
			seen := map[string]int{}
			next := map[string]int{}
			for i, en := range got {
				if en.Seq != uint64(i+1) {
					t.Fatalf("entry %d has seq %d", i, en.Seq)
				}
				p := en.Prefixes[0]
				seen[p]++
				// Each writer's entries appear in the order it wrote them.
				var w, k int
				fmt.Sscanf(p, "w%d/%d/", &w, &k)
				if key := fmt.Sprint(w); k != next[key] {
					t.Fatalf("writer %d: entry %d before %d", w, k, next[key])
				} else {
					next[key]++
				}
			}
			for p, n := range seen {
				if n != 1 {
					t.Errorf("%s recorded %d times", p, n)
				}
			}
		})
	}
}
