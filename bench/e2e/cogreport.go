package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// renderCOG writes the COG section; plot draws a figure and returns its
// markdown.
func renderCOG(b *strings.Builder, s *COGResult, plot func(name string, f func(path string) error) string) {
	p := s.Params
	fmt.Fprintf(b, "### 10. COG imagery\n\n")
	fmt.Fprintf(b, "A source image of %d×%d pixels (`bench/e2e/aerial`: fields with furrows, woods, hedgerows, roads, a river and sensor noise, drawn the same on every machine; about 10 m a pixel) written as two Cloud Optimized GeoTIFFs by `gdal_translate` (%s); drawing it and writing both files and the archive below took %s:\n\n",
		p.Side, p.Side, s.GDAL, d(s.Made))
	names := []string{"cog.tif", "utm.tif"}
	for i, c := range s.Commands {
		fmt.Fprintf(b, "- `%s` (%s)\n", c, mib(s.Bytes[names[i]]))
	}
	fmt.Fprintf(b, "\n`cog.tif` sits on the web mercator grid: its %d full-resolution tiles are XYZ tiles of zoom %d, which tilesieve answers with the stored JPEG made whole, one ranged GET, no decode. "+
		"`arc.pmtiles` (%s) holds those same tiles, read out of `cog.tif` with `shared/formats/tiff` and written with the product's writer (`shared/formats/pmtiles/pmwrite`, as `tilesieve upload` writes it); before any load, every tile of the runs is requested from both and the answers are checked byte for byte against each other. "+
		"`utm.tif` is the same pixels in %s (10 m a pixel, 512-pixel tiles): its XYZ tiles at its native zoom, %d, are resampled from the stored tiles each covers (decoded, reprojected, JPEG-encoded). "+
		"The runs request %d tiles of each: the same %d of `cog.tif`'s stored tiles, in one fixed random order, as `/cog/z/x/y.jpg` and `/arc/z/x/y.jpg`, and the %d UTM tiles nearest its centre, all inside its data, as `/utm/z/x/y.jpg` (the TileJSON's format for a JPEG COG). Mean answer: %s.\n\n",
		s.Stored, s.Zoom, mib(s.Bytes["arc.pmtiles"]), utmEPSG, s.UTMZoom, p.Tiles, p.Tiles, p.Tiles, tileSizes(s))
	fmt.Fprintf(b, "Every server is a `go build ./functions/tiles` process in local server mode against `bench/cmd/s3serve` (the three files as objects), as section 8 runs them: `MEM_CACHE_BYTES=%d`, a 1 GiB disk tier of its own, `SYNC_INTERVAL=1h`.\n\n", p.MemBytes)
	fmt.Fprintf(b, "**Warm.** One process, each tileset warmed by one pass over its tiles (a second request checked to be `X-Cache: HIT-MEMORY`), then loaded with `%s` over its %d paths, one tileset at a time in %d round(s) whose order rotates; each row is the median round, each ratio the median of the same-round ratios. The load generator shares the cores with the server. Server CPU per request is the CPU time of the server's process over a round (its threads' `/proc/PID/task/*/schedstat`) divided by the requests answered, as in section 2: the work of an answer, which a busy machine slows but adds nothing to. S3 requests over all the rounds: %d.\n\n",
		s.Wrk, p.Tiles, max(1, p.Rounds), s.WrkRequests)
	b.WriteString("| tileset | req/s | mean | p50 | p99 | errors | server CPU per request (median) | note |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	var cats []string
	var rps []float64
	for i, r := range s.Rows {
		fmt.Fprintf(b, "| %s | %.0f | %s | %s | %s | %d | %.1f µs | %s |\n", r.Server, r.RPS, d(r.Mean), d(r.P50), d(r.P99), r.Errors, us(stats.Median(s.CPU[cogSets[i].name])), r.Note)
		cats, rps = append(cats, cogSets[i].short), append(rps, r.RPS)
	}
	fmt.Fprintf(b, "\n**Cold and warm, per tile.** For each tileset and each injected S3 first-byte latency (s3serve `-latency`), %d run(s), each on a fresh process: one tile outside the run first, which opens the file (reads the TIFF header and IFDs, or the archive's header and root directory), then the %d tiles cold at concurrency %d (every answer checked to be `X-Cache: MISS`), counting s3serve's requests (`-control` stats) and summing the answers' `%s`, then the same tiles again on the same process (memory hits). Percentiles are over every request of the runs; totals are the median run's.\n\n",
		max(1, p.ColdReps), p.Tiles, p.Conc, tileserver.CostHeader)
	b.WriteString("| tileset | S3 latency | first tile, which opens the file: S3 requests | S3 requests per cold tile | per cold tile by the cost header | S3 bytes per cold tile | cold run's S3 bytes ÷ file size | cold total | cold p50 | cold p99 | warm total | warm p50 | warm p99 | S3 requests, warm |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var lcats []string
	var c50, c99, w50 []float64
	for _, r := range s.Runs {
		counted, header := r.perTile()
		var bytes int64
		for _, n := range r.CostBytes {
			bytes = max(bytes, n)
		}
		fmt.Fprintf(b, "| %s | %d ms | %s | %.3f | %.3f | %.1f KiB | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			cogSet(r.Set).short, r.LatencyMs, intList(r.OpenRequests), counted, header, float64(bytes)/float64(r.Tiles)/1024,
			x(stats.Ratio(float64(bytes), float64(s.Bytes[cogSet(r.Set).file]))),
			d(stats.Median(r.ColdTotals)), d(r.Cold.P50), d(r.Cold.P99), d(stats.Median(r.WarmTotals)), d(r.Warm.P50), d(r.Warm.P99), intList(r.WarmRequests))
		lcats = append(lcats, fmt.Sprintf("%s %dms", cogSet(r.Set).short, r.LatencyMs))
		c50, c99, w50 = append(c50, us(r.Cold.P50)), append(c99, us(r.Cold.P99)), append(w50, us(r.Warm.P50))
	}
	b.WriteString("\nThe first tile's count includes that tile's own read. S3 requests and bytes per cold tile are the most over the runs (s3serve's count, and the sums of the answers' cost header, which leaves out the open); the bytes a cold run read are set against the size of the whole file (overviews included): a resampled tile reads every stored tile it touches in full, and neighbouring tiles read the same stored tiles again. The warm column is s3serve's count over each warm run.\n")
	targetTable(b, s.Targets)
	b.WriteString(plot("cog.png", func(path string) error {
		return BarPlot(path, "COG imagery: per-tile latency (log scale)", "µs", lcats,
			[]Series{{Name: "cold p50", Values: c50}, {Name: "cold p99", Values: c99}, {Name: "warm p50", Values: w50}}, true)
	}))
	b.WriteString(plot("cog-warm.png", func(path string) error {
		return BarPlot(path, "COG imagery: warm req/s (wrk, median round)", "req/s", cats, []Series{{Name: "req/s", Values: rps}}, false)
	}))
	b.WriteString("\n")
}

func tileSizes(s *COGResult) string {
	var parts []string
	for _, set := range cogNames() {
		parts = append(parts, fmt.Sprintf("%s %.1f KiB", cogSet(set).short, s.TileBytes[set]/1024))
	}
	return strings.Join(parts, ", ")
}

func us(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
