// Package stage fills the disk tier from S3 at cold start, the way App
// Service deployments copy hot files from shared storage to local disk when
// they start: a configured set of tile-key prefixes and/or a manifest object
// are downloaded concurrently, within a time budget and the disk's byte
// bound, and written to the disk tier.
//
// What it promises:
//
//   - Run never fails init. Every error is counted in the Report and logged;
//     a missing manifest still lets the prefixes be staged.
//   - Run returns soon after the budget ends: in-flight downloads are
//     cancelled, and an object that was not downloaded whole is never
//     written (the origin refuses short bodies; a large object is written
//     only when every part arrived).
//   - Staged bytes stay within the disk's free room (MaxBytes less what it
//     already holds): queuing stops when the next object would not fit, so
//     staging does not evict what it staged.
//   - Every object listed ends in exactly one of Staged, Skipped (already on
//     disk with the same ETag, no room, cut by the budget) or Failed.
//
// Objects at or above Config.LargeObject go through the concurrent ranged
// download of shared/origin/transfer; everything else is one GetObject through
// shared/origin, with its retry and body rules.
package stage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/transfer"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Defaults of Config.
const (
	DefaultBudget      = 5 * time.Second // Lambda's init phase is limited to 10 s
	DefaultConcurrency = 32
	DefaultLargeObject = 8 << 20
	DefaultPartSize    = 8 << 20

	// largeInFlight bounds how many large objects are held in memory at
	// once (each is buffered whole before it is written to disk).
	largeInFlight = 2
	// partConcurrency is the ranged GETs per large object.
	partConcurrency = 8
	// metaSlack is room reserved for the content type and encoding of an
	// object whose listing does not say them.
	metaSlack = 128
	// maxLoggedFailures is how many failures are logged one by one.
	maxLoggedFailures = 10
	// progressEvery is how often progress is logged.
	progressEvery = time.Second
)

// Config configures a staging run. Zero values take the defaults.
type Config struct {
	Prefixes    []string      // STAGE_PREFIXES: tile-key prefixes
	Manifest    string        // STAGE_MANIFEST: raw S3 key of a list of tile keys, one per line (# comments and blank lines ignored)
	Budget      time.Duration // STAGE_BUDGET, default 5s
	Concurrency int           // downloads at once, default 32
	LargeObject int64         // objects at or above this use the ranged downloader; default 8 MiB
	PartSize    int64         // part size of the ranged downloader, default 8 MiB
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.Prefixes {
		if err := tile.ValidatePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("stage: Prefixes: %w", err))
		}
	}
	errs = append(errs,
		defaults.NotNegative("stage", "Budget", c.Budget),
		defaults.NotNegative("stage", "Concurrency", c.Concurrency),
		defaults.NotNegative("stage", "LargeObject", c.LargeObject),
		defaults.NotNegative("stage", "PartSize", c.PartSize))
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	c.Budget = cmp.Or(c.Budget, DefaultBudget)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.LargeObject = cmp.Or(c.LargeObject, DefaultLargeObject)
	c.PartSize = cmp.Or(c.PartSize, DefaultPartSize)
	return c
}

// Report says what a run did. Listed = Staged + Skipped + Failed.
type Report struct {
	Listed          int           `json:"listed"`
	Staged          int           `json:"staged"`
	Skipped         int           `json:"skipped"`
	Failed          int           `json:"failed"`
	Bytes           int64         `json:"bytes"` // body bytes staged
	Elapsed         time.Duration `json:"elapsed"`
	BudgetExhausted bool          `json:"budget_exhausted"`
}

// job is one object to stage.
type job struct {
	key      string
	size     int64 // -1: unknown (a manifest line)
	etag     string
	reserved int64 // bytes reserved against the disk's room
}

type run struct {
	cfg  Config
	o    *origin.Client
	d    *disk.Store
	log  *slog.Logger
	room int64 // bytes the disk can take without evicting

	reserved  atomic.Int64
	full      atomic.Bool // the disk's room is used up: stop queuing
	exhausted atomic.Bool

	listed, staged, skipped, failed atomic.Int64
	bytes                           atomic.Int64
	large                           chan struct{} // slots for large objects in memory
}

// Run stages the configured objects into d and reports what it did. It
// never fails: problems are counted and logged. log may be nil.
func Run(ctx context.Context, cfg Config, o *origin.Client, d *disk.Store, log *slog.Logger) Report {
	start := time.Now()
	log = defaults.Logger(log)
	if err := cfg.Validate(); err != nil {
		log.Error("stage: bad configuration, nothing staged", "err", err)
		return Report{Elapsed: time.Since(start)}
	}
	cfg = cfg.withDefaults()
	if (len(cfg.Prefixes) == 0 && cfg.Manifest == "") || o == nil || d == nil {
		return Report{Elapsed: time.Since(start)}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()

	r := &run{
		cfg:   cfg,
		o:     o,
		d:     d,
		log:   log,
		room:  d.MaxBytes() - d.Bytes(),
		large: make(chan struct{}, largeInFlight),
	}
	log.Info("stage: start", "prefixes", cfg.Prefixes, "manifest", cfg.Manifest,
		"budget", cfg.Budget, "concurrency", cfg.Concurrency, "room_bytes", r.room)

	jobs := make(chan job, cfg.Concurrency)
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r.stage(ctx, j)
			}
		}()
	}
	stopProgress := r.logProgress(start)
	r.produce(ctx, jobs)
	close(jobs)
	wg.Wait()
	stopProgress()

	rep := Report{
		Listed:          int(r.listed.Load()),
		Staged:          int(r.staged.Load()),
		Skipped:         int(r.skipped.Load()),
		Failed:          int(r.failed.Load()),
		Bytes:           r.bytes.Load(),
		Elapsed:         time.Since(start),
		BudgetExhausted: r.exhausted.Load(),
	}
	log.Info("stage: done", "listed", rep.Listed, "staged", rep.Staged, "skipped", rep.Skipped,
		"failed", rep.Failed, "bytes", rep.Bytes, "elapsed", rep.Elapsed,
		"budget_exhausted", rep.BudgetExhausted, "disk_full", r.full.Load(),
		"objects_per_s", rate(float64(rep.Staged), rep.Elapsed), "mib_per_s", rate(float64(rep.Bytes)/(1<<20), rep.Elapsed))
	return rep
}

func rate(n float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int64(n/d.Seconds()*10)) / 10
}

// logProgress logs once per progressEvery until the returned func is called.
func (r *run) logProgress(start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				el := time.Since(start)
				staged, b := r.staged.Load(), r.bytes.Load()
				r.log.Info("stage: progress", "listed", r.listed.Load(), "staged", staged, "bytes", b,
					"failed", r.failed.Load(), "objects_per_s", rate(float64(staged), el), "mib_per_s", rate(float64(b)/(1<<20), el))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// produce reads the manifest, then lists the prefixes, queuing every object
// not seen before until the budget ends or the disk's room is used up.
func (r *run) produce(ctx context.Context, jobs chan<- job) {
	seen := map[string]struct{}{}
	// offer queues one object; false means stop producing.
	offer := func(key string, size int64, etag string) bool {
		if _, dup := seen[key]; dup {
			return true
		}
		seen[key] = struct{}{}
		r.listed.Add(1)
		if ctx.Err() != nil {
			r.exhausted.Store(true)
			r.skipped.Add(1)
			return false
		}
		if it, ok := r.d.Stat(key); ok && (etag == "" || it.ETag == etag) {
			r.skipped.Add(1) // already on disk (a restart inside a live environment)
			return true
		}
		j := job{key: key, size: size, etag: etag}
		if size >= 0 {
			j.reserved = r.estimate(key, size, etag)
			if !r.reserve(j.reserved) {
				r.skipped.Add(1)
				return false
			}
		}
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			r.exhausted.Store(true)
			r.reserved.Add(-j.reserved)
			r.skipped.Add(1)
			return false
		}
	}

	if r.cfg.Manifest != "" {
		keys, err := r.manifest(ctx)
		if err != nil {
			if ctx.Err() != nil {
				r.exhausted.Store(true)
				return
			}
			r.log.Warn("stage: manifest not read; staging the prefixes only", "manifest", r.cfg.Manifest, "err", err)
		}
		for _, k := range keys {
			if !offer(k, -1, "") {
				return
			}
		}
	}
	for _, p := range r.cfg.Prefixes {
		stopped := false
		err := r.o.List(ctx, p, func(oi origin.ObjectInfo) bool {
			stopped = !offer(oi.Key, oi.Size, oi.ETag)
			return !stopped
		})
		if stopped {
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				r.exhausted.Store(true)
				return
			}
			r.log.Warn("stage: listing failed", "prefix", p, "err", err)
		}
	}
}

// manifest reads and parses the manifest object.
func (r *run) manifest(ctx context.Context) ([]string, error) {
	t, err := r.o.GetObject(ctx, r.cfg.Manifest, "")
	if err != nil {
		return nil, err
	}
	keys, bad := ParseManifest(t.Body)
	for i, err := range bad {
		if i == maxLoggedFailures {
			break
		}
		r.log.Warn("stage: manifest line is not a tile key", "manifest", r.cfg.Manifest, "err", err)
	}
	r.log.Info("stage: manifest read", "manifest", r.cfg.Manifest, "keys", len(keys), "bad_lines", len(bad))
	return keys, nil
}

// ParseManifest reads a staging manifest: one tile key per line; blank
// lines and lines starting with # are skipped. Lines that are not valid tile
// keys are returned as errors, never staged.
func ParseManifest(body []byte) (keys []string, bad []error) {
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := tile.ValidateKey(line); err != nil {
			bad = append(bad, err)
			continue
		}
		keys = append(keys, line)
	}
	return keys, bad
}

// estimate is what an object will cost on disk before its metadata is
// known.
func (r *run) estimate(key string, size int64, etag string) int64 {
	return r.d.ChargeSize(disk.FileSize(key, &tile.Tile{ETag: etag, LastModified: time.Now(), StoredAt: time.Now()}) + metaSlack + size)
}

// reserve takes n bytes of the disk's room, or marks the disk full.
func (r *run) reserve(n int64) bool {
	for {
		cur := r.reserved.Load()
		if cur+n > r.room {
			r.full.Store(true)
			return false
		}
		if r.reserved.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// stage downloads one object and writes it to disk.
func (r *run) stage(ctx context.Context, j job) {
	if ctx.Err() != nil {
		r.exhausted.Store(true)
		r.reserved.Add(-j.reserved)
		r.skipped.Add(1)
		return
	}
	var t *tile.Tile
	var err error
	if j.size >= r.cfg.LargeObject {
		t, err = r.downloadLarge(ctx, j)
	} else {
		t, err = r.o.Get(ctx, j.key, "")
	}
	if err != nil {
		r.reserved.Add(-j.reserved)
		if ctx.Err() != nil {
			r.exhausted.Store(true)
			r.skipped.Add(1) // cut by the budget: nothing partial is written
			return
		}
		r.fail(j.key, err)
		return
	}
	// Settle the reservation at the exact size now that the metadata is known.
	exact := r.d.Charge(j.key, t)
	r.reserved.Add(-j.reserved)
	if !r.reserve(exact) {
		r.skipped.Add(1)
		return
	}
	if err := r.d.Put(j.key, t); err != nil {
		r.reserved.Add(-exact)
		if errors.Is(err, disk.ErrPurged) {
			r.skipped.Add(1)
			return
		}
		r.fail(j.key, err)
		return
	}
	r.staged.Add(1)
	r.bytes.Add(int64(len(t.Body)))
}

func (r *run) fail(key string, err error) {
	if n := r.failed.Add(1); n <= maxLoggedFailures {
		r.log.Warn("stage: object not staged", "key", key, "err", err)
	}
}

// downloadLarge fetches an object of known size with ranged GETs in
// parallel into a buffer of that size. The parts are pinned to the listed
// version with If-Match, and the object's metadata is taken from a part's
// response, since the downloader returns only a byte count.
func (r *run) downloadLarge(ctx context.Context, j job) (*tile.Tile, error) {
	select {
	case r.large <- struct{}{}:
		defer func() { <-r.large }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	in := &s3.GetObjectInput{Bucket: aws.String(r.o.Bucket()), Key: aws.String(r.o.ObjectKey(j.key))}
	if j.etag != "" {
		in.IfMatch = aws.String(j.etag)
	}
	buf := transfer.NewBuffer(make([]byte, j.size))
	var m partMeta
	// The copy is as current as the moment its first request left.
	sent := time.Now()
	n, err := transfer.Download(ctx, r.o.S3(), buf, in, r.cfg.PartSize, partConcurrency, m.capture)
	if err != nil {
		return nil, fmt.Errorf("stage: download %q: %w", j.key, err)
	}
	body := buf.Bytes()
	if n != j.size || int64(len(body)) != j.size {
		return nil, fmt.Errorf("stage: download %q: got %d bytes, listed %d", j.key, n, j.size)
	}
	t := m.tile()
	if t == nil {
		return nil, fmt.Errorf("stage: download %q: no response metadata", j.key)
	}
	t.Body = body
	t.StoredAt = sent
	return t, nil
}

// partMeta keeps the metadata of the first part response of a download.
type partMeta struct {
	mu  sync.Mutex // guards out
	out *s3.GetObjectOutput
}

// capture adds a middleware to each part request that notes its response.
func (m *partMeta) capture(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("tilesieveStageMeta",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				if res, ok := out.Result.(*s3.GetObjectOutput); ok && err == nil {
					m.mu.Lock()
					if m.out == nil {
						m.out = res
					}
					m.mu.Unlock()
				}
				return out, md, err
			}), middleware.After)
	})
}

func (m *partMeta) tile() *tile.Tile {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.out == nil {
		return nil
	}
	return &tile.Tile{
		ContentType:     aws.ToString(m.out.ContentType),
		ContentEncoding: aws.ToString(m.out.ContentEncoding),
		ETag:            aws.ToString(m.out.ETag),
		LastModified:    aws.ToTime(m.out.LastModified),
	}
}
