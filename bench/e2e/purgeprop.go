package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/infra/devstack/s3notify"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/s3local"
)

// PurgeRun is one SYNC_INTERVAL setting of section 5.
type PurgeRun struct {
	SyncInterval time.Duration   `json:"sync_interval"`
	Trials       int             `json:"trials"`
	PollEvery    time.Duration   `json:"poll_every"`
	AllFresh     stats.Summary   `json:"all_fresh"`    // PUT → every instance fresh
	PerInstance  stats.Summary   `json:"per_instance"` // PUT → one instance fresh
	Worker       stats.Summary   `json:"worker"`       // the worker's Handle (journal append)
	Samples      []time.Duration `json:"samples"`      // AllFresh, per trial
	Timeouts     int             `json:"timeouts"`
}

// PurgeResult is section 5.
type PurgeResult struct {
	Instances int        `json:"instances"`
	Runs      []PurgeRun `json:"runs"`
	Targets   []Target   `json:"targets"`
}

// RunPurge measures purge propagation: n app instances (each its own tiers
// and journal follower, served on its own port, polled by its own client
// every poll) over one bucket; per trial a new version of a tile is PUT, the
// worker is handed the S3 event, and the clock runs until every instance
// answers with the new ETag.
func RunPurge(ctx context.Context, n int, interval, poll time.Duration, trials int) (PurgeRun, error) {
	l, err := NewLocalS3()
	if err != nil {
		return PurgeRun{}, err
	}
	defer l.Close()
	const key = "purge/12/2048/1361.jpg"
	pool := tileset.NewPool(1, 128, 8_000, 8_000, 9)
	put := func(v int) (string, error) {
		return s3local.Put(ctx, l.Client, Bucket, key, tileset.WithComment(pool[0], fmt.Sprintf("version %d", v)), "image/jpeg", "")
	}
	etag, err := put(0)
	if err != nil {
		return PurgeRun{}, err
	}
	tmp, err := TempDir("purge")
	if err != nil {
		return PurgeRun{}, err
	}
	defer os.RemoveAll(tmp)
	log := slog.New(slog.DiscardHandler)
	urls := make([]string, n)
	for i := range n {
		// The defaults of everything else (journal prefix, Cache-Control,
		// missing tiles, revalidation, origin timeout) are the product's.
		env := map[string]string{
			"TILES_BUCKET":     Bucket,
			"MEM_CACHE_BYTES":  "64MiB",
			"DISK_CACHE_DIR":   filepath.Join(tmp, fmt.Sprint(i)),
			"DISK_CACHE_BYTES": "64MiB",
			"SYNC_INTERVAL":    interval.String(),
		}
		cfg, err := config.LoadTiles(func(k string) string { return env[k] })
		if err != nil {
			return PurgeRun{}, err
		}
		a, err := app.NewWithOrigin(ctx, cfg, l.Origin(), log)
		if err != nil {
			return PurgeRun{}, err
		}
		url, stop, err := Serve(a.Handler)
		if err != nil {
			return PurgeRun{}, err
		}
		defer stop()
		urls[i] = url
	}
	w := purge.NewWorker(purge.WorkerConfig{Bucket: Bucket}, purge.NewJournal(l.Client, Bucket, "_tilesieve/journal/", purge.JournalOptions{}), nil, log)

	// Pollers: each instance's own client, one GET every poll.
	var mu sync.Mutex // guards want, t0, fresh
	want, t0 := etag, time.Now()
	fresh := make([]time.Duration, n)
	seen := make([]bool, n)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			c := HTTPClient()
			tk := time.NewTicker(poll)
			defer tk.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-tk.C:
				}
				req, _ := http.NewRequestWithContext(pctx, http.MethodGet, u+"/"+key, nil)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				got := resp.Header.Get("ETag")
				mu.Lock()
				if got == want && !seen[i] {
					seen[i], fresh[i] = true, time.Since(t0)
				}
				mu.Unlock()
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	waitAll := func(limit time.Duration) bool {
		deadline := time.Now().Add(limit)
		for time.Now().Before(deadline) {
			mu.Lock()
			all := true
			for _, s := range seen {
				all = all && s
			}
			mu.Unlock()
			if all {
				return true
			}
			time.Sleep(poll / 4)
		}
		return false
	}
	if !waitAll(10 * time.Second) {
		return PurgeRun{}, fmt.Errorf("purge: instances never served version 0")
	}
	run := PurgeRun{SyncInterval: interval, Trials: trials, PollEvery: poll}
	var all, per, workerTimes []time.Duration
	rng := rand.New(rand.NewPCG(uint64(trials), 5))
	for trial := 1; trial <= trials; trial++ {
		// Uploads do not arrive in step with the followers' checks.
		time.Sleep(time.Duration(rng.Int64N(int64(interval))))
		mu.Lock()
		clear(seen)
		want = "" // nothing is fresh until the PUT has answered
		start := time.Now()
		t0 = start
		mu.Unlock()
		newTag, err := put(trial)
		if err != nil {
			return run, err
		}
		mu.Lock()
		want = newTag
		mu.Unlock()
		ws := time.Now()
		if _, err := w.Handle(ctx, s3Event(Bucket, key, trial)); err != nil {
			return run, fmt.Errorf("worker: %w", err)
		}
		workerTimes = append(workerTimes, time.Since(ws))
		if !waitAll(10*interval + 5*time.Second) {
			run.Timeouts++
			continue
		}
		mu.Lock()
		worst := time.Duration(0)
		for _, f := range fresh {
			per = append(per, f)
			worst = max(worst, f)
		}
		mu.Unlock()
		all = append(all, worst)
	}
	run.AllFresh, run.PerInstance, run.Worker, run.Samples = stats.Summarize(all), stats.Summarize(per), stats.Summarize(workerTimes), all
	return run, nil
}

// s3Event is an S3 ObjectCreated:Put notification for key, as S3 sends it
// (URL-encoded key, a rising sequencer).
func s3Event(bucket, key string, seq int) json.RawMessage {
	size := int64(8000)
	b, _ := json.Marshal(s3notify.Event{Records: []s3notify.Record{{
		EventVersion: "2.1", EventSource: "aws:s3", AWSRegion: "us-east-1",
		EventTime: time.Now().UTC().Format(time.RFC3339Nano), EventName: s3notify.ObjectCreatedPut,
		S3: s3notify.Entity{
			SchemaVersion: "1.0", ConfigurationID: "tilesieve-worker",
			Bucket: s3notify.Bucket{Name: bucket, ARN: "arn:aws:s3:::" + bucket},
			Object: s3notify.Object{Key: s3notify.EncodeKey(key), Size: &size, ETag: "0", Sequencer: fmt.Sprintf("%016X", seq)},
		},
	}}})
	return b
}

// PurgeTarget: every instance fresh within SYNC_INTERVAL plus 100 ms (the
// worker's append, one journal read and the 20 ms poll) at p99.
func PurgeTarget(r PurgeRun) Target {
	bound := r.SyncInterval + 100*time.Millisecond
	return Target{What: fmt.Sprintf("p99 PUT→all %s fresh ≤ SYNC_INTERVAL (%v) + 100 ms", "instances", r.SyncInterval),
		Want: ms(bound), Got: ms(r.AllFresh.P99), Unit: "ms"}.Check()
}
