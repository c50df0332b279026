package e2e

import (
	"fmt"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

// imagesSection is the section's label in the summary of targets.
const imagesSection = "1 IIIF images (TIFF)"

// run is the run of server, session and latency (ms), nil when absent.
func (r *ImagesResult) run(server, session string, latMs int) *ImageRun {
	for i := range r.Runs {
		x := &r.Runs[i]
		if x.Server == server && x.Session == session && x.LatencyMs == latMs {
			return x
		}
	}
	return nil
}

// roundRatios are a[i]/b[i] of the rounds both have.
func roundRatios(a, b []time.Duration) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		out = append(out, stats.Ratio(float64(a[i]), float64(b[i])))
	}
	return out
}

func (r *ImagesResult) throughputRow(name string) *ServerRow {
	for i := range r.Throughput {
		if r.Throughput[i].Server == name {
			return &r.Throughput[i]
		}
	}
	return nil
}

// targets states the section's targets and whether the run met them.
func (r *ImagesResult) targets() {
	r.Targets = nil
	first, last := 0, 0
	if ls := r.Params.Latencies; len(ls) > 0 {
		first, last = int(ls[0]/time.Millisecond), int(ls[len(ls)-1]/time.Millisecond)
	}
	for _, s := range r.Sessions {
		ts, iip := r.run(imgTS, s.Name, first), r.run(imgIIP, s.Name, 0)
		if ts == nil || iip == nil {
			continue
		}
		rs := roundRatios(ts.Cold, iip.Cold)
		t := Target{What: fmt.Sprintf("%s cold at %d ms: tilesieve's total ≤ 1.5x IIPImage's", s.Name, first), Want: 1.5,
			Got: stats.MedianFloat(rs), Unit: "x", Reason: "same-round ratios " + ratioList(rs)}.Check()
		if !t.Met {
			t.Reason = joinNote(t.Reason, r.coldWhy(ts, iip))
		}
		r.Targets = append(r.Targets, t)
	}
	if ts, st := r.throughputRow(wrkTS), r.throughputRow(wrkStatic); ts != nil && st != nil {
		// Against the faster of IIPImage's two ways of being asked.
		vsIIP, rsIIP, against := 0.0, []float64(nil), ""
		for _, name := range []string{wrkIIP, wrkIIPLegacy} {
			if iip := r.throughputRow(name); iip != nil {
				if v, rs := sameRound(ts, iip); against == "" || v < vsIIP {
					vsIIP, rsIIP, against = v, rs, name
				}
			}
		}
		vsStatic, rsStatic := sameRound(ts, st)
		r.Targets = append(r.Targets,
			Target{What: "warm throughput (wrk, the Mirador requests): tilesieve ≥ 10x IIPImage", Want: 10, Got: vsIIP, Unit: "x", Higher: true,
				Reason: fmt.Sprintf("against %s, the faster IIPImage row; same-round ratios %s", against, ratioList(rsIIP))}.Check(),
			withReason(Target{What: "warm throughput (wrk, the Mirador requests): tilesieve ≥ 0.5x nginx serving its answers as files", Want: 0.5, Got: vsStatic, Unit: "x", Higher: true,
				Reason: fmt.Sprintf("same-round ratios %s; server CPU per answer (median over the rounds): tilesieve %s, nginx %s, a ratio the machine's other work moves less than req/s",
					ratioList(rsStatic), d(r.WrkCPU[wrkTS]), d(r.WrkCPU[wrkStatic]))}.Check(), r.wrkWhy()))
	}
	for _, s := range r.Sessions {
		ts := r.run(imgTS, s.Name, last)
		if ts == nil {
			continue
		}
		rs := roundRatios(ts.Cold, ts.Warm)
		r.Targets = append(r.Targets, Target{What: fmt.Sprintf("%s: warm ≥ 20x faster than cold at %d ms (total time)", s.Name, last), Want: 20,
			Got: stats.MedianFloat(rs), Unit: "x", Higher: true, Reason: "per-round ratios " + ratioList(rs)}.Check())
	}
	for _, p := range r.Stored {
		r.Targets = append(r.Targets, Target{What: fmt.Sprintf("%s: S3 requests per stored tile, cold, the image open (%d tiles)", p.Session, p.Tiles), Want: 1,
			Got: stats.Ratio(float64(p.S3Requests), float64(p.Tiles)), Reason: fmt.Sprintf("%d S3 requests", p.S3Requests)}.Check())
	}
}

// wrkWhy is what the run measured about tilesieve's throughput against
// nginx's: CPU time per answer of each, and where tilesieve's goes.
func (r *ImagesResult) wrkWhy() string {
	why := fmt.Sprintf("same-round ratios %s; server CPU per answer under wrk (median over the rounds): tilesieve %s, nginx %s, and wrk shares the two cores (with other work on this machine: the rounds' req/s spread widely, see the table)",
		ratioList(r.wrkRatios(wrkStatic)), d(r.WrkCPU[wrkTS]), d(r.WrkCPU[wrkStatic]))
	if len(r.WrkProfile) > 0 {
		why += "; hottest in tilesieve under wrk (perf): " + strings.Join(r.WrkProfile[:min(6, len(r.WrkProfile))], ", ")
	}
	return why
}

// wrkRatios are tilesieve's same-round req/s ratios to server's.
func (r *ImagesResult) wrkRatios(server string) []float64 {
	ts, o := r.throughputRow(wrkTS), r.throughputRow(server)
	if ts == nil || o == nil {
		return nil
	}
	_, rs := sameRound(ts, o)
	return rs
}

// coldWhy is what the run measured about a cold total over its bound: CPU
// time per cold run of each side and the profile's hottest symbols.
func (r *ImagesResult) coldWhy(ts, iip *ImageRun) string {
	why := fmt.Sprintf("CPU per cold run (median): tilesieve %s + the S3 endpoint %s, IIPImage %s", d(stats.Median(ts.ColdCPU)), d(stats.Median(ts.S3CPU)), d(stats.Median(iip.ColdCPU)))
	if len(r.Profile) > 0 {
		why += "; hottest in a profiled cold Mirador run (perf, tilesieve and the S3 endpoint): " + strings.Join(r.Profile[:min(5, len(r.Profile))], ", ")
	}
	return why
}

// renderImages writes the section.
func renderImages(b *strings.Builder, r *ImagesResult, plot func(name string, f func(path string) error) string) {
	renderImagesSetup(b, r)
	p := r.Params
	b.WriteString("| session | server | S3 latency | requests | cold total | cold p50 | cold p95 | warm total | warm p50 | warm p95 | cold ÷ warm | CPU per cold run | S3 requests per cold run |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var cats []string
	var cold, warm []float64
	for _, run := range r.Runs {
		lat, cpu, s3 := "–", "–", "–"
		if run.Server == imgTS {
			lat = fmt.Sprintf("%d ms", run.LatencyMs)
			cpu = d(stats.Median(run.ColdCPU)) + " + S3 " + d(stats.Median(run.S3CPU))
			s3 = intList(run.S3)
		} else if len(run.ColdCPU) > 0 {
			cpu = d(stats.Median(run.ColdCPU))
		}
		ct, wt := stats.Median(run.Cold), stats.Median(run.Warm)
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", run.Session, run.Server, lat, run.Requests,
			d(ct), d(run.ColdLat.P50), d(run.ColdLat.P95), d(wt), d(run.WarmLat.P50), d(run.WarmLat.P95), x(stats.Ratio(float64(ct), float64(wt))), cpu, s3)
		name := run.Server
		if run.Server == imgTS {
			name += fmt.Sprintf(" %dms", run.LatencyMs)
		}
		cats = append(cats, strings.TrimSuffix(run.Session, "-91")+"\n"+name)
		cold, warm = append(cold, ms(ct)), append(warm, ms(wt))
	}
	fmt.Fprintf(b, "\nOpening the image (a fresh process's first info.json) took %d S3 request(s). *Stored tiles alone*: on a fresh process at %d ms, info.json first (the image opened), then only the session's stored tiles, at concurrency 6, counting S3 requests (s3serve's count):\n\n",
		r.OpenRequests, int(p.Latencies[0]/time.Millisecond))
	b.WriteString("| session | stored tiles | S3 requests | per tile |\n|---|---:|---:|---:|\n")
	for _, s := range r.Stored {
		fmt.Fprintf(b, "| %s | %d | %d | %.2f |\n", s.Session, s.Tiles, s.S3Requests, stats.Ratio(float64(s.S3Requests), float64(s.Tiles)))
	}
	if len(r.Throughput) > 0 {
		fmt.Fprintf(b, "\n**Throughput**: `%s` against each server warmed by one pass, cycling through the Mirador session's requests, %d rounds whose order rotates; each row is the median round, the ratios the median of the same-round ratios. IIPImage is also asked with sizes as `w,`, as OpenSeadragon 2 and Mirador 2 send them (the same tiles; iipsrv answers that form faster), and the target takes the faster of its two rows. wrk shares the cores with the servers; nginx static shows how far it and this client can go.\n\n", r.WrkCommand, max(1, p.WrkRounds))
		b.WriteString("| server | req/s | mean | p50 | p99 | non-2xx | server CPU per answer | note |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, row := range r.Throughput {
			fmt.Fprintf(b, "| %s | %.0f | %s | %s | %s | %d | %s | %s |\n", row.Server, row.RPS, d(row.Mean), d(row.P50), d(row.P99), row.Errors, d(r.WrkCPU[row.Server]), row.Note)
		}
		b.WriteString("\nServer CPU per answer is the CPU time of the server's processes over a wrk run (`/proc/PID/task/*/schedstat`; for IIPImage its iipsrv processes and the nginx in front of them, for nginx static its master and workers) divided by the answers, the median over the rounds.\n")
		if len(r.WrkProfile) > 0 {
			b.WriteString("\n**Where tilesieve's CPU goes under wrk**: `perf record -F 999` of the tile function during one more wrk run; each binary's share (the kernel's included), then the symbols over 1.5% of the samples:\n\n")
			for _, l := range r.WrkProfile {
				fmt.Fprintf(b, "- `%s`\n", l)
			}
		}
	}
	if len(r.Profile) > 0 {
		b.WriteString("\n**Where a cold run's CPU goes**: `perf record -F 999` of the tile function and the S3 endpoint during one more cold Mirador run at the first latency; each binary's share (the kernel's included), then the symbols over 1.5% of the samples:\n\n")
		for _, l := range r.Profile {
			fmt.Fprintf(b, "- `%s`\n", l)
		}
	} else if r.ProfileNote != "" {
		fmt.Fprintf(b, "\n%s.\n", r.ProfileNote)
	}
	targetTable(b, r.Targets)
	b.WriteString(plot("images.png", func(path string) error {
		return BarPlot(path, "IIIF images: session total, cold and warm (log scale)", "ms", cats, []Series{{Name: "cold", Values: cold}, {Name: "warm", Values: warm}}, true)
	}))
	b.WriteString("\n")
}

// renderImagesSetup writes what the section runs: the image, the servers,
// the sessions and the scenarios.
func renderImagesSetup(b *strings.Builder, r *ImagesResult) {
	p, img := r.Params, r.Image
	b.WriteString("### 1b. IIIF images (pyramidal TIFF)\n\n")
	took := "written by this run in " + d(img.Generated)
	if img.Reused {
		took = "reused from the bench's cache (`bench/results/cache`), where an earlier run wrote it"
		if img.Generated > 0 {
			took += " in " + d(img.Generated)
		}
	}
	fmt.Fprintf(b, "**The image**: %d×%d RGB, %d stored levels (%s), 512-px JPEG tiles (quality 85), %d tiles in all, %s; %s with libvips: `%s`. "+
		"It is Perlin noise at a third of the size (a smooth colour field per band with fine texture over it) scaled up 3x, so that its tiles weigh tens of KB as a scan's do; "+
		"the last command is the one users run (`bench/e2e/bigtiff.go` lists them all). It is uploaded to `bench/cmd/s3serve` as `%s.tif` (one endpoint per S3 latency, first-byte latency injected with `-latency`).\n\n",
		BigTIFFWidth, BigTIFFHeight, len(r.Levels), levelList(r.Levels), r.StoredTiles, mib(img.Bytes), took, img.Commands[len(img.Commands)-1], imgID)
	fmt.Fprintf(b, "**The servers**, each on 127.0.0.1: **tilesieve**, `go build ./functions/tiles` as its own process (local server mode, default memory tier, an empty 1 GiB disk tier, `SYNC_INTERVAL=1h`: the journal is section 5's), "+
		"at `/iiif/3/%[1]s/…`; **IIPImage**, Debian's `iipimage-server` (%[2]s) reading the same file from local disk, %[3]d processes (one per core; each serves one FastCGI connection at a time) "+
		"behind nginx's FastCGI as IIPImage documents it, `MAX_IMAGE_CACHE_SIZE=%[4]d` (MB, its tile cache: tilesieve's memory tier is 256 MiB) and `JPEG_QUALITY=%[5]d` (tilesieve's derived answers' quality), at `%[6]s?IIIF=%[1]s.tif/…` (its IIIF is 2.1); "+
		"**nginx static**, Debian's nginx serving every answer tilesieve gave to the sessions' requests as files, `sendfile on` (the floor).\n\n",
		imgID, IIPSrv, p.IIPProcs, p.IIPCacheMB, p.JPEGQuality, iipPath)
	same := "IIPImage's info.json (2.1) gives the same tile requests as tilesieve's (3.0): region and `w,h` size, as OpenSeadragon 3 and later send in both versions"
	if !r.SameURLs {
		same = "IIPImage's info.json gives other tile requests than tilesieve's; each server is sent its own"
	}
	fmt.Fprintf(b, "**The sessions** are computed from each server's own info.json as OpenSeadragon computes tile URLs (Mirador draws with it; `bench/e2e/viewer`): levels at ⌈size ÷ scale factor⌉, regions clipped to the image. %s. "+
		"A tile is a *stored tile* when it is one 512×512 stored tile as it is (tilesieve answers it with the stored bytes, no decode); the tiles at a level's right and bottom edges are not (the stored edge tile is padded, and OpenSeadragon rounds the level's size up where libvips rounds down), so tilesieve decodes and re-encodes them, as it does the thumbnail.\n\n", same)
	for _, s := range r.Sessions {
		fmt.Fprintf(b, "- **%s**: %d requests, %d of them tiles (%d stored tiles); %s.\n", s.Name, s.Requests, s.Tiles, s.Stored, s.Phases)
	}
	fmt.Fprintf(b, "\n**Scenarios**: *cold* is a fresh process (tilesieve: empty tiers, the image not opened; IIPImage: fresh processes, empty tile cache, the file in the page cache), *warm* the same session again on the same process. "+
		"The client is a Go `http.Client`, a new one per run (new connections, as a browser), replaying the phases at their concurrency. %d rounds; in each, every server runs each session cold then warm, "+
		"tilesieve at %d ms beside IIPImage and the rest beside each other, each pair in the other order in odd rounds. Totals are medians over the rounds; p50 and p95 are over every request of them; "+
		"CPU is the server processes' CPU time during the cold run (`/proc/PID/task/*/schedstat`), and for tilesieve the S3 endpoint's beside it. "+
		"The machine's load average (/proc/loadavg) was %s at the section's start and %s at its end: other work shared the two cores, which the spread of the per-round ratios below shows.\n\n",
		max(1, p.Rounds), int(p.Latencies[0]/time.Millisecond), r.LoadAvg[0], r.LoadAvg[1])
}

func levelList(ls [][2]int) string {
	var s []string
	for _, l := range ls {
		s = append(s, fmt.Sprintf("%d×%d", l[0], l[1]))
	}
	return strings.Join(s, ", ")
}
