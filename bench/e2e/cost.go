package e2e

import (
	"fmt"
	"math"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/workload"
	"github.com/tilesieve/tilesieve/shared/cache"
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
	ViewerRequests int           `json:"viewer_requests"`  // per window (1M)
	Window         time.Duration `json:"window"`           // over which they arrive
	CDNHitRatio    float64       `json:"cdn_hit_ratio"`    // assumed
	MemBytes       int64         `json:"mem_bytes"`        // memory tier per instance
	TilesieveMemGB float64       `json:"tilesieve_mem_gb"` // function memory
	NoCacheMemGB   float64       `json:"nocache_mem_gb"`
	HitMs          float64       `json:"hit_ms"`  // billed duration of a memory hit
	MissMs         float64       `json:"miss_ms"` // billed duration of an S3 fetch (also the no-cache function's)
	SyncInterval   time.Duration `json:"sync_interval"`
	Instances      []int         `json:"instances"`
}

// CostRow is one instance count.
type CostRow struct {
	N              int     `json:"n"`
	HitRatio       float64 `json:"hit_ratio"` // memory tier, measured by simulation
	OriginRequests float64 `json:"origin_requests"`
	TileGETs       float64 `json:"tile_gets"`
	JournalGETs    float64 `json:"journal_gets"`
	GBs            float64 `json:"gb_s"`
	Cost           float64 `json:"cost"` // S3 + Lambda, per million viewer requests
	NoCacheGETs    float64 `json:"nocache_gets"`
	NoCacheGBs     float64 `json:"nocache_gb_s"`
	NoCacheCost    float64 `json:"nocache_cost"`
	Saving         float64 `json:"saving"` // NoCacheCost / Cost
}

// CostResult is section 7.
type CostResult struct {
	Params CostParams `json:"params"`
	Prices Prices     `json:"prices"`
	Rows   []CostRow  `json:"rows"`
}

// originRequests is how many viewer requests the CDN passes to the function.
func (p CostParams) originRequests() float64 {
	return float64(p.ViewerRequests) * (1 - p.CDNHitRatio)
}

// perInstance is each of n instances' share of the origin requests.
func (p CostParams) perInstance(n int) float64 { return p.originRequests() / float64(n) }

// SimulateHitRatio draws the origin requests one instance of n sees (a random
// split of an independent Zipf trace is again such a trace) into a fresh
// memory tier (shared/cache) and returns its hit ratio, averaged over a few
// instances.
func SimulateHitRatio(p CostParams, n int, z *workload.Zipf) (float64, error) {
	perInstance := int(p.perInstance(n))
	insts := min(n, 3)
	body := make([]byte, 60_001) // one backing array; tiles are slices of it
	hits, total := 0, 0
	for range insts {
		c, err := cache.New(cache.Config{MaxBytes: p.MemBytes})
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

// RunCost simulates the hit ratios and prices one million viewer requests.
func RunCost(p CostParams, prices Prices) (CostResult, error) {
	res := CostResult{Params: p, Prices: prices}
	z := workload.NewZipf(p.Catalog, p.ZipfS, 11)
	for _, n := range p.Instances {
		h, err := SimulateHitRatio(p, n, z)
		if err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, Price(p, prices, n, h))
	}
	return res, nil
}

// Price is the cost model for n instances with memory hit ratio h, per
// million viewer requests.
func Price(p CostParams, pr Prices, n int, h float64) CostRow {
	scale := 1e6 / float64(p.ViewerRequests)
	origin, perInstance := p.originRequests(), p.perInstance(n)
	// A busy instance reads the journal at most once per SYNC_INTERVAL, and
	// only on a request.
	checks := math.Min(perInstance, p.Window.Seconds()/p.SyncInterval.Seconds())
	r := CostRow{N: n, HitRatio: h, OriginRequests: origin * scale}
	r.TileGETs = origin * (1 - h) * scale
	r.JournalGETs = float64(n) * checks * scale
	billedHit, billedMiss := math.Ceil(p.HitMs), math.Ceil(p.MissMs)
	r.GBs = r.OriginRequests * (h*billedHit + (1-h)*billedMiss) / 1000 * p.TilesieveMemGB
	// A check is an S3 round trip on the request it rides on. A miss makes
	// it beside its own fetch (tileserver.Server.WithSync), so only a hit
	// (share h of the requests that carry one) is billed for it, like a fetch.
	r.GBs += r.JournalGETs * h * billedMiss / 1000 * p.TilesieveMemGB
	r.Cost = (r.TileGETs+r.JournalGETs)/1000*pr.S3GetPer1000 + r.GBs*pr.LambdaGBs + r.OriginRequests/1e6*pr.LambdaPerMillion + r.OriginRequests*pr.CFOriginRequest
	r.NoCacheGETs = r.OriginRequests
	r.NoCacheGBs = r.OriginRequests * billedMiss / 1000 * p.NoCacheMemGB
	r.NoCacheCost = r.NoCacheGETs/1000*pr.S3GetPer1000 + r.NoCacheGBs*pr.LambdaGBs + r.OriginRequests/1e6*pr.LambdaPerMillion + r.OriginRequests*pr.CFOriginRequest
	if r.Cost > 0 {
		r.Saving = r.NoCacheCost / r.Cost
	}
	return r
}
