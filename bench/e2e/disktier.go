package e2e

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

// DiskRow is one tier × latency of section 3.
type DiskRow struct {
	Tier      string        `json:"tier"` // "disk hit" or "origin fetch"
	LatencyMs int           `json:"latency_ms"`
	Requests  int           `json:"requests"`
	Total     time.Duration `json:"total"` // median over repetitions
	Mean      time.Duration `json:"mean"`
	P95       time.Duration `json:"p95"`
	P99       time.Duration `json:"p99"`
}

// DiskResult is section 3.
type DiskResult struct {
	Reps        int       `json:"reps"`
	Concurrency int       `json:"concurrency"`
	Rows        []DiskRow `json:"rows"`
	Ratios      []float64 `json:"ratios"` // origin mean / disk mean, per latency
	Targets     []Target  `json:"targets"`
}

// RunDisk serves one image's tiles over HTTP from two instances whose memory
// tier admits nothing: one with every tile on its disk tier (each request is
// a disk hit) and one without a disk tier (each request is an S3 GET).
func RunDisk(ctx context.Context, pool tileset.Pool, reps, concurrency int) (DiskResult, error) {
	l, err := NewLocalS3()
	if err != nil {
		return DiskResult{}, err
	}
	defer l.Close()
	set := tileset.Build(IIIFKeys("disk"), pool)
	if err := tileset.Seed(ctx, l.Client, Bucket, "", set); err != nil {
		return DiskResult{}, err
	}
	dir, err := TempDir("disktier")
	if err != nil {
		return DiskResult{}, err
	}
	defer os.RemoveAll(dir)
	o := l.Origin()
	diskInst, err := NewInstance(o, TierOptions{NoMemory: true, DiskDir: dir})
	if err != nil {
		return DiskResult{}, err
	}
	originInst, err := NewInstance(o, TierOptions{NoMemory: true})
	if err != nil {
		return DiskResult{}, err
	}
	w := workload.Workload{Name: "disk", Phases: []workload.Phase{{Keys: set.Keys(), Concurrency: concurrency}}}
	res := DiskResult{Reps: reps, Concurrency: concurrency}
	diskURL, stopDisk, err := Serve(diskInst.Server)
	if err != nil {
		return res, err
	}
	defer stopDisk()
	originURL, stopOrigin, err := Serve(originInst.Server)
	if err != nil {
		return res, err
	}
	defer stopOrigin()
	c := HTTPClient()
	// Fill the disk tier.
	if r := workload.Run(ctx, w, workload.HTTPFetcher(c, diskURL)); r.Errors > 0 {
		return res, fmt.Errorf("disk fill: %s", r.FirstErr)
	}
	for _, lat := range Latencies {
		l.S3.Faults().SetLatency(lat)
		var means [2]time.Duration
		for i, tier := range []struct{ name, url string }{{"disk hit", diskURL}, {"origin fetch", originURL}} {
			var totals, all []time.Duration
			for range reps {
				r := workload.Run(ctx, w, workload.HTTPFetcher(c, tier.url))
				if r.Errors > 0 {
					return res, fmt.Errorf("%s: %s", tier.name, r.FirstErr)
				}
				totals = append(totals, r.Total)
				all = append(all, r.Latencies...)
			}
			s := stats.Summarize(all)
			means[i] = s.Mean
			res.Rows = append(res.Rows, DiskRow{Tier: tier.name, LatencyMs: int(lat / time.Millisecond), Requests: len(set),
				Total: stats.Median(totals), Mean: s.Mean, P95: s.P95, P99: s.P99})
		}
		res.Ratios = append(res.Ratios, stats.Ratio(float64(means[1]), float64(means[0])))
	}
	l.S3.Faults().SetLatency(0)
	if st := diskInst.Server.Stats(); st.Handler.DiskHits == 0 {
		return res, fmt.Errorf("disk instance served no disk hits: %+v", st.Handler)
	}
	res.Targets = []Target{Target{What: "disk hit ≥ 3x faster than origin fetch at 20 ms (mean latency)", Want: 3, Got: res.Ratios[len(res.Ratios)-1], Unit: "x", Higher: true}.Check()}
	return res, nil
}
