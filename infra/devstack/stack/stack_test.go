package stack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/s3notify"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

// mapEnv is an environment that holds only m, so the tests do not depend on
// the variables of the machine that runs them.
func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// events collects the notifications the stack delivered to its worker.
type events struct {
	mu   sync.Mutex // guards list
	list []s3notify.Delivery
}

func (e *events) add(d s3notify.Delivery) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, d)
}

func (e *events) all() []s3notify.Delivery {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]s3notify.Delivery(nil), e.list...)
}

func startEmbedded(t *testing.T, ev *events) *stack.Stack {
	t.Helper()
	return startEmbeddedEnv(t, ev, nil)
}

// startEmbeddedEnv is startEmbedded with settings of the tile function.
func startEmbeddedEnv(t *testing.T, ev *events, env map[string]string) *stack.Stack {
	t.Helper()
	opts := stack.Options{
		Env:         mapEnv(env),
		Embedded:    true,
		S3Addr:      "127.0.0.1:0",
		Addr:        "127.0.0.1:0",
		Seed:        true,
		SeedMaxZoom: 2,
	}
	if ev != nil {
		opts.OnEvent = ev.add
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return startStack(ctx, t, opts)
}

// startStack starts a stack with opts, closed when the test ends.
func startStack(ctx context.Context, t *testing.T, opts stack.Options) *stack.Stack {
	t.Helper()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st
}

type answer struct {
	status int
	cache  string
	body   []byte
}

func get(t *testing.T, url string) answer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("X-Cache"), b}
}

// eventually polls url until done accepts an answer. This is an end-to-end
// test of a real asynchronous loop (S3 event → worker → journal → the
// function's next check), so it polls with a deadline rather than a clock.
func eventually(t *testing.T, what, url string, done func(answer) bool) answer {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := get(t, url)
		if done(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %d %s after 5s", what, a.status, a.cache)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func put(t *testing.T, st *stack.Stack, key string, body []byte) {
	t.Helper()
	s3localtest.Put(t, st.Client, st.Tiles.Bucket, st.Tiles.TilesPrefix+key, body, "image/png", "")
}

func render(t *testing.T, s demotiles.Spec) []byte {
	t.Helper()
	b, err := demotiles.Render(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUploadDeleteCopyPurgeTheFunction(t *testing.T) {
	t.Parallel()
	ev := &events{}
	st := startEmbedded(t, ev)
	tileURL := st.TileURL(2, 1, 1)

	// A demo tile: a 256×256 PNG, from S3 first, then from memory.
	first := get(t, tileURL)
	if first.status != http.StatusOK || first.cache != "MISS" {
		t.Fatalf("first GET: got %d %s, want 200 MISS", first.status, first.cache)
	}
	img, err := png.Decode(bytes.NewReader(first.body))
	if err != nil {
		t.Fatalf("demo tile is not a PNG: %v", err)
	}
	if sz := img.Bounds().Size(); sz.X != 256 || sz.Y != 256 {
		t.Fatalf("demo tile is %v, want 256×256", sz)
	}
	if again := get(t, tileURL); again.cache != "HIT-MEMORY" || !bytes.Equal(again.body, first.body) {
		t.Fatalf("second GET: got %s, want HIT-MEMORY with the same bytes", again.cache)
	}

	// Upload: the function serves the new bytes within the sync interval,
	// fetched from S3 again, and never the old ones after that.
	updated := render(t, demotiles.Spec{Z: 2, X: 1, Y: 1, Caption: "UPDATED", Fill: color.RGBA{0xFF, 0xE0, 0x40, 0xFF}})
	put(t, st, demotiles.Key(2, 1, 1), updated)
	a := eventually(t, "after the upload", tileURL, func(a answer) bool { return !bytes.Equal(a.body, first.body) })
	if a.status != http.StatusOK || a.cache != "MISS" || !bytes.Equal(a.body, updated) {
		t.Fatalf("after the upload: got %d %s (%d bytes), want 200 MISS with the uploaded bytes", a.status, a.cache, len(a.body))
	}
	if a := get(t, tileURL); a.cache != "HIT-MEMORY" || !bytes.Equal(a.body, updated) {
		t.Fatalf("after the refill: got %s, want HIT-MEMORY with the uploaded bytes", a.cache)
	}

	// DELETE: the tile becomes 404.
	if _, err := st.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{
		Bucket: aws.String(st.Tiles.Bucket), Key: aws.String(st.Tiles.TilesPrefix + demotiles.Key(2, 1, 1)),
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "after the delete", tileURL, func(a answer) bool { return a.status == http.StatusNotFound })

	// Multi-delete of two tiles; a third, cached in the same column, stays.
	gone1, gone2, kept := st.TileURL(2, 0, 0), st.TileURL(2, 0, 1), st.TileURL(2, 0, 2)
	for _, u := range []string{gone1, gone2, kept} {
		if a := get(t, u); a.status != http.StatusOK {
			t.Fatalf("GET %s: %d", u, a.status)
		}
	}
	out, err := st.Client.DeleteObjects(context.Background(), &s3.DeleteObjectsInput{
		Bucket: aws.String(st.Tiles.Bucket),
		Delete: &types.Delete{Objects: []types.ObjectIdentifier{
			{Key: aws.String(st.Tiles.TilesPrefix + demotiles.Key(2, 0, 0))},
			{Key: aws.String(st.Tiles.TilesPrefix + demotiles.Key(2, 0, 1))},
		}},
	})
	if err != nil || len(out.Deleted) != 2 {
		t.Fatalf("multi-delete: %v, %d deleted", err, len(out.Deleted))
	}
	eventually(t, "after the multi-delete", gone1, func(a answer) bool { return a.status == http.StatusNotFound })
	eventually(t, "after the multi-delete", gone2, func(a answer) bool { return a.status == http.StatusNotFound })
	if a := get(t, kept); a.status != http.StatusOK || a.cache != "HIT-MEMORY" {
		t.Fatalf("a tile the multi-delete did not name: got %d %s, want 200 HIT-MEMORY", a.status, a.cache)
	}

	// COPY onto a cached tile: the function serves the copied bytes.
	target := st.TileURL(2, 2, 2)
	before := get(t, target)
	source := get(t, st.TileURL(1, 0, 0))
	if _, err := st.Client.CopyObject(context.Background(), &s3.CopyObjectInput{
		Bucket:     aws.String(st.Tiles.Bucket),
		Key:        aws.String(st.Tiles.TilesPrefix + demotiles.Key(2, 2, 2)),
		CopySource: aws.String(st.Tiles.Bucket + "/" + st.Tiles.TilesPrefix + demotiles.Key(1, 0, 0)),
	}); err != nil {
		t.Fatal(err)
	}
	a = eventually(t, "after the copy", target, func(a answer) bool { return !bytes.Equal(a.body, before.body) })
	if !bytes.Equal(a.body, source.body) || a.cache != "MISS" {
		t.Fatalf("after the copy: got %s, want MISS with the source's bytes", a.cache)
	}

	// The notifications: one per change, in order, all delivered, none for
	// the seed or the journal's own writes. The function serves the copy as
	// soon as the worker has written the journal, which is before the
	// notifier records the delivery: Flush waits for that record.
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	if err := st.Notifier.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, key string }{
		{"ObjectCreated:Put", "demo/2/1/1.png"},
		{"ObjectRemoved:Delete", "demo/2/1/1.png"},
		{"ObjectRemoved:Delete", "demo/2/0/0.png"},
		{"ObjectRemoved:Delete", "demo/2/0/1.png"},
		{"ObjectCreated:Copy", "demo/2/2/2.png"},
	}
	got := ev.all()
	if len(got) != len(want) {
		t.Fatalf("got %d notifications, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Name != w.name || got[i].Key != st.Tiles.TilesPrefix+w.key || got[i].Err != nil {
			t.Errorf("notification %d: got %s %s (err %v), want %s %s", i, got[i].Name, got[i].Key, got[i].Err, w.name, st.Tiles.TilesPrefix+w.key)
		}
	}
}

func TestEventsEncodeKeysAsS3Does(t *testing.T) {
	t.Parallel()
	ev := &events{}
	st := startEmbedded(t, ev)
	key := "demo/a b+c/0/0/0.png"
	url := st.URL + "/demo/a%20b+c/0/0/0.png"

	v1 := render(t, demotiles.Spec{Caption: "V1"})
	put(t, st, key, v1)
	if a := eventually(t, "first version", url, func(a answer) bool { return a.status == http.StatusOK }); !bytes.Equal(a.body, v1) {
		t.Fatal("first version: wrong bytes")
	}
	if a := get(t, url); a.cache != "HIT-MEMORY" {
		t.Fatalf("got %s, want HIT-MEMORY", a.cache)
	}
	v2 := render(t, demotiles.Spec{Caption: "V2"})
	put(t, st, key, v2)
	eventually(t, "second version", url, func(a answer) bool { return bytes.Equal(a.body, v2) })

	// Outside TILES_PREFIX: no notification (the template's filter).
	s3localtest.Put(t, st.Client, st.Tiles.Bucket, "elsewhere/x.png", v1, "image/png", "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := st.Notifier.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	got := ev.all()
	if len(got) != 2 {
		t.Fatalf("got %d notifications, want 2: %+v", len(got), got)
	}
	var seqs []string
	for _, d := range got {
		if !bytes.Contains(d.Event, []byte(`"key":"tiles/demo/a+b%2Bc/0/0/0.png"`)) {
			t.Errorf("notification %s: key not encoded as S3 does", d.Event)
		}
		b, err := s3event.Decode(d.Event)
		if err != nil || len(b.Changes) != 1 {
			t.Fatalf("decode %s: %v %+v", d.Event, err, b)
		}
		c := b.Changes[0]
		if c.Key != st.Tiles.TilesPrefix+key || c.Bucket != st.Tiles.Bucket || c.Kind != s3event.Created || c.Event != "ObjectCreated:Put" {
			t.Errorf("decoded %+v, want a Put of %q", c, st.Tiles.TilesPrefix+key)
		}
		if c.Size != int64(len(v1)) && c.Size != int64(len(v2)) {
			t.Errorf("size %d, want the object's", c.Size)
		}
		var rec struct {
			Records []map[string]any
		}
		json.Unmarshal(d.Event, &rec)
		if len(rec.Records) != 1 || rec.Records[0]["eventVersion"] != "2.1" || rec.Records[0]["awsRegion"] != s3local.DefaultRegion {
			t.Errorf("record %s: want one record, version 2.1, region %s", d.Event, s3local.DefaultRegion)
		}
		seqs = append(seqs, c.Sequencer)
	}
	if s3event.CompareSequencer(seqs[0], seqs[1]) >= 0 {
		t.Errorf("sequencers %v do not rise", seqs)
	}
}

func TestCloseDeliversQueuedEvents(t *testing.T) {
	t.Parallel()
	ev := &events{}
	st := startEmbedded(t, ev)
	for i := range 5 {
		put(t, st, demotiles.Key(2, i%4, 3), render(t, demotiles.Spec{Z: 2, X: i % 4, Y: 3, Caption: "NEW"}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := ev.all()
	if len(got) != 5 {
		t.Fatalf("got %d notifications delivered by Close, want 5", len(got))
	}
	for _, d := range got {
		if d.Err != nil {
			t.Errorf("%s: %v", d.Key, d.Err)
		}
	}
}

func TestViewerAtRootDoesNotShadowTiles(t *testing.T) {
	t.Parallel()
	st := startEmbedded(t, nil)
	page := get(t, st.URL+"/")
	if page.status != http.StatusOK || !bytes.Contains(page.body, []byte("<title>")) {
		t.Fatalf("GET /: %d", page.status)
	}
	// Any absolute URL on the page is one of the stack's own (the printed
	// commands); nothing is fetched from the internet.
	html := strings.ToLower(string(page.body))
	for _, scheme := range []string{"http://", "https://", "src=\"//", "href=\"//"} {
		for rest := html; ; {
			i := strings.Index(rest, scheme)
			if i < 0 {
				break
			}
			rest = rest[i+len(scheme):]
			if !strings.HasPrefix(rest, "127.0.0.1:") {
				t.Errorf("the page refers to %s%.30s: it must need nothing from the internet", scheme, rest)
			}
		}
	}
	if a := get(t, st.TileURL(0, 0, 0)); a.status != http.StatusOK {
		t.Fatalf("tile: %d", a.status)
	}
	if a := get(t, st.URL+"/_tilesieve/health"); a.status != http.StatusOK || !strings.Contains(string(a.body), `"ok"`) {
		t.Fatalf("health: %d %s", a.status, a.body)
	}
	if a := get(t, st.URL+"/index.html"); a.status != http.StatusNotFound || a.cache == "" {
		t.Fatalf("a path that is not a tile goes to the function: got %d X-Cache %q, want its 404", a.status, a.cache)
	}
}

// TestExternalS3FromTheEnvironment points the stack at an S3 it did not
// start, configured only through the environment, as with LocalStack.
func TestExternalS3FromTheEnvironment(t *testing.T) {
	s3e := s3localtest.Start(t, "other")
	// The AWS SDK reads credentials from the process environment.
	s3localtest.IsolateEnv(t)
	s3localtest.EnvCredentials(t)
	t.Setenv("AWS_REGION", s3local.DefaultRegion)
	env := mapEnv(map[string]string{
		"AWS_ENDPOINT_URL":    s3e.URL,
		"TILES_BUCKET":        "other",
		"TILES_PREFIX":        "pyramid/",
		"S3_FORCE_PATH_STYLE": "true",
		"DISK_CACHE_BYTES":    "0",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{Env: env, Embedded: false, Addr: "127.0.0.1:0", Seed: true, SeedMaxZoom: 1})
	if st.S3URL != "" || st.Notifier != nil || st.Seeded != 5 {
		t.Fatalf("got S3URL %q, notifier %v, %d seeded; want no embedded endpoint and 5 tiles", st.S3URL, st.Notifier != nil, st.Seeded)
	}
	if _, err := s3e.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("other"), Key: aws.String("pyramid/demo/1/1/1.png")}); err != nil {
		t.Fatalf("seeded tile not in the external bucket: %v", err)
	}
	if a := get(t, st.TileURL(1, 1, 1)); a.status != http.StatusOK || a.cache != "MISS" {
		t.Fatalf("tile through the external S3: got %d %s", a.status, a.cache)
	}
	if !strings.Contains(st.Banner(), "from the environment") {
		t.Error("banner does not say where S3 is")
	}
}

// TestBannerStepsRunInOrder: a newcomer pastes the steps one after another,
// so nothing may use a file or state a later step makes.
func TestBannerStepsRunInOrder(t *testing.T) {
	t.Parallel()
	st := startEmbedded(t, nil)
	var steps []string
	for line := range strings.SplitSeq(st.Banner(), "\n") {
		line = strings.TrimSpace(line)
		if n := len(steps) + 1; strings.HasPrefix(line, strconv.Itoa(n)+". ") {
			steps = append(steps, strings.TrimPrefix(line, strconv.Itoa(n)+". "))
		}
	}
	if len(steps) < 5 {
		t.Fatalf("found %d numbered steps in the banner:\n%s", len(steps), st.Banner())
	}
	made := -1 // the step that writes into stack.UploadDir
	for i, s := range steps {
		writes := strings.Contains(s, "-o "+stack.UploadDir+"/")
		switch {
		case writes && made < 0:
			made = i
		case strings.Contains(s, stack.UploadDir) && made < 0:
			t.Errorf("step %d uses %s before any step writes it: %s", i+1, stack.UploadDir, s)
		}
	}
	if made < 0 {
		t.Errorf("no step writes into %s:\n%s", stack.UploadDir, st.Banner())
	}
	// The file the first step writes is a tile the stack serves.
	if a := get(t, st.TileURL(0, 0, 0)); a.status != http.StatusOK || !strings.Contains(steps[made], st.TileURL(0, 0, 0)) {
		t.Errorf("step %d does not download the zoom-0 tile (%d): %s", made+1, a.status, steps[made])
	}
	// The example tile the steps change exists at the seeded zooms.
	if a := get(t, st.URL+"/"+st.Example); a.status != http.StatusOK || !strings.Contains(st.Banner(), st.Example) {
		t.Errorf("example tile %s: %d", st.Example, a.status)
	}
}

// TestEmbeddedIgnoresExportedS3Variables: with the embedded S3 on, an
// exported TILES_BUCKET or AWS_ENDPOINT_URL changes nothing, and the banner
// says they are not used.
func TestEmbeddedIgnoresExportedS3Variables(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := startStack(ctx, t, stack.Options{
		Env:      mapEnv(map[string]string{"TILES_BUCKET": "production-tiles", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}),
		Embedded: true, S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Seed: true, SeedMaxZoom: 1,
	})
	if st.S3URL == "" || st.Tiles.Bucket != stack.DefaultBucket || st.Tiles.Endpoint != st.S3URL {
		t.Fatalf("got S3URL %q, bucket %q, endpoint %q; want the embedded endpoint and bucket %q", st.S3URL, st.Tiles.Bucket, st.Tiles.Endpoint, stack.DefaultBucket)
	}
	if a := get(t, st.TileURL(1, 0, 0)); a.status != http.StatusOK {
		t.Fatalf("demo tile: %d", a.status)
	}
	b := st.Banner()
	if !strings.Contains(b, "embedded S3 endpoint "+st.S3URL) || !strings.Contains(b, "AWS_ENDPOINT_URL, TILES_BUCKET from the environment") {
		t.Errorf("the banner does not say which S3 it uses and which variables it ignores:\n%s", b)
	}
}

// TestExternalS3NeedsRegionAndCredentials: -embedded=false with no region
// or no credentials is refused at start, on one line naming what is missing.
func TestExternalS3NeedsRegionAndCredentials(t *testing.T) {
	s3e := s3localtest.Start(t, "other")
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(v, "")
	}
	s3localtest.IsolateEnv(t)
	env := mapEnv(map[string]string{"AWS_ENDPOINT_URL": s3e.URL, "TILES_BUCKET": "other", "S3_FORCE_PATH_STYLE": "true", "DISK_CACHE_BYTES": "0"})
	for _, tc := range []struct {
		name    string
		set     map[string]string
		missing []string
	}{
		{"neither", nil, []string{"no region", "no credentials"}},
		{"no region", map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}, []string{"no region"}},
		{"no credentials", map[string]string{"AWS_REGION": "eu-west-1"}, []string{"no credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.set {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, err := stack.Start(ctx, stack.Options{Env: env, Embedded: false, Addr: "127.0.0.1:0"})
			if err == nil {
				st.Close(context.Background())
				t.Fatal("started without what it needs")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "devstack: ") || strings.Count(msg, "devstack:") != 1 || strings.Contains(msg, "DNS") {
				t.Errorf("want one line with one \"devstack: \" prefix and no SDK jargon, got %q", msg)
			}
			for _, m := range []string{"no region", "no credentials"} {
				if want := slices.Contains(tc.missing, m); strings.Contains(msg, m) != want {
					t.Errorf("%q: mentions %q: %v, want %v", msg, m, !want, want)
				}
			}
		})
	}
}

// TestDemoActionsShowEveryTier: the viewer's legend shows five tiers; the
// demo actions make the three a local request rarely meets appear.
func TestDemoActionsShowEveryTier(t *testing.T) {
	t.Parallel()
	action := func(t *testing.T, st *stack.Stack, path string) {
		t.Helper()
		req, _ := http.NewRequest("POST", st.URL+stack.ActionsPath+path, nil)
		req.Header.Set(stack.ActionHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	t.Run("fresh memory over the kept disk: HIT-DISK", func(t *testing.T) {
		t.Parallel()
		st := startEmbedded(t, nil)
		u := st.TileURL(1, 0, 0)
		get(t, u)
		if a := get(t, u); a.cache != "HIT-MEMORY" {
			t.Fatalf("got %s, want HIT-MEMORY", a.cache)
		}
		action(t, st, "fresh-memory")
		if a := get(t, u); a.status != http.StatusOK || a.cache != "HIT-DISK" {
			t.Fatalf("after a fresh memory tier: got %d %s, want 200 HIT-DISK", a.status, a.cache)
		}
	})
	t.Run("expired copies: REVALIDATED, then STALE in an outage", func(t *testing.T) {
		t.Parallel()
		// REVALIDATE_AFTER=1ns: every cached copy has expired by the next
		// request, as one has after the stack's 30s default (0 would mean
		// the tile server's default hour).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st := startStack(ctx, t, stack.Options{
			Env: mapEnv(map[string]string{"REVALIDATE_AFTER": "1ns"}), Embedded: true,
			S3Addr: "127.0.0.1:0", Addr: "127.0.0.1:0", Seed: true, SeedMaxZoom: 1,
		})
		u := st.TileURL(1, 1, 0)
		first := get(t, u)
		if a := get(t, u); a.cache != "REVALIDATED" || !bytes.Equal(a.body, first.body) {
			t.Fatalf("got %s, want REVALIDATED with the same bytes", a.cache)
		}
		action(t, st, "s3-outage?seconds=60")
		if a := get(t, u); a.status != http.StatusOK || a.cache != "STALE" || !bytes.Equal(a.body, first.body) {
			t.Fatalf("in an outage: got %d %s, want 200 STALE with the cached bytes", a.status, a.cache)
		}
		if a := get(t, st.TileURL(1, 1, 1)); a.status < 500 {
			t.Fatalf("an uncached tile in an outage: got %d %s, want a 5xx", a.status, a.cache)
		}
		action(t, st, "s3-outage?seconds=0")
		// Just after a failure the server answers stale at once while one
		// revalidation runs (ORIGIN_FAILURE_WINDOW); once one succeeds,
		// requests revalidate again.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			a := get(t, u)
			if a.cache == "REVALIDATED" {
				break
			}
			if a.cache != "STALE" || time.Now().After(deadline) {
				t.Fatalf("after the outage: got %s, want STALE for a moment, then REVALIDATED", a.cache)
			}
		}
	})
	t.Run("actions need their header and POST", func(t *testing.T) {
		t.Parallel()
		st := startEmbedded(t, nil)
		resp, err := http.Post(st.URL+stack.ActionsPath+"fresh-memory", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST without %s: got %d, want 403", stack.ActionHeader, resp.StatusCode)
		}
		if a := get(t, st.URL+stack.ActionsPath+"fresh-memory"); a.status != http.StatusMethodNotAllowed {
			t.Errorf("GET: got %d, want 405", a.status)
		}
	})
}

// TestDemoInTheCatalog: a plain `make run` (the seeded embedded stack)
// lists the demo tileset in the catalog the banner advertises, with a
// TileJSON that answers though the demo has no metadata.json.
func TestDemoInTheCatalog(t *testing.T) {
	t.Parallel()
	st := startEmbedded(t, nil)
	a := get(t, st.URL+"/_tilesieve/catalog")
	if a.status != http.StatusOK {
		t.Fatalf("catalog: got %d, want 200", a.status)
	}
	var cat struct {
		Tilesets []struct{ Name, Kind, TileJSON string } `json:"tilesets"`
	}
	if err := json.Unmarshal(a.body, &cat); err != nil {
		t.Fatalf("catalog %s: %v", a.body, err)
	}
	i := slices.IndexFunc(cat.Tilesets, func(e struct{ Name, Kind, TileJSON string }) bool { return e.Name == demotiles.Tileset })
	if i < 0 {
		t.Fatalf("catalog %s: no %s tileset", a.body, demotiles.Tileset)
	}
	tj := get(t, cat.Tilesets[i].TileJSON)
	if tj.status != http.StatusOK || !bytes.Contains(tj.body, []byte(`"tiles"`)) {
		t.Fatalf("TileJSON %s: got %d %s, want 200 with tile URLs", cat.Tilesets[i].TileJSON, tj.status, tj.body)
	}
}
