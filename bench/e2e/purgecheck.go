package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

// CheckCost is what one instance asks S3 for one journal check: with nothing
// new, and when it wakes behind a backlog whose last entry purges the tile
// it is asked for.
type CheckCost struct {
	SyncInterval time.Duration `json:"sync_interval"`
	Rows         []CheckRow    `json:"rows"`
}

// CheckRow is one backlog size (0: nothing new since the last check).
type CheckRow struct {
	Backlog int           `json:"backlog"`
	Reps    []S3Counts    `json:"reps"`    // the instance's S3 requests during the waking request, per repetition
	Fresh   int           `json:"fresh"`   // waking requests answered with the newest bytes
	Latency stats.Summary `json:"latency"` // of the waking request
}

// Range is the least and greatest of f over the repetitions.
func (r CheckRow) Range(f func(S3Counts) int) (lo, hi int) {
	for i, c := range r.Reps {
		v := f(c)
		if i == 0 || v < lo {
			lo = v
		}
		if i == 0 || v > hi {
			hi = v
		}
	}
	return lo, hi
}

// MeanHeadBytes is the mean body size of the head reads.
func (r CheckRow) MeanHeadBytes() int64 {
	var b int64
	n := 0
	for _, c := range r.Reps {
		b += c.JournalBytes
		n += c.JournalGETs()
	}
	if n == 0 {
		return 0
	}
	return b / int64(n)
}

// RunCheckCost counts, at the HTTP level (the instance's own S3 front), the
// S3 requests one app instance makes during the request that finds a journal
// check due: reps times with nothing new, then reps times per backlog size,
// where the instance sat idle while the worker recorded backlog-1 purges of
// other tiles and then the purge of a new version of the tile requested.
func RunCheckCost(ctx context.Context, interval time.Duration, backlogs []int, reps int) (CheckCost, error) {
	l, err := NewLocalS3()
	if err != nil {
		return CheckCost{}, err
	}
	defer l.Close()
	put := purgeTilePut(ctx, l)
	if _, err := put(0); err != nil {
		return CheckCost{}, err
	}
	tmp, err := TempDir("checks")
	if err != nil {
		return CheckCost{}, err
	}
	defer os.RemoveAll(tmp)
	log := slog.New(slog.DiscardHandler)
	inst, err := startPurgeInstance(ctx, l, tmp, interval, 0, log)
	if err != nil {
		return CheckCost{}, err
	}
	defer inst.Close()
	url, front := inst.URL, inst.Front
	w := newPurgeWorker(l.Client, log)
	c := HTTPClient()
	var last time.Time // when the last request was sent
	get := func() (string, time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/"+purgeKey, nil)
		last = time.Now()
		resp, err := c.Do(req)
		if err != nil {
			return "", 0, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", 0, fmt.Errorf("checks: GET %s: %s", purgeKey, resp.Status)
		}
		return resp.Header.Get("ETag"), time.Since(last), nil
	}
	// Warm: the tile in both tiers, the follower's ETag of the head known.
	if _, err := handleEvent(ctx, w, s3Event(Bucket, "warm/0.jpg", 1)); err != nil {
		return CheckCost{}, err
	}
	for range 2 {
		if _, _, err := get(); err != nil {
			return CheckCost{}, err
		}
		time.Sleep(interval + 20*time.Millisecond)
	}
	res := CheckCost{SyncInterval: interval}
	version := 0
	for _, k := range append([]int{0}, backlogs...) {
		row := CheckRow{Backlog: k}
		var lat []time.Duration
		for rep := range reps {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			want := ""
			if k > 0 {
				for i := 1; i < k; i++ {
					if _, err := handleEvent(ctx, w, s3Event(Bucket, fmt.Sprintf("backlog/%d/%d/%d.jpg", k, rep, i), i)); err != nil {
						return res, err
					}
				}
				version++
				if want, err = put(version); err != nil {
					return res, err
				}
				if _, err := handleEvent(ctx, w, s3Event(Bucket, purgeKey, version)); err != nil {
					return res, err
				}
			}
			// Idle past SYNC_INTERVAL: the next request finds a check due.
			time.Sleep(time.Until(last.Add(interval + 20*time.Millisecond)))
			before := front.Counts()
			got, took, err := get()
			if err != nil {
				return res, err
			}
			row.Reps = append(row.Reps, front.Counts().Sub(before))
			lat = append(lat, took)
			if k == 0 || got == want {
				row.Fresh++
			}
		}
		row.Latency = stats.Summarize(lat)
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// handleEvent runs one raw S3 event through w, as the worker's Lambda
// handler does for a direct invoke: the purge's error, if any.
func handleEvent(ctx context.Context, w *purge.Worker, raw []byte) (purge.Result, error) {
	b, err := s3event.Decode(raw)
	if err != nil {
		return purge.Result{}, err
	}
	res := w.Process(ctx, b)
	return res, res.Err
}
