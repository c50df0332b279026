package journal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
)

const testJournalPrefix = "_tilesieve/journal/"

func (e *env) journal(opts Options) *Journal {
	return New(e.api, testBucket, testJournalPrefix, opts)
}

func appendN(t *testing.T, j *Journal, n int, format string) {
	t.Helper()
	for i := range n {
		if _, err := j.Append(context.Background(), []string{fmt.Sprintf(format, i)}, "test"); err != nil {
			t.Fatal(err)
		}
	}
}

// read reads the whole head.
func read(t *testing.T, j *Journal) Snapshot {
	t.Helper()
	s, err := j.Read(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func seqs(entries []Entry) []uint64 {
	out := make([]uint64, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Seq)
	}
	return out
}

func (e *env) deleteHead(t *testing.T) {
	t.Helper()
	if _, err := e.api.DeleteObject(context.Background(), &s3.DeleteObjectInput{
		Bucket: aws.String(testBucket), Key: aws.String(testJournalPrefix + "head.json"),
	}); err != nil {
		t.Fatal(err)
	}
}

func TestJournalAppendRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{})
	if s := read(t, j); !s.Missing || s.Seq != 0 {
		t.Fatalf("empty journal: %+v", s)
	}
	if _, err := j.Append(context.Background(), nil, "test"); !errors.Is(err, ErrNoPrefixes) {
		t.Errorf("empty purge: got %v, want ErrNoPrefixes", err)
	}
	appendN(t, j, 5, "p%d/")
	s := read(t, j)
	if s.Seq != 5 || s.Journal == "" || s.ETag == "" || !slices.Equal(seqs(s.Entries), []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("got %+v, want entries 1..5", s)
	}
	for i, en := range s.Entries {
		if want := fmt.Sprintf("p%d/", i); len(en.Prefixes) != 1 || en.Prefixes[0] != want || en.Source != "test" {
			t.Errorf("entry %d: %+v, want prefix %q", i, en, want)
		}
	}
	if head, err := j.Head(context.Background()); err != nil || head != 5 {
		t.Errorf("Head: %d %v, want 5", head, err)
	}
}

// TestJournalUnchangedIsOne304: a check that finds nothing new is one GET
// answered 304, however long the journal is.
func TestJournalUnchangedIsOne304(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{})
	appendN(t, j, 300, "p%d/")
	s := read(t, j)
	before := e.reqs.Count()
	if _, err := j.Read(context.Background(), s.ETag); !errors.Is(err, ErrUnchanged) {
		t.Fatalf("got %v, want ErrUnchanged", err)
	}
	if got := e.reqs.Since(before); len(got) != 1 || !strings.HasPrefix(got[0], "GET ") {
		t.Errorf("requests: %v, want one GET", got)
	}
}

// TestJournalWarmAppendIsOnePut: a writer that wrote the head last appends
// with one conditional PUT; a cold one probes the bucket (once per
// Journal) and reads first.
func TestJournalWarmAppendIsOnePut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{})
	before := e.reqs.Count()
	appendN(t, j, 1, "a/")
	probe, head := "PUT /"+testBucket+"/"+j.ProbeKey(), "/"+testBucket+"/"+j.HeadKey()
	if got, want := e.reqs.Since(before), []string{probe, probe, probe, "GET " + head, "PUT " + head}; !slices.Equal(got, want) {
		t.Errorf("cold append: got %v, want %v", got, want)
	}
	for _, p := range []string{"b/", "c/"} {
		before = e.reqs.Count()
		appendN(t, j, 1, p)
		if got, want := e.reqs.Since(before), []string{"PUT " + head}; !slices.Equal(got, want) {
			t.Errorf("warm append: got %v, want %v", got, want)
		}
	}
	// Another writer that moved the head: the next append reads it again,
	// without probing again.
	appendN(t, e.journal(Options{}), 1, "other/")
	before = e.reqs.Count()
	appendN(t, j, 1, "d/")
	if got, want := e.reqs.Since(before), []string{"PUT " + head, "GET " + head, "PUT " + head}; !slices.Equal(got, want) {
		t.Errorf("append after another writer's: got %v, want %v", got, want)
	}
}

// TestJournalWindow: the head keeps the most recent Window entries, and
// fewer when they would exceed MaxHeadBytes.
func TestJournalWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{Window: 10})
	appendN(t, j, 25, "p%d/")
	s := read(t, j)
	if s.Seq != 25 || s.Oldest() != 16 || len(s.Entries) != 10 {
		t.Fatalf("got seq %d, oldest %d, %d entries; want 25, 16, 10", s.Seq, s.Oldest(), len(s.Entries))
	}
	big := e.journal(Options{MaxHeadBytes: 2048})
	long := strings.Repeat("x", 200) + "/"
	for range 40 {
		if _, err := big.Append(context.Background(), []string{long}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	s = read(t, big)
	if s.Seq != 65 || len(s.Entries) == 0 || s.Entries[len(s.Entries)-1].Seq != 65 || len(s.Entries) > 8 {
		t.Fatalf("got seq %d with %d entries; want 65 with the few that fit 2 KiB", s.Seq, len(s.Entries))
	}
}

// TestJournalConcurrentWriters: writers in several processes (one Journal
// each) append at once; every entry gets its own number, none is lost, and
// the numbers are contiguous.
func TestJournalConcurrentWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const writers, each = 4, 15
	var mu sync.Mutex // guards got
	got := map[uint64]string{}
	e.appendConcurrently(writers, each, func(p string, en Entry, err error) {
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := got[en.Seq]; dup {
			t.Errorf("seq %d handed out twice: %s and %s", en.Seq, prev, p)
		}
		got[en.Seq] = p
	})
	s := read(t, e.journal(Options{}))
	if s.Seq != writers*each || len(s.Entries) != writers*each {
		t.Fatalf("head at %d with %d entries, want %d", s.Seq, len(s.Entries), writers*each)
	}
	for _, en := range s.Entries {
		if got[en.Seq] != en.Prefixes[0] {
			t.Errorf("entry %d holds %v, its writer wrote %q", en.Seq, en.Prefixes, got[en.Seq])
		}
	}
}

// TestJournalLaggingWriterNeverReusesANumber is the sequence-reuse case: a
// warm writer whose idea of the head is old (others appended meanwhile), and
// a write that failed, must neither reuse a number an instance already
// applied nor hide a later entry.
func TestJournalLaggingWriterNeverReusesANumber(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lagging, other := e.journal(Options{}), e.journal(Options{})
	appendN(t, lagging, 3, "l%d/") // lagging is warm at 3
	appendN(t, other, 4, "o%d/")   // the head moved on to 7
	// One failed write (S3 answers 503 to the PUT), then the lagging
	// writer's next append.
	e.srv.Faults().Add(s3local.Fault{Match: matchPath(http.MethodPut, "head.json"), Status: http.StatusServiceUnavailable})
	if _, err := lagging.Append(context.Background(), []string{"failed/"}, "test"); err == nil {
		t.Fatal("append through a failing PUT succeeded")
	}
	e.srv.Faults().Reset()
	en, err := lagging.Append(context.Background(), []string{"late/"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if en.Seq != 8 {
		t.Errorf("lagging writer got seq %d, want 8 (after the other writer's 7)", en.Seq)
	}
	s := read(t, lagging)
	if !slices.Equal(seqs(s.Entries), []uint64{1, 2, 3, 4, 5, 6, 7, 8}) || s.Entries[7].Prefixes[0] != "late/" {
		t.Errorf("entries %v, want 1..8 ending with late/", seqs(s.Entries))
	}
}

// TestJournalConflictRetried: S3's 409 ConditionalRequestConflict (another
// conditional write of the key in flight) is retried.
func TestJournalConflictRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{})
	e.srv.Faults().Add(s3local.Fault{Match: matchPath(http.MethodPut, "head.json"), Times: 2, Status: http.StatusConflict})
	en, err := j.Append(context.Background(), []string{"a/"}, "test")
	if err != nil || en.Seq != 1 {
		t.Fatalf("got %+v %v, want seq 1 after two conflicts", en, err)
	}
}

// TestJournalWiped: after the journal is wiped, the next append starts a new
// journal (a new id), whichever writer makes it, and writers agree on it.
func TestJournalWiped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	warm, cold := e.journal(Options{}), e.journal(Options{})
	appendN(t, warm, 3, "a%d/")
	old := read(t, warm).Journal
	e.deleteHead(t)
	en, err := warm.Append(context.Background(), []string{"b/"}, "test")
	if err != nil || en.Seq != 1 {
		t.Fatalf("warm writer after the wipe: %+v %v, want seq 1 of a new journal", en, err)
	}
	s := read(t, warm)
	if s.Journal == old || s.Journal == "" {
		t.Errorf("journal id %q after the wipe, want a new one (was %q)", s.Journal, old)
	}
	en, err = cold.Append(context.Background(), []string{"c/"}, "test")
	if err != nil || en.Seq != 2 {
		t.Fatalf("cold writer: %+v %v, want seq 2 of the same new journal", en, err)
	}
	if read(t, cold).Journal != s.Journal {
		t.Error("the cold writer started yet another journal")
	}
}

// TestJournalCorruptHead: a head that cannot be decoded is a failed read,
// and the next append replaces it with a new journal.
func TestJournalCorruptHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{})
	appendN(t, j, 2, "a%d/")
	old := read(t, j).Journal
	for _, body := range []string{"not json", `{"journal":"x","seq":5,"entries":[{"seq":3}]}`, `{"seq":1}`} {
		s3localtest.Put(t, e.api, testBucket, testJournalPrefix+"head.json", []byte(body), "application/json", "")
		if _, err := j.Read(context.Background(), ""); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: got %v, want ErrCorrupt", body, err)
		}
	}
	en, err := e.journal(Options{}).Append(context.Background(), []string{"b/"}, "test")
	if err != nil || en.Seq != 1 {
		t.Fatalf("append over a corrupt head: %+v %v", en, err)
	}
	if s := read(t, j); s.Journal == old {
		t.Error("the corrupt head was replaced by the old journal's id")
	}
}

// TestJournalHugeEntry: an entry too large to carry becomes a purge of
// everything, which covers it.
func TestJournalHugeEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.journal(Options{})
	var prefixes []string
	for i := range 5000 {
		prefixes = append(prefixes, fmt.Sprintf("some/long/directory/name/%06d/", i))
	}
	en, err := j.Append(context.Background(), prefixes, "test")
	if err != nil || len(en.Prefixes) != 1 || en.Prefixes[0] != "" {
		t.Fatalf("got %+v %v, want a purge of everything", en.Prefixes, err)
	}
}
