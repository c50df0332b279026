package stage_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// counter counts object GETs reaching the endpoint, with and without Range.
type counter struct {
	mu     sync.Mutex // guards the counts
	ranged map[string]int
	plain  map[string]int
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && !r.URL.Query().Has("list-type") {
			c.mu.Lock()
			if r.Header.Get("Range") != "" {
				c.ranged[r.URL.Path]++
			} else {
				c.plain[r.URL.Path]++
			}
			c.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func (c *counter) counts(path string) (ranged, plain int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ranged[path], c.plain[path]
}

func (c *counter) totalPlain() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.plain {
		n += v
	}
	return n
}

type env struct {
	srv *s3local.Server
	api *s3.Client
	req *counter
	o   *origin.Client
}

func start(t testing.TB) *env {
	t.Helper()
	req := &counter{ranged: map[string]int{}, plain: map[string]int{}}
	ep := s3localtest.StartBehind(t, s3local.Config{Buckets: []string{"tiles"}}, req.wrap)
	api := ep.Client
	return &env{srv: ep.Server, api: api, req: req, o: origin.NewWithS3(api, origin.Config{Bucket: "tiles", Prefix: "v1/", MaxAttempts: 2})}
}

func (e *env) put(t testing.TB, objectKey string, body []byte, ct, ce string) string {
	t.Helper()
	etag := s3localtest.Put(t, e.api, "tiles", objectKey, body, ct, ce)
	return etag
}

func openDisk(t testing.TB, maxBytes int64) *disk.Store {
	t.Helper()
	d, err := disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: maxBytes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newLog() (*slog.Logger, *syncbuf.Buffer) {
	b := &syncbuf.Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

func checkSum(t *testing.T, r stage.Report) {
	t.Helper()
	if r.Listed != r.Staged+r.Skipped+r.Failed {
		t.Errorf("report %+v: listed != staged + skipped + failed", r)
	}
}

func TestStagesPrefixesAndManifest(t *testing.T) {
	t.Parallel()
	e := start(t)
	etags := map[string]string{}
	for i := range 10 {
		k := fmt.Sprintf("osm/1/%d.mvt", i)
		etags[k] = e.put(t, "v1/"+k, []byte(strings.Repeat("m", 100+i)), "application/vnd.mapbox-vector-tile", "gzip")
	}
	for i := range 5 {
		k := fmt.Sprintf("osm/2/%d.png", i)
		etags[k] = e.put(t, "v1/"+k, []byte(strings.Repeat("p", 50)), "image/png", "")
	}
	e.put(t, "_stage/manifest.txt", []byte("# hot tiles\n\nosm/2/0.png\r\n  osm/2/1.png  \nosm/2/2.png\nosm/1/0.mvt\n../bad\nosm/9/missing.png\n"), "text/plain", "")

	log, logs := newLog()
	d := openDisk(t, 1<<20)
	rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/1/"}, Manifest: "_stage/manifest.txt", Concurrency: 4}, e.o, d, log)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if rep.Staged != 13 || rep.Failed != 1 || rep.Listed != 14 || rep.BudgetExhausted {
		t.Fatalf("report %+v, want 13 staged, 1 failed (the missing one), 14 listed", rep)
	}
	if want := int64(10*100 + 45 + 3*50); rep.Bytes != want {
		t.Errorf("bytes: got %d, want %d", rep.Bytes, want)
	}
	if d.Len() != 13 {
		t.Errorf("disk holds %d entries, want 13", d.Len())
	}
	got, ok := d.Get("osm/1/7.mvt")
	if !ok || got.ETag != etags["osm/1/7.mvt"] || got.ContentEncoding != "gzip" ||
		got.ContentType != "application/vnd.mapbox-vector-tile" || len(got.Body) != 107 || got.LastModified.IsZero() {
		t.Errorf("staged tile: %+v", got)
	}
	if _, ok := d.Get("osm/2/3.png"); ok {
		t.Error("staged a tile neither listed nor in the manifest")
	}
	for _, want := range []string{"stage: done", "manifest read", "not a tile key", "osm/9/missing.png"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}

	// Staging again finds everything listed already on disk.
	before := e.req.totalPlain()
	rep = stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/1/"}}, e.o, d, nil)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if rep.Staged != 0 || rep.Skipped != 10 {
		t.Errorf("second run: %+v, want all 10 skipped", rep)
	}
	if n := e.req.totalPlain() - before; n != 0 {
		t.Errorf("second run made %d GETs, want 0", n)
	}
}

func TestLargeObjectUsesRangedDownloads(t *testing.T) {
	t.Parallel()
	e := start(t)
	big := make([]byte, 100<<10+123)
	for i := range big {
		big[i] = byte(i * 7)
	}
	etag := e.put(t, "v1/big/archive.bin", big, "application/x-big", "")
	e.put(t, "v1/big/small.png", []byte("small"), "image/png", "")

	d := openDisk(t, 1<<20)
	rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"big/"}, LargeObject: 64 << 10, PartSize: 16 << 10}, e.o, d, nil)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if rep.Staged != 2 || rep.Failed != 0 {
		t.Fatalf("report %+v, want both staged", rep)
	}
	ranged, plain := e.req.counts("/tiles/v1/big/archive.bin")
	if ranged < 7 || plain != 0 {
		t.Errorf("large object: %d ranged GETs, %d plain, want ≥ 7 ranged (100 KiB in 16 KiB parts) and none plain", ranged, plain)
	}
	if ranged, plain := e.req.counts("/tiles/v1/big/small.png"); ranged != 0 || plain != 1 {
		t.Errorf("small object: %d ranged, %d plain, want one plain GET", ranged, plain)
	}
	got, ok := d.Get("big/archive.bin")
	if !ok || !bytes.Equal(got.Body, big) || got.ETag != etag || got.ContentType != "application/x-big" || got.LastModified.IsZero() {
		t.Fatalf("large object on disk: ok %v, %d bytes, etag %q, type %q", ok, len(got.Body), got.ETag, got.ContentType)
	}
}

func TestBudgetExhausted(t *testing.T) {
	t.Parallel()
	e := start(t)
	for i := range 300 {
		e.put(t, fmt.Sprintf("v1/osm/%03d.png", i), []byte("tile"), "image/png", "")
	}
	// A large object whose parts trickle in: it is mid-download when the
	// budget ends and must not reach the disk.
	e.put(t, "v1/osm/000-big.bin", bytes.Repeat([]byte("B"), 200<<10), "application/octet-stream", "")
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("000-big.bin"), SlowBody: 50 * time.Millisecond})
	e.srv.Faults().SetLatency(100 * time.Millisecond)

	d := openDisk(t, 1<<20)
	// 300 objects at 100ms each, 8 at a time, take ~4s: a budget of 1.5s
	// stages some of them, however busy the machine is.
	budget := 1500 * time.Millisecond
	began := time.Now()
	rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/"}, Budget: budget, Concurrency: 8,
		LargeObject: 64 << 10, PartSize: 64 << 10}, e.o, d, nil)
	el := time.Since(began)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if !rep.BudgetExhausted {
		t.Errorf("report %+v, want BudgetExhausted", rep)
	}
	if el < budget || el > budget+time.Second {
		t.Errorf("returned after %v, want near the %v budget", el, budget)
	}
	if rep.Staged == 0 || rep.Staged >= 300 {
		t.Errorf("staged %d, want some but not all", rep.Staged)
	}
	if d.Len() != rep.Staged {
		t.Errorf("disk holds %d, report says %d staged", d.Len(), rep.Staged)
	}
	if _, ok := d.Stat("osm/000-big.bin"); ok {
		t.Error("the object cut by the budget reached the disk")
	}
	// No partial or temp files: every file on disk is a verified tile.
	n := 0
	filepath.WalkDir(d.Dir(), func(path string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			n++
			if strings.Contains(de.Name(), ".tmp-") {
				t.Errorf("temp file left: %s", path)
			}
		}
		return nil
	})
	if n != d.Len() {
		t.Errorf("%d files on disk, %d indexed", n, d.Len())
	}
	d.Scan("", 0, func(it disk.Item) bool {
		if _, ok := d.Get(it.Key); !ok {
			t.Errorf("%s: unreadable", it.Key)
		}
		return true
	})
}

func TestStopsAtDiskBound(t *testing.T) {
	t.Parallel()
	e := start(t)
	body := bytes.Repeat([]byte("x"), 1000)
	for i := range 50 {
		e.put(t, fmt.Sprintf("v1/osm/%02d.png", i), body, "image/png", "")
	}
	per := openDisk(t, 1<<20).Charge("osm/00.png", &tile.Tile{Body: body, ContentType: "image/png", ETag: `"0123456789abcdef0123456789abcdef"`,
		LastModified: time.Now(), StoredAt: time.Now()})
	d := openDisk(t, 10*per+per/2)
	rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/"}, Concurrency: 4}, e.o, d, nil)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if rep.Staged < 9 || rep.Staged > 10 {
		t.Errorf("staged %d, want the 9 or 10 that fit", rep.Staged)
	}
	if rep.Listed >= 50 || rep.Skipped != 1 {
		t.Errorf("report %+v: want queuing to stop at the first object that does not fit", rep)
	}
	st := d.Stats()
	if st.Bytes > st.MaxBytes || st.Evictions != 0 || int(st.Entries) != rep.Staged {
		t.Errorf("disk %+v: want within the bound, nothing evicted", st)
	}
	if n := e.req.totalPlain(); n != rep.Staged {
		t.Errorf("%d GETs for %d staged: objects beyond the bound were fetched", n, rep.Staged)
	}
}

func TestMissingManifest(t *testing.T) {
	t.Parallel()
	e := start(t)
	for i := range 3 {
		e.put(t, fmt.Sprintf("v1/osm/%d.png", i), []byte("t"), "image/png", "")
	}
	log, logs := newLog()
	d := openDisk(t, 1<<20)
	rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/"}, Manifest: "_stage/none.txt"}, e.o, d, log)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if rep.Staged != 3 || rep.Failed != 0 {
		t.Errorf("report %+v, want the 3 prefix objects staged", rep)
	}
	if s := logs.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "manifest not read") || !strings.Contains(s, "not found") {
		t.Errorf("log does not report the missing manifest:\n%s", s)
	}
}

func TestFailuresAreCountedNotFatal(t *testing.T) {
	t.Parallel()
	e := start(t)
	for i := range 6 {
		e.put(t, fmt.Sprintf("v1/osm/%d.png", i), []byte("t"), "image/png", "")
	}
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/osm/3.png"), Status: http.StatusInternalServerError})
	e.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet("/osm/4.png"), Status: http.StatusForbidden})
	d := openDisk(t, 1<<20)
	rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/", "sat/"}}, e.o, d, nil)
	checkSum(t, rep)
	t.Logf("report %+v", rep)
	if rep.Staged != 4 || rep.Failed != 2 || rep.BudgetExhausted {
		t.Errorf("report %+v, want 4 staged, 2 failed", rep)
	}
}

func TestNothingToDo(t *testing.T) {
	t.Parallel()
	e := start(t)
	d := openDisk(t, 1<<20)
	if rep := stage.Run(context.Background(), stage.Config{}, e.o, d, nil); rep.Listed != 0 {
		t.Errorf("empty config: %+v", rep)
	}
	log, logs := newLog()
	if rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"../x"}}, e.o, d, log); rep.Listed != 0 {
		t.Errorf("bad config: %+v", rep)
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("bad config not logged: %s", logs)
	}
	if err := (stage.Config{Prefixes: []string{"a//"}, Budget: -1, Concurrency: -1, LargeObject: -1, PartSize: -1}).Validate(); err == nil ||
		strings.Count(err.Error(), "\n") != 4 {
		t.Errorf("Validate: got %v, want five problems", err)
	}
}

// BenchmarkStage compares Run with a sequential loop of GetObject (each
// body read and written to disk, as Run does) over the same 2,000 small
// objects, with 2 ms of first-byte latency standing for S3's.
func BenchmarkStage(b *testing.B) {
	const objects = 2000
	e := start(b)
	body := bytes.Repeat([]byte("t"), 2048)
	keys := make([]string, objects)
	for i := range keys {
		keys[i] = fmt.Sprintf("osm/%d/%d.png", i/100, i%100)
		e.put(b, "v1/"+keys[i], body, "image/png", "")
	}
	e.srv.Faults().SetLatency(2 * time.Millisecond)

	b.Run("staged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			d := openDisk(b, 1<<30)
			b.StartTimer()
			rep := stage.Run(context.Background(), stage.Config{Prefixes: []string{"osm/"}, Budget: time.Minute}, e.o, d, nil)
			if rep.Staged != objects {
				b.Fatalf("staged %d", rep.Staged)
			}
		}
		b.ReportMetric(float64(objects), "objects/op")
	})
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			b.StopTimer()
			d := openDisk(b, 1<<30)
			b.StartTimer()
			for _, k := range keys {
				out, err := e.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("tiles"), Key: aws.String("v1/" + k)})
				if err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Put(k, &tile.Tile{Body: got, ContentType: aws.ToString(out.ContentType), ETag: aws.ToString(out.ETag)}); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(objects), "objects/op")
	})
}
