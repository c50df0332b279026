// Package workload defines the request patterns of the end-to-end
// benchmarks (the IIIF-viewer loads of the Cantaloupe report and a Zipf tile
// trace for the hit-ratio simulation) and runs a phased load against any
// fetch function, recording each request's latency.
package workload

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/bench/internal/zipf"
)

// Phase is a batch of requests made at a fixed concurrency; the next phase
// starts when every request of this one has finished (a viewer waits for a
// view to load before the user moves on).
type Phase struct {
	Name        string
	Keys        []string
	Concurrency int
}

// Workload is a sequence of phases.
type Workload struct {
	Name   string
	Phases []Phase
}

// Requests is the number of requests over all phases.
func (w Workload) Requests() int {
	n := 0
	for _, p := range w.Phases {
		n += len(p.Keys)
	}
	return n
}

// Keys lists every distinct key the workload requests, in first-use order.
func (w Workload) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range w.Phases {
		for _, k := range p.Keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// The viewer images: IIIFWidth×IIIFHeight pixels cut into IIIFTile-pixel
// tiles (tileset.IIIFPyramid).
const (
	IIIFWidth  = 8192
	IIIFHeight = 6144
	IIIFTile   = 512
)

// IIIFScaleFactors are the scale factors of the viewer images' pyramid
// (1, 2, 4, … until one tile covers the image), as info.json lists them.
func IIIFScaleFactors() []int {
	var out []int
	for s := 1; ; s *= 2 {
		out = append(out, s)
		if IIIFTile*s >= IIIFWidth && IIIFTile*s >= IIIFHeight {
			return out
		}
	}
}

// levels returns the full-resolution (scale 1) and half-resolution (scale 2)
// tiles of a viewer image.
func levels(imageID string) (full, half []string) {
	for _, t := range tileset.IIIFPyramid(imageID, IIIFWidth, IIIFHeight, IIIFTile) {
		switch t.Scale {
		case 1:
			full = append(full, t.Key)
		case 2:
			half = append(half, t.Key)
		}
	}
	return full, half
}

// Cantaloupe is the Cantaloupe report's load: 91 tiles of one image at
// concurrency 10.
func Cantaloupe(imageID string) Workload {
	full, _ := levels(imageID)
	return Workload{Name: "cantaloupe-91", Phases: []Phase{{Name: "91 tiles", Keys: full[:91], Concurrency: 10}}}
}

// Mirador is the report's Mirador simulation: opening an image (info.json and
// thumbnail at concurrency 2), the first view (28 tiles at 6), a zoom (50 tiles
// at 6), and three users panning at once (3 × 8 tiles at 18). Every tile is
// distinct, so a cold server fetches each from S3.
func Mirador(imageID string) Workload {
	full, half := levels(imageID)
	return Workload{Name: "mirador", Phases: []Phase{
		{Name: "1 info+thumbnail", Keys: []string{tileset.IIIFInfo(imageID), tileset.IIIFThumb(imageID)}, Concurrency: 2},
		{Name: "2 first view", Keys: half[:28], Concurrency: 6},
		{Name: "3 zoom", Keys: full[:50], Concurrency: 6},
		{Name: "4 three users", Keys: full[50 : 50+24], Concurrency: 18},
	}}
}

// Fetcher makes one request for key and reads the whole answer.
type Fetcher func(ctx context.Context, key string) error

// Result is one run of a workload.
type Result struct {
	Total     time.Duration   // wall time of all phases
	Phases    []time.Duration // wall time of each phase
	Latencies []time.Duration // every request, in completion order
	Errors    int
	FirstErr  string
}

// Run runs w with f.
func Run(ctx context.Context, w Workload, f Fetcher) Result {
	var res Result
	var mu sync.Mutex // guards res.Latencies, res.Errors, res.FirstErr
	start := time.Now()
	for _, p := range w.Phases {
		pstart := time.Now()
		keys := make(chan string)
		var wg sync.WaitGroup
		for range max(p.Concurrency, 1) {
			wg.Go(func() {
				for k := range keys {
					t0 := time.Now()
					err := f(ctx, k)
					d := time.Since(t0)
					mu.Lock()
					res.Latencies = append(res.Latencies, d)
					if err != nil {
						res.Errors++
						if res.FirstErr == "" {
							res.FirstErr = err.Error()
						}
					}
					mu.Unlock()
				}
			})
		}
		for _, k := range p.Keys {
			keys <- k
		}
		close(keys)
		wg.Wait()
		res.Phases = append(res.Phases, time.Since(pstart))
	}
	res.Total = time.Since(start)
	return res
}

// HTTPFetcher GETs base+"/"+key with c and wants a 200.
func HTTPFetcher(c *http.Client, base string) Fetcher {
	base = strings.TrimSuffix(base, "/")
	return func(ctx context.Context, key string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/"+key, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", key, resp.Status)
		}
		return nil
	}
}

// ---- Zipf trace -----------------------------------------------------------------

// Zipf draws ranks 0..n-1 with P(k) ∝ 1/(k+1)^s, for any s > 0 (math/rand's
// Zipf needs s > 1; measured tile popularity is often near or below 1).
type Zipf = zipf.Zipf

// NewZipf builds the sampler's table (8 bytes per rank).
func NewZipf(n int, s float64, seed uint64) *Zipf {
	return zipf.New(rand.New(rand.NewPCG(seed, 0x21bf)), s, n)
}

// TileSize is the body size of the tile of a rank: 10-60 KB, fixed per rank.
func TileSize(rank int) int {
	h := uint64(rank)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	h ^= h >> 29
	return 10_000 + int(h%50_001)
}
