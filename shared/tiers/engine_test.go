package tiers_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

const bucket = "tiles"

// env is an engine over an in-process S3 endpoint, with both tiers.
type env struct {
	t    testing.TB
	api  *s3.Client
	mem  *memory.Cache
	disk *disk.Store
	eng  *tiers.Engine
}

func newEnv(t testing.TB, fsync bool, cfg tiers.Config) *env {
	t.Helper()
	e := &env{t: t, api: s3localtest.Start(t, bucket).Client}
	var err error
	if e.mem, err = memory.New(memory.Config{MaxBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if e.disk, err = disk.Open(disk.Config{Dir: t.TempDir(), MaxBytes: 256 << 20, Fsync: fsync}, nil); err != nil {
		t.Fatal(err)
	}
	e.eng, err = tiers.New(cfg, tiers.Deps{Memory: e.mem, Disk: e.disk,
		Origin: origin.NewWithS3(e.api, origin.Config{Bucket: bucket, Prefix: "tiles/"})})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) put(key, body string) { putTile(e.t, e.api, key, body) }

// putTile writes the tile key to S3 under the tiles prefix.
func putTile(t testing.TB, api *s3.Client, key, body string) {
	t.Helper()
	s3localtest.Put(t, api, bucket, "tiles/"+key, []byte(body), "image/png", "")
}

// TestGetWalksTheTiers: a miss fills both tiers; a hit comes from memory;
// with memory emptied, from disk; a missing key is tile.ErrNotFound.
func TestGetWalksTheTiers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, tiers.Config{})
	e.put("a/1/0/0.png", "one")
	steps := []struct {
		name   string
		before func()
		key    string
		want   tiers.Source
		err    error
	}{
		{"miss", nil, "a/1/0/0.png", tiers.FromOrigin, nil},
		{"memory", nil, "a/1/0/0.png", tiers.FromMemory, nil},
		{"disk", func() { e.mem.Delete("a/1/0/0.png") }, "a/1/0/0.png", tiers.FromDisk, nil},
		{"memory again", nil, "a/1/0/0.png", tiers.FromMemory, nil},
		{"not found", nil, "a/1/0/9.png", 0, tile.ErrNotFound},
	}
	for _, s := range steps {
		if s.before != nil {
			s.before()
		}
		r, err := e.eng.Get(context.Background(), s.key, time.Now())
		if !errors.Is(err, s.err) || r.Source != s.want {
			t.Fatalf("%s: got %v, %v, want %v, %v", s.name, r.Source, err, s.want, s.err)
		}
		if err == nil && string(r.Tile.Body) != "one" {
			t.Fatalf("%s: got body %q, want %q", s.name, r.Tile.Body, "one")
		}
	}
}

// TestPurgeDuringDiskWrite: a purge that lands while a fill is about to
// write its disk file completes without waiting for that write, and the
// fill's bytes are in no tier afterwards; the next lookup fetches the new
// version.
func TestPurgeDuringDiskWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, tiers.Config{})
	e.put("p/1/0/0.png", "old")
	writing := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	tiers.SetDiskWriteHook(e.eng, func(key string) {
		once.Do(func() {
			close(writing)
			<-release
		})
	})
	got := make(chan error, 1)
	go func() {
		_, err := e.eng.Get(context.Background(), "p/1/0/0.png", time.Now())
		got <- err
	}()
	<-writing
	e.put("p/1/0/0.png", "new")
	purged := make(chan error, 1)
	go func() { _, err := e.eng.Purge("p/"); purged <- err }()
	select {
	case err := <-purged:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the purge waited for the fill's disk write")
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if _, ok := e.disk.Stat("p/1/0/0.png"); ok {
		t.Error("the overtaken fill's file survived the purge")
	}
	if _, ok := e.mem.Get("p/1/0/0.png"); ok {
		t.Error("the overtaken fill is in the memory tier")
	}
	if got, want := e.eng.Stats().DroppedFills, int64(1); got != want {
		t.Errorf("dropped fills: got %v, want %v", got, want)
	}
	r, err := e.eng.Get(context.Background(), "p/1/0/0.png", time.Now())
	if err != nil || r.Source != tiers.FromOrigin || string(r.Tile.Body) != "new" {
		t.Fatalf("after the purge: got %v %q %v, want a miss with the new bytes", r.Source, bodyOf(r), err)
	}
}

// TestLookupWhileDiskDetachPending: after a purge has taken effect but
// before it has detached its prefix from the disk tier, a lookup does not
// answer with the disk's copy; once the purge ends, the disk holds nothing
// of the prefix but what was fetched after it.
func TestLookupWhileDiskDetachPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false, tiers.Config{})
	e.put("d/1/0/0.png", "old")
	if _, err := e.eng.Get(context.Background(), "d/1/0/0.png", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.disk.Stat("d/1/0/0.png"); !ok {
		t.Fatal("the miss did not reach the disk tier")
	}
	e.put("d/1/0/0.png", "new")
	detaching, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	tiers.SetDetachHook(e.eng, func() { once.Do(func() { close(detaching); <-release }) })
	purged := make(chan error, 1)
	go func() { _, err := e.eng.Purge("d/"); purged <- err }()
	<-detaching
	r, err := e.eng.Get(context.Background(), "d/1/0/0.png", time.Now())
	if err != nil || r.Source != tiers.FromOrigin || bodyOf(r) != "new" {
		t.Fatalf("while the detach is pending: got %v %q %v, want a miss with the new bytes", r.Source, bodyOf(r), err)
	}
	close(release)
	if err := <-purged; err != nil {
		t.Fatal(err)
	}
	e.mem.Delete("d/1/0/0.png")
	r, err = e.eng.Get(context.Background(), "d/1/0/0.png", time.Now())
	if err != nil || bodyOf(r) != "new" {
		t.Fatalf("after the purge: got %v %q %v, want the new bytes", r.Source, bodyOf(r), err)
	}
}

func bodyOf(r tiers.Result) string {
	if r.Tile == nil {
		return ""
	}
	return string(r.Tile.Body)
}

// TestConfigValidate: negative settings are refused with every problem.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  tiers.Config
		ok   bool
	}{
		{"zero", tiers.Config{}, true},
		{"negative timeout", tiers.Config{OriginTimeout: -1}, false},
		{"negative fetches", tiers.Config{MaxOriginFetches: -1}, false},
		{"negative ttl", tiers.Config{NegativeTTL: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.cfg.Validate(); (err == nil) != tt.ok {
				t.Errorf("got %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// BenchmarkPurgeUnderFills is a purge's latency while 32 fills write
// their disk files: each filler misses its own tiles again after every
// purge of its prefix. guard-µs is the time from the call to the end of the
// purge's hold on the guard (what new lookups wait for); the rest of a
// purge is detaching its prefix from the disk tier and unlinking the files.
// The fills write with fsync (each disk write then takes milliseconds) and
// without it: a purge that waited for the fills' disk writes would be held
// up far longer with fsync; one that does not takes about as long either
// way (bench/cmd/tierbench runs the two side by side and writes the
// section of docs/BENCHMARKS.md).
//
//	go test -run '^$' -bench BenchmarkPurgeUnderFills -benchtime 300x ./shared/tiers/
func BenchmarkPurgeUnderFills(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync"
		if !fsync {
			name = "nofsync"
		}
		b.Run(name, func(b *testing.B) { benchPurgeUnderFills(b, fsync) })
	}
}

func benchPurgeUnderFills(b *testing.B, fsync bool) {
	const fillers, keys = 32, 16
	e := newEnv(b, fsync, tiers.Config{MaxOriginFetches: 64})
	body := string(make([]byte, 8<<10))
	for g := range fillers {
		for k := range keys {
			e.put(fmt.Sprintf("f/%d/%d.png", g, k), body)
		}
	}
	var released time.Time // written by the purge's hook, read after Purge returns
	tiers.SetPurgeHook(e.eng, func(held bool) {
		if !held {
			released = time.Now()
		}
	})
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range fillers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if _, err := e.eng.Get(context.Background(), fmt.Sprintf("f/%d/%d.png", g, i%keys), time.Now()); err != nil {
					panic(err)
				}
			}
		})
	}
	for e.eng.Stats().Misses < fillers*keys { // every filler has filled once
		runtime.Gosched()
	}
	total := make([]time.Duration, 0, b.N)
	guarded := make([]time.Duration, 0, b.N)
	misses := e.eng.Stats().Misses
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := e.eng.Purge(fmt.Sprintf("f/%d/", i%fillers)); err != nil {
			b.Fatal(err)
		}
		total = append(total, time.Since(t0))
		guarded = append(guarded, released.Sub(t0))
		time.Sleep(time.Millisecond) // pacing: fills run between purges
	}
	fills := e.eng.Stats().Misses - misses
	stop.Store(true)
	wg.Wait()
	p := func(d []time.Duration, q int) float64 {
		slices.Sort(d)
		return float64(d[len(d)*q/100].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p(total, 99), "p99-µs")
	b.ReportMetric(p(total, 50), "p50-µs")
	b.ReportMetric(p(guarded, 99), "guard-p99-µs")
	b.ReportMetric(p(guarded, 50), "guard-p50-µs")
	b.ReportMetric(float64(fills)/float64(len(total)), "fills/purge")
}
