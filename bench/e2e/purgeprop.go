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
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/infra/devstack/s3notify"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
)

// PurgeSpec is one scenario of section 5.
type PurgeSpec struct {
	Name         string        `json:"name"`
	Instances    int           `json:"instances"`
	SyncInterval time.Duration `json:"sync_interval"`
	SyncTimeout  time.Duration `json:"sync_timeout"` // 0: the product's default
	Poll         time.Duration `json:"poll"`
	Trials       int           `json:"trials"`
	// Backlog, when > 0, makes every instance idle (no requests) while the
	// worker records Backlog-1 purges of other tiles; the upload's own entry
	// is the Backlog-th, and the instances are woken right after it.
	Backlog int `json:"backlog"`
	// HeadDelay is added before the first byte of every GET of the journal
	// head (s3local Faults matching the head key only).
	HeadDelay time.Duration `json:"head_delay"`
}

// PurgeRun is one scenario of section 5.
type PurgeRun struct {
	Scenario     string          `json:"scenario"`
	SyncInterval time.Duration   `json:"sync_interval"`
	SyncTimeout  time.Duration   `json:"sync_timeout"`
	Backlog      int             `json:"backlog"`
	HeadDelay    time.Duration   `json:"head_delay"`
	Trials       int             `json:"trials"`
	PollEvery    time.Duration   `json:"poll_every"`
	AllFresh     stats.Summary   `json:"all_fresh"`    // PUT → every instance fresh
	PerInstance  stats.Summary   `json:"per_instance"` // PUT → one instance fresh
	Worker       stats.Summary   `json:"worker"`       // the worker's Handle (journal append)
	Samples      []time.Duration `json:"samples"`      // AllFresh, per trial
	Timeouts     int             `json:"timeouts"`
	// Late counts answers with the replaced bytes to requests sent more than
	// SYNC_INTERVAL + SYNC_TIMEOUT after the worker recorded the purge (the
	// staleness bound past the worker): the promise's violations.
	Late int `json:"late"`
	// Reads are the pollers' requests over Seconds of trials; S3 is what
	// the instances asked S3 meanwhile, summed over the instances.
	Reads       int           `json:"reads"`
	ReadLatency stats.Summary `json:"read_latency"`
	Seconds     float64       `json:"seconds"`
	S3          S3Counts      `json:"s3"`
	// WorkerS3 is what the worker asked S3 over all its appends
	// (Appends of them, backlog included).
	WorkerS3 S3Counts `json:"worker_s3"`
	Appends  int      `json:"appends"`
}

// PurgeResult is section 5.
type PurgeResult struct {
	Instances int        `json:"instances"`
	Runs      []PurgeRun `json:"runs"`
	Checks    *CheckCost `json:"checks,omitempty"`
	Targets   []Target   `json:"targets"`
}

// RunPurge measures purge propagation in the steady state: n instances,
// nothing idle, the journal at loopback speed.
func RunPurge(ctx context.Context, n int, interval, poll time.Duration, trials int) (PurgeRun, error) {
	return RunPurgeSpec(ctx, PurgeSpec{Name: "steady", Instances: n, SyncInterval: interval, Poll: poll, Trials: trials})
}

// purgeKey is the tile every trial replaces.
const purgeKey = "purge/12/2048/1361.jpg"

// RunPurgeSpec measures purge propagation: n app instances (each its own
// tiers and journal follower, served on its own port, polled by its own
// client every poll, talking to S3 through its own counting front) over one
// bucket; per trial a new version of a tile is PUT, the worker is handed the
// S3 event, and the clock runs until every instance answers with the new
// ETag.
func RunPurgeSpec(ctx context.Context, sp PurgeSpec) (PurgeRun, error) {
	l, err := NewLocalS3()
	if err != nil {
		return PurgeRun{}, err
	}
	defer l.Close()
	if sp.HeadDelay > 0 {
		l.S3.Faults().Add(s3local.Fault{Match: s3local.MatchGet(JournalHead), Delay: sp.HeadDelay})
	}
	put := purgeTilePut(ctx, l)
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
	n := sp.Instances
	urls := make([]string, n)
	fronts := make([]*S3Counter, n)
	timeout := sp.SyncTimeout
	for i := range n {
		inst, err := startPurgeInstance(ctx, l, filepath.Join(tmp, fmt.Sprint(i)), sp.SyncInterval, sp.SyncTimeout, log)
		if err != nil {
			return PurgeRun{}, err
		}
		defer inst.Close()
		timeout = inst.Cfg.SyncTimeout
		fronts[i] = inst.Front
		urls[i] = inst.URL
	}
	wfront := NewS3Counter(l.S3.Handler())
	defer wfront.Close()
	w := newPurgeWorker(newS3Client(wfront.URL(), l.S3), log)
	bound := sp.SyncInterval + timeout

	// Pollers: each instance's own client, one GET every poll.
	var mu sync.Mutex // guards want, old, t0, recorded, fresh, seen, late, reads
	want, old, t0 := etag, "", time.Now()
	var recorded time.Time // when the worker recorded the trial's purge; zero: not yet
	fresh := make([]time.Duration, n)
	seen := make([]bool, n)
	late, reads := 0, 0
	var readTimes []time.Duration
	var idle atomic.Bool
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() {
			c := HTTPClient()
			tk := time.NewTicker(sp.Poll)
			defer tk.Stop()
			for {
				select {
				case <-pctx.Done():
					return
				case <-tk.C:
				}
				if idle.Load() {
					continue
				}
				req, _ := http.NewRequestWithContext(pctx, http.MethodGet, u+"/"+purgeKey, nil)
				sent := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				got := resp.Header.Get("ETag")
				took := time.Since(sent)
				mu.Lock()
				reads++
				readTimes = append(readTimes, took)
				if got == want && !seen[i] {
					seen[i], fresh[i] = true, time.Since(t0)
				}
				if got == old && old != "" && !recorded.IsZero() && sent.Sub(recorded) > bound {
					late++
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
			time.Sleep(sp.Poll / 4)
		}
		return false
	}
	if !waitAll(10 * time.Second) {
		return PurgeRun{}, fmt.Errorf("purge: instances never served version 0")
	}
	run := PurgeRun{Scenario: sp.Name, SyncInterval: sp.SyncInterval, SyncTimeout: timeout, Backlog: sp.Backlog, HeadDelay: sp.HeadDelay,
		Trials: sp.Trials, PollEvery: sp.Poll}
	var all, per, workerTimes []time.Duration
	rng := rand.New(rand.NewPCG(uint64(sp.Trials), 5))
	before := make([]S3Counts, n)
	for i, f := range fronts {
		before[i] = f.Counts()
	}
	wbefore := wfront.Counts()
	mu.Lock()
	reads, readTimes = 0, readTimes[:0]
	mu.Unlock()
	began := time.Now()
	for trial := 1; trial <= sp.Trials; trial++ {
		if ctx.Err() != nil {
			return run, ctx.Err()
		}
		if sp.Backlog > 0 {
			// Idle: Lambda would freeze the instances; here they get no
			// requests, so their followers do not run, while the worker
			// records what they will have to catch up on.
			idle.Store(true)
			idleFrom := time.Now()
			time.Sleep(2 * sp.Poll)
			for i := 1; i < sp.Backlog; i++ {
				if _, err := handleEvent(ctx, w, s3Event(Bucket, fmt.Sprintf("backlog/%d/%d.jpg", trial, i), i)); err != nil {
					return run, fmt.Errorf("worker (backlog): %w", err)
				}
				run.Appends++
			}
			// Idle for at least SYNC_INTERVAL, so a check is due on waking.
			time.Sleep(time.Until(idleFrom.Add(sp.SyncInterval + 2*sp.Poll)))
		} else {
			// Uploads do not arrive in step with the followers' checks.
			time.Sleep(time.Duration(rng.Int64N(int64(sp.SyncInterval))))
		}
		mu.Lock()
		clear(seen)
		old, want, recorded = want, "", time.Time{} // nothing is fresh until the PUT has answered
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
		if _, err := handleEvent(ctx, w, s3Event(Bucket, purgeKey, trial)); err != nil {
			return run, fmt.Errorf("worker: %w", err)
		}
		run.Appends++
		done := time.Now()
		workerTimes = append(workerTimes, done.Sub(ws))
		mu.Lock()
		recorded = done
		mu.Unlock()
		idle.Store(false)
		if !waitAll(10*sp.SyncInterval + 5*time.Second) {
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
	// One more bound's worth of reads, so the last trial's late answers count.
	time.Sleep(bound)
	cancel()
	wg.Wait()
	run.Seconds = time.Since(began).Seconds()
	mu.Lock()
	run.Late, run.Reads, run.ReadLatency = late, reads, stats.Summarize(readTimes)
	mu.Unlock()
	for i, f := range fronts {
		c := f.Counts().Sub(before[i])
		run.S3 = addCounts(run.S3, c)
	}
	run.WorkerS3 = wfront.Counts().Sub(wbefore)
	run.AllFresh, run.PerInstance, run.Worker, run.Samples = stats.Summarize(all), stats.Summarize(per), stats.Summarize(workerTimes), all
	return run, nil
}

// addCounts sums two counts.
func addCounts(a, b S3Counts) S3Counts {
	zero := S3Counts{}
	return a.Sub(zero.Sub(b))
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

// PurgeTargets are a run's goals. Steady state and a backlog: every
// instance fresh within SYNC_INTERVAL plus 100 ms (the worker's append, one
// journal read and the 20 ms poll) at p99, whatever the backlog. A slow
// journal: within the documented bound, SYNC_INTERVAL + SYNC_TIMEOUT (plus
// the same 100 ms when checks time out and revalidation carries the bound).
// Faults also count answers past the bound, which must be none.
func PurgeTargets(r PurgeRun) []Target {
	what := fmt.Sprintf("%s: p99 PUT→all instances fresh", r.Scenario)
	var ts []Target
	switch {
	case r.HeadDelay > 0 && r.HeadDelay < r.SyncTimeout:
		ts = append(ts, Target{What: fmt.Sprintf("%s ≤ SYNC_INTERVAL (%v) + SYNC_TIMEOUT (%v)", what, r.SyncInterval, r.SyncTimeout),
			Want: ms(r.SyncInterval + r.SyncTimeout), Got: ms(r.AllFresh.P99), Unit: "ms"}.Check())
	case r.HeadDelay > 0:
		ts = append(ts, Target{What: fmt.Sprintf("%s ≤ SYNC_INTERVAL (%v) + SYNC_TIMEOUT (%v) + 100 ms", what, r.SyncInterval, r.SyncTimeout),
			Want: ms(r.SyncInterval + r.SyncTimeout + 100*time.Millisecond), Got: ms(r.AllFresh.P99), Unit: "ms"}.Check())
	default:
		ts = append(ts, Target{What: fmt.Sprintf("%s ≤ SYNC_INTERVAL (%v) + 100 ms", what, r.SyncInterval),
			Want: ms(r.SyncInterval + 100*time.Millisecond), Got: ms(r.AllFresh.P99), Unit: "ms"}.Check())
	}
	if r.Timeouts > 0 {
		ts[0].Met, ts[0].Reason = false, fmt.Sprintf("%d trials never converged", r.Timeouts)
	}
	if r.Backlog > 0 || r.HeadDelay > 0 {
		ts = append(ts, Target{What: fmt.Sprintf("%s: old bytes to requests sent > SYNC_INTERVAL + SYNC_TIMEOUT after the purge was recorded", r.Scenario),
			Want: 0, Got: float64(r.Late), Unit: "reads"}.Check())
	}
	return ts
}

// CheckTargets: a check that finds nothing new is one S3 request, and a
// catch-up costs as many at the largest backlog as at the smallest.
func CheckTargets(c CheckCost) []Target {
	if len(c.Rows) < 2 {
		return nil
	}
	_, unchanged := c.Rows[0].Range(S3Counts.Total)
	_, small := c.Rows[1].Range(S3Counts.Total)
	_, big := c.Rows[len(c.Rows)-1].Range(S3Counts.Total)
	ratio := 0.0
	if small > 0 {
		ratio = float64(big) / float64(small)
	}
	return []Target{
		Target{What: "S3 requests of a check that finds nothing new (most over the repetitions)", Want: 1, Got: float64(unchanged), Unit: "requests"}.Check(),
		Target{What: fmt.Sprintf("S3 requests of a catch-up behind %d entries ÷ behind %d", c.Rows[len(c.Rows)-1].Backlog, c.Rows[1].Backlog),
			Want: 1, Got: ratio, Unit: "x"}.Check(),
	}
}
