package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/origin"
)

// Latencies are the injected S3 first-byte latencies every S3 comparison runs at.
var Latencies = []time.Duration{0, 20 * time.Millisecond}

// Scenarios of section 1, in table order.
var Scenarios = []string{"cold", "disk-only", "warm", "origin-direct"}

// IIIFRow is one workload × scenario × latency, over every repetition.
type IIIFRow struct {
	Workload  string        `json:"workload"`
	Scenario  string        `json:"scenario"`
	LatencyMs int           `json:"latency_ms"`
	Requests  int           `json:"requests"`
	Total     time.Duration `json:"total"` // median over repetitions
	Mean      time.Duration `json:"mean"`  // per request, over all repetitions
	P95       time.Duration `json:"p95"`
	Errors    int           `json:"errors"`
	ColdOver  float64       `json:"cold_over"` // cold total / this total
}

// IIIFResult is section 1.
type IIIFResult struct {
	Reps    int       `json:"reps"`
	Tiles   int       `json:"tiles"`
	MinSize int       `json:"min_size"`
	MaxSize int       `json:"max_size"`
	Rows    []IIIFRow `json:"rows"`
	Targets []Target  `json:"targets"`
}

// iiifSet is the tiles of the two viewer images, with a JSON info.json.
func iiifSet(pool tileset.Pool) tileset.Set {
	var keys []string
	for _, img := range []string{"cantaloupe", "mirador"} {
		keys = append(keys, IIIFKeys(img)...)
	}
	set := tileset.Build(keys, pool)
	for i, t := range set {
		if len(t.Key) > 9 && t.Key[len(t.Key)-9:] == "info.json" {
			set[i].Body = iiifInfo()
		}
	}
	return set
}

// iiifInfo is the level-0 info.json of a viewer image.
func iiifInfo() []byte {
	sf, _ := json.Marshal(workload.IIIFScaleFactors())
	return fmt.Appendf(nil, `{"@context":"http://iiif.io/api/image/3/context.json","type":"ImageService3","protocol":"http://iiif.io/api/image","profile":"level0","width":%d,"height":%d,"tiles":[{"width":%d,"scaleFactors":%s}]}`,
		workload.IIIFWidth, workload.IIIFHeight, workload.IIIFTile, sf)
}

// RunIIIF runs the Cantaloupe report's viewer loads against tilesieve cold,
// disk-only and warm, and against S3 directly, at each latency.
func RunIIIF(ctx context.Context, pool tileset.Pool, reps int) (IIIFResult, error) {
	l, err := NewLocalS3()
	if err != nil {
		return IIIFResult{}, err
	}
	defer l.Close()
	set := iiifSet(pool)
	if err := tileset.Seed(ctx, l.Client, Bucket, "", set); err != nil {
		return IIIFResult{}, err
	}
	var jpegs tileset.Set
	for _, t := range set {
		if tileset.ContentType(t.Key) == "image/jpeg" {
			jpegs = append(jpegs, t)
		}
	}
	lo, hi := jpegs.SizeRange()
	res := IIIFResult{Reps: reps, Tiles: len(set), MinSize: lo, MaxSize: hi}
	o := l.Origin()
	for _, lat := range Latencies {
		l.S3.Faults().SetLatency(lat)
		for _, w := range Workloads() {
			samples := map[string][]workload.Result{}
			for range reps {
				runs, err := iiifRep(ctx, l, o, w)
				if err != nil {
					return res, err
				}
				for sc, r := range runs {
					samples[sc] = append(samples[sc], r)
				}
			}
			var coldTotal time.Duration
			for _, sc := range Scenarios {
				row := iiifRow(w, sc, lat, samples[sc])
				if sc == "cold" {
					coldTotal = row.Total
				}
				row.ColdOver = stats.Ratio(float64(coldTotal), float64(row.Total))
				res.Rows = append(res.Rows, row)
			}
		}
	}
	l.S3.Faults().SetLatency(0)
	for _, w := range Workloads() {
		var cold, warm IIIFRow
		for _, r := range res.Rows {
			if r.Workload == w.Name && r.LatencyMs == 20 {
				switch r.Scenario {
				case "cold":
					cold = r
				case "warm":
					warm = r
				}
			}
		}
		res.Targets = append(res.Targets, withReason(Target{
			What: fmt.Sprintf("%s: warm ≥ 20x faster than cold at 20 ms (total time)", w.Name),
			Want: 20, Got: stats.Ratio(float64(cold.Total), float64(warm.Total)), Unit: "x", Higher: true,
		}.Check(), "the warm total is a few tens of ms for ~100 requests, including the TCP connections a new client opens, on two cores shared with the S3 endpoint and other work; the ratio moves a lot from run to run on this machine (development runs gave 45-75x). Mean and p95 per request are in the table"))
	}
	return res, nil
}

// iiifRep runs w once in each scenario: cold on fresh tiers, then disk-only
// (a new memory tier over the disk tier cold just filled), then warm (the
// same instance again), then straight to S3 with the SDK.
func iiifRep(ctx context.Context, l *LocalS3, o *origin.Client, w workload.Workload) (map[string]workload.Result, error) {
	out := map[string]workload.Result{}
	dir, err := TempDir("iiif")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cold, err := NewInstance(o, TierOptions{DiskDir: dir})
	if err != nil {
		return nil, err
	}
	run := func(name string, inst *Instance) error {
		url, stop, err := Serve(inst.Server)
		if err != nil {
			return err
		}
		defer stop()
		c := HTTPClient()
		defer c.CloseIdleConnections()
		out[name] = workload.Run(ctx, w, workload.HTTPFetcher(c, url))
		if out[name].Errors > 0 {
			return fmt.Errorf("iiif %s %s: %d errors, first: %s", w.Name, name, out[name].Errors, out[name].FirstErr)
		}
		return nil
	}
	if err := run("cold", cold); err != nil {
		return nil, err
	}
	diskOnly, err := NewInstance(o, TierOptions{Disk: cold.Disk})
	if err != nil {
		return nil, err
	}
	if err := run("disk-only", diskOnly); err != nil {
		return nil, err
	}
	if err := run("warm", diskOnly); err != nil {
		return nil, err
	}
	api := newS3Client(l.URL(), l.S3)
	out["origin-direct"] = workload.Run(ctx, w, s3Fetcher(api, Bucket))
	if r := out["origin-direct"]; r.Errors > 0 {
		return nil, fmt.Errorf("iiif %s origin-direct: %d errors, first: %s", w.Name, r.Errors, r.FirstErr)
	}
	return out, nil
}

// s3Fetcher GETs key straight from the bucket with the SDK (signed).
func s3Fetcher(api *s3.Client, bucket string) workload.Fetcher {
	return func(ctx context.Context, key string) error {
		out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		_, err = io.Copy(io.Discard, out.Body)
		return err
	}
}

func iiifRow(w workload.Workload, sc string, lat time.Duration, rs []workload.Result) IIIFRow {
	var totals, all []time.Duration
	errs := 0
	for _, r := range rs {
		totals = append(totals, r.Total)
		all = append(all, r.Latencies...)
		errs += r.Errors
	}
	s := stats.Summarize(all)
	return IIIFRow{Workload: w.Name, Scenario: sc, LatencyMs: int(lat / time.Millisecond), Requests: w.Requests(),
		Total: stats.Median(totals), Mean: s.Mean, P95: s.P95, Errors: errs}
}
