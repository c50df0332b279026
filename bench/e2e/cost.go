package e2e

import (
	"fmt"
	"math"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Prices are the published AWS prices the cost model uses (us-east-1, as
// given in the benchmark issue; CloudFront does not charge for origin fetches
// from AWS origins, and charges viewer requests alike for both designs).
type Prices struct {
	S3GetPer1000     float64 `json:"s3_get_per_1000"`
	LambdaGBs        float64 `json:"lambda_gb_s"`
	LambdaPerMillion float64 `json:"lambda_per_million"`
	CFOriginRequest  float64 `json:"cf_origin_request"`
	CFViewerPer10000 float64 `json:"cf_viewer_per_10000"`
}

// DefaultPrices are those prices.
var DefaultPrices = Prices{S3GetPer1000: 0.0004, LambdaGBs: 0.0000133334, LambdaPerMillion: 0.20, CFOriginRequest: 0, CFViewerPer10000: 0.0100}

// CostParams are the model's assumptions.
type CostParams struct {
	Catalog        int           `json:"catalog"`          // distinct tiles
	ZipfS          float64       `json:"zipf_s"`           // popularity exponent
	ViewerRates    []float64     `json:"viewer_rates"`     // viewer requests per second, one row each
	Window         time.Duration `json:"window"`           // how long an instance lives and serves (its cache's history)
	CDNHitRatio    float64       `json:"cdn_hit_ratio"`    // assumed
	MemBytes       int64         `json:"mem_bytes"`        // memory tier per instance
	TilesieveMemGB float64       `json:"tilesieve_mem_gb"` // function memory
	NoCacheMemGB   float64       `json:"nocache_mem_gb"`
	HitMs          float64       `json:"hit_ms"`  // duration of a memory hit (measured, section 0)
	MissMs         float64       `json:"miss_ms"` // duration of an S3 fetch, and of a hit that waits for a journal check (measured, section 3)
	SyncInterval   time.Duration `json:"sync_interval"`
	MaxSimulated   int           `json:"max_simulated"`  // requests fed to each simulated instance at most
	DurationsFrom  string        `json:"durations_from"` // where HitMs and MissMs come from
}

// CostRow is one request rate.
type CostRow struct {
	ViewerRate  float64 `json:"viewer_rate"`
	OriginRate  float64 `json:"origin_rate"` // requests per second reaching the function
	MeanMs      float64 `json:"mean_ms"`     // mean duration of a function request
	Concurrency float64 `json:"concurrency"` // OriginRate × MeanMs: Little's law
	N           int     `json:"n"`           // environments: ⌈Concurrency⌉, at least 1
	PerInstance float64 `json:"per_instance"`
	HitRatio    float64 `json:"hit_ratio"` // memory tier, measured by simulation
	// ChecksPerSec is one instance's journal GETs per second: with requests
	// arriving at random (Poisson) at rate λ, a check is made on the first
	// request at least SYNC_INTERVAL after the last one, 1/(SYNC_INTERVAL + 1/λ).
	ChecksPerSec     float64 `json:"checks_per_sec"`
	JournalMonth     float64 `json:"journal_month"`       // $ per instance per 30 days of such traffic
	JournalPerMillon float64 `json:"journal_per_million"` // $ of journal GETs per million requests the instance serves
	// Per million function (origin) requests:
	TileGETs    float64 `json:"tile_gets"`
	JournalGETs float64 `json:"journal_gets"`
	GBs         float64 `json:"gb_s"`
	Cost        float64 `json:"cost"` // S3 + Lambda
	NoCacheN    int     `json:"nocache_n"`
	NoCacheGBs  float64 `json:"nocache_gb_s"`
	NoCacheCost float64 `json:"nocache_cost"`
	Saving      float64 `json:"saving"` // NoCacheCost / Cost
}

// CostResult is section 7.
type CostResult struct {
	Params CostParams `json:"params"`
	Prices Prices     `json:"prices"`
	Rows   []CostRow  `json:"rows"`
}

// SimulateHitRatio draws perInstance requests of the Zipf trace (a random
// split of an independent Zipf trace is again such a trace) into a fresh
// memory tier (shared/tiers/memory) and returns its hit ratio, averaged over up to
// three instances.
func SimulateHitRatio(p CostParams, n, perInstance int, z *workload.Zipf) (float64, error) {
	insts := min(n, 3)
	body := make([]byte, 60_001) // one backing array; tiles are slices of it
	hits, total := 0, 0
	for range insts {
		c, err := memory.New(memory.Config{MaxBytes: p.MemBytes})
		if err != nil {
			return 0, err
		}
		for range perInstance {
			r := z.Next()
			key := fmt.Sprintf("t/%d", r)
			total++
			if _, ok := c.Get(key); ok {
				hits++
				continue
			}
			c.Set(key, &tile.Tile{Body: body[:workload.TileSize(r)]})
		}
	}
	if total == 0 {
		return 0, nil
	}
	return float64(hits) / float64(total), nil
}

// RunCost finds, per request rate, how many environments Lambda runs (the
// concurrency the traffic needs, which depends on the hit ratio, which
// depends on how many instances share the traffic: iterated to a fixed
// point), simulates their hit ratio and prices one million function requests.
func RunCost(p CostParams, prices Prices) (CostResult, error) {
	res := CostResult{Params: p, Prices: prices}
	z := workload.NewZipf(p.Catalog, p.ZipfS, 11)
	for _, v := range p.ViewerRates {
		rate := v * (1 - p.CDNHitRatio)
		n, h := 1, 0.0
		for range 8 {
			per := int(math.Min(rate*p.Window.Seconds()/float64(n), float64(p.MaxSimulated)))
			var err error
			if h, err = SimulateHitRatio(p, n, per, z); err != nil {
				return res, err
			}
			next := Price(p, prices, v, n, h).instancesNeeded()
			if next == n {
				break
			}
			n = next
		}
		res.Rows = append(res.Rows, Price(p, prices, v, n, h))
	}
	return res, nil
}

// instancesNeeded is ⌈concurrency⌉, at least 1.
func (r CostRow) instancesNeeded() int { return max(1, int(math.Ceil(r.Concurrency-1e-9))) }

// Price is the cost model at viewerRate viewer requests per second served by
// n instances with memory hit ratio h, per million function requests.
func Price(p CostParams, pr Prices, viewerRate float64, n int, h float64) CostRow {
	r := CostRow{ViewerRate: viewerRate, OriginRate: viewerRate * (1 - p.CDNHitRatio), N: n, HitRatio: h}
	r.PerInstance = r.OriginRate / float64(n)
	if r.PerInstance > 0 {
		r.ChecksPerSec = 1 / (p.SyncInterval.Seconds() + 1/r.PerInstance)
	}
	get := pr.S3GetPer1000 / 1000
	r.JournalMonth = r.ChecksPerSec * 30 * 24 * 3600 * get
	carry := 0.0 // share of requests that carry a check
	if r.PerInstance > 0 {
		carry = r.ChecksPerSec / r.PerInstance
	}
	r.JournalPerMillon = carry * 1e6 * get
	// A check is an S3 round trip on the request it rides on. A miss makes
	// it beside its own fetch (tiers.Engine.Get), so only a hit
	// carrying one lasts as long as a fetch.
	slowHits := h * carry
	r.MeanMs = (h-slowHits)*p.HitMs + (1-h+slowHits)*p.MissMs
	r.Concurrency = r.OriginRate * r.MeanMs / 1000
	billedHit, billedMiss := math.Ceil(p.HitMs), math.Ceil(p.MissMs)
	r.TileGETs = (1 - h) * 1e6
	r.JournalGETs = carry * 1e6
	r.GBs = 1e6 * ((h-slowHits)*billedHit + (1-h+slowHits)*billedMiss) / 1000 * p.TilesieveMemGB
	r.Cost = (r.TileGETs+r.JournalGETs)*get + r.GBs*pr.LambdaGBs + pr.LambdaPerMillion
	r.NoCacheN = max(1, int(math.Ceil(r.OriginRate*p.MissMs/1000-1e-9)))
	r.NoCacheGBs = 1e6 * billedMiss / 1000 * p.NoCacheMemGB
	r.NoCacheCost = 1e6*get + r.NoCacheGBs*pr.LambdaGBs + pr.LambdaPerMillion
	if r.Cost > 0 {
		r.Saving = r.NoCacheCost / r.Cost
	}
	return r
}
