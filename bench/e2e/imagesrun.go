package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/viewer"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

// startTiles starts a fresh tile function process (empty memory tier, an
// empty 1 GiB disk tier, no image opened) over the S3 endpoint of latency
// lat. SYNC_INTERVAL is an hour: the journal check is section 5's cost.
func (e *imagesEnv) startTiles(ctx context.Context, lat time.Duration) (*Proc, string, error) {
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	e.started++
	n := strconv.Itoa(e.started)
	c := exec.Command(filepath.Join(e.bin, "tiles"))
	c.Env = tilesEnv(e.tmp, e.s3[lat].URL, port, "DISK_CACHE_DIR="+filepath.Join(e.tmp, "disk-"+n), "DISK_CACHE_BYTES=1GiB", "SYNC_INTERVAL=1h")
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := StartProc(ctx, "tiles-"+n, c, url, "/_tilesieve/health", e.logs)
	return p, url, err
}

// sessions reads each server's info.json, builds the viewer sessions from
// it, counts the S3 requests of opening the image, and writes tilesieve's
// answers to every request of the sessions as the static server's files.
func (e *imagesEnv) sessions(ctx context.Context, res *ImagesResult) error {
	proc, url, err := e.startTiles(ctx, 0)
	if err != nil {
		return err
	}
	defer proc.Stop()
	s3 := e.s3[0].URL
	c := HTTPClient()
	defer c.CloseIdleConnections()
	if err := s3serveControl(s3, "reset"); err != nil {
		return err
	}
	info, err := getBody(c, url+"/"+e.tsPrefix+viewer.InfoPath)
	if err != nil {
		return err
	}
	if res.OpenRequests, err = s3Requests(s3); err != nil {
		return err
	}
	if e.ts, err = buildSessions(info, false); err != nil {
		return fmt.Errorf("tilesieve's info.json: %w", err)
	}
	if err := e.iip.start(ctx, "info"); err != nil {
		return err
	}
	iipInfo, err := getBody(c, e.fcgiURL+"/"+e.iipPrefix+viewer.InfoPath)
	if err != nil {
		return err
	}
	if e.iipSess, err = buildSessions(iipInfo, false); err != nil {
		return fmt.Errorf("IIPImage's info.json: %w", err)
	}
	if e.iipLegacy, err = buildSessions(iipInfo, true); err != nil {
		return fmt.Errorf("IIPImage's info.json: %w", err)
	}
	res.SameURLs = true
	for i, s := range e.ts {
		res.SameURLs = res.SameURLs && slices.Equal(s.Paths(), e.iipSess[i].Paths())
		si := SessionInfo{Name: s.Name, Requests: len(s.Paths()), Tiles: len(s.Tiles)}
		var phases []string
		for _, ph := range s.Phases {
			phases = append(phases, fmt.Sprintf("%s: %d at %d", ph.Name, len(ph.Paths), ph.Concurrency))
		}
		si.Phases = strings.Join(phases, "; ")
		for _, t := range s.Tiles {
			if storedAsIs(e.levels, t) {
				si.Stored++
			}
		}
		res.Sessions = append(res.Sessions, si)
		for _, p := range s.Paths() {
			b, err := getBody(c, url+"/"+e.tsPrefix+p)
			if err != nil {
				return err
			}
			if err := writeFile(filepath.Join(e.www, filepath.FromSlash(e.staticPrefix+p)), b); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildSessions is the Cantaloupe and Mirador sessions of an info.json,
// with 2.x sizes as "w," when legacy.
func buildSessions(info []byte, legacy bool) ([]viewer.Session, error) {
	in, err := viewer.ParseInfo(info)
	if err != nil {
		return nil, err
	}
	in.Legacy = legacy
	c, err := viewer.Cantaloupe(in)
	if err != nil {
		return nil, err
	}
	m, err := viewer.Mirador(in)
	if err != nil {
		return nil, err
	}
	return []viewer.Session{c, m}, nil
}

// pass is one cold run and one warm run of a session on one server.
type pass struct {
	cold, warm workload.Result
	cpu, s3CPU time.Duration
	s3         int
}

// runSession runs w against base with a new client (new connections, as a
// browser opening the page) and wants every answer a 200.
func runSession(ctx context.Context, base string, w workload.Workload) (workload.Result, error) {
	c := HTTPClient()
	defer c.CloseIdleConnections()
	r := workload.Run(ctx, w, workload.HTTPFetcher(c, base))
	if r.Errors > 0 {
		return r, fmt.Errorf("%s: %d errors, first: %s", w.Name, r.Errors, r.FirstErr)
	}
	return r, nil
}

// cpuOf is the CPU time of the processes so far.
func cpuOf(pids ...int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if d, err := ProcCPU(pid); err == nil {
			sum += d
		}
	}
	return sum
}

// runTiles runs s on a fresh tile function process over S3 at latency
// lat: cold, counting S3 requests and CPU, then warm on the same process.
func (e *imagesEnv) runTiles(ctx context.Context, lat time.Duration, s viewer.Session) (pass, error) {
	var ps pass
	proc, url, err := e.startTiles(ctx, lat)
	if err != nil {
		return ps, err
	}
	defer proc.Stop()
	s3 := e.s3[lat]
	if err := s3serveControl(s3.URL, "reset"); err != nil {
		return ps, err
	}
	pid, s3pid := proc.Cmd.Process.Pid, s3.Cmd.Process.Pid
	cpu, s3cpu := cpuOf(pid), cpuOf(s3pid)
	w := asWorkload(s, e.tsPrefix)
	if ps.cold, err = runSession(ctx, url, w); err != nil {
		return ps, fmt.Errorf("cold: %w", err)
	}
	ps.cpu, ps.s3CPU = cpuOf(pid)-cpu, cpuOf(s3pid)-s3cpu
	if ps.s3, err = s3Requests(s3.URL); err != nil {
		return ps, err
	}
	if ps.warm, err = runSession(ctx, url, w); err != nil {
		return ps, fmt.Errorf("warm: %w", err)
	}
	return ps, nil
}

// runIIP runs s on fresh iipsrv processes: cold (no image opened, an empty
// tile cache; the file is in the page cache after the first round), then
// warm.
func (e *imagesEnv) runIIP(ctx context.Context, s viewer.Session, round int) (pass, error) {
	var ps pass
	if err := e.iip.start(ctx, strconv.Itoa(round)); err != nil {
		return ps, err
	}
	pids := e.iip.pids()
	cpu := cpuOf(pids...)
	w := asWorkload(s, e.iipPrefix)
	var err error
	if ps.cold, err = runSession(ctx, e.fcgiURL, w); err != nil {
		return ps, fmt.Errorf("cold: %w", err)
	}
	ps.cpu = cpuOf(pids...) - cpu
	if ps.warm, err = runSession(ctx, e.fcgiURL, w); err != nil {
		return ps, fmt.Errorf("warm: %w", err)
	}
	return ps, nil
}

// runStatic runs s against nginx serving tilesieve's answers as files; it
// has no cold state of its own, so the run counts as warm.
func (e *imagesEnv) runStatic(ctx context.Context, s viewer.Session) (pass, error) {
	var ps pass
	var err error
	ps.warm, err = runSession(ctx, e.staticURL, asWorkload(s, e.staticPrefix))
	return ps, err
}

// imgConfig is one server (and, for tilesieve, an S3 latency).
type imgConfig struct {
	server string
	lat    time.Duration
}

// roundOrder is the order of the servers in round r: tilesieve at the first
// latency beside IIPImage, the others beside each other, each pair swapped
// in odd rounds, so that the ratios the targets take compare runs seconds
// apart and neither side always goes first.
func (e *imagesEnv) roundOrder(r int) []imgConfig {
	a := []imgConfig{{imgTS, e.p.Latencies[0]}, {imgIIP, 0}}
	var b []imgConfig
	for _, lat := range e.p.Latencies[1:] {
		b = append(b, imgConfig{imgTS, lat})
	}
	b = append(b, imgConfig{imgStatic, 0})
	if r%2 == 1 {
		slices.Reverse(a)
		slices.Reverse(b)
	}
	return append(a, b...)
}

// rounds runs every session on every server, cold then warm, Rounds times.
func (e *imagesEnv) rounds(ctx context.Context, res *ImagesResult) error {
	runs := map[[3]string]*ImageRun{}
	var order [][3]string
	for r := range max(1, e.p.Rounds) {
		for si := range e.ts {
			for _, cfg := range e.roundOrder(r) {
				var ps pass
				var err error
				switch cfg.server {
				case imgTS:
					ps, err = e.runTiles(ctx, cfg.lat, e.ts[si])
				case imgIIP:
					ps, err = e.runIIP(ctx, e.iipSess[si], r)
				default:
					ps, err = e.runStatic(ctx, e.ts[si])
				}
				if err != nil {
					return fmt.Errorf("%s %s: %w", cfg.server, e.ts[si].Name, err)
				}
				k := [3]string{cfg.server, e.ts[si].Name, cfg.lat.String()}
				run := runs[k]
				if run == nil {
					run = &ImageRun{Server: cfg.server, Session: e.ts[si].Name, LatencyMs: int(cfg.lat / time.Millisecond), Requests: len(e.ts[si].Paths())}
					runs[k] = run
					order = append(order, k)
				}
				run.add(cfg.server, ps)
			}
		}
		e.iip.stop()
	}
	slices.SortStableFunc(order, func(a, b [3]string) int { return strings.Compare(a[1], b[1]) })
	for _, k := range order {
		r := runs[k]
		r.ColdLat, r.WarmLat = stats.Summarize(r.coldAll), stats.Summarize(r.warmAll)
		res.Runs = append(res.Runs, *r)
	}
	return nil
}

// add records one pass.
func (r *ImageRun) add(server string, ps pass) {
	if server != imgStatic {
		r.Cold = append(r.Cold, ps.cold.Total)
		r.coldAll = append(r.coldAll, ps.cold.Latencies...)
		r.ColdCPU = append(r.ColdCPU, ps.cpu)
	}
	if server == imgTS {
		r.S3 = append(r.S3, ps.s3)
		r.S3CPU = append(r.S3CPU, ps.s3CPU)
	}
	r.Warm = append(r.Warm, ps.warm.Total)
	r.warmAll = append(r.warmAll, ps.warm.Latencies...)
}

// storedProbes asks, on a fresh process over S3 at the first latency, for
// info.json (which opens the image), then for only the stored tiles of each
// session, counting S3 requests for those alone.
func (e *imagesEnv) storedProbes(ctx context.Context, res *ImagesResult) error {
	for _, s := range e.ts {
		var keys []string
		for _, t := range s.Tiles {
			if storedAsIs(e.levels, t) {
				keys = append(keys, e.tsPrefix+t.Path())
			}
		}
		n, err := e.probe(ctx, keys)
		if err != nil {
			return fmt.Errorf("stored tiles of %s: %w", s.Name, err)
		}
		res.Stored = append(res.Stored, StoredProbe{Session: s.Name, Tiles: len(keys), S3Requests: n})
	}
	return nil
}

func (e *imagesEnv) probe(ctx context.Context, keys []string) (int, error) {
	lat := e.p.Latencies[0]
	proc, url, err := e.startTiles(ctx, lat)
	if err != nil {
		return 0, err
	}
	defer proc.Stop()
	open := workload.Workload{Name: "open", Phases: []workload.Phase{{Keys: []string{e.tsPrefix + viewer.InfoPath}, Concurrency: 1}}}
	if _, err := runSession(ctx, url, open); err != nil {
		return 0, err
	}
	if err := s3serveControl(e.s3[lat].URL, "reset"); err != nil {
		return 0, err
	}
	w := workload.Workload{Name: "stored tiles", Phases: []workload.Phase{{Keys: keys, Concurrency: 6}}}
	if _, err := runSession(ctx, url, w); err != nil {
		return 0, err
	}
	return s3Requests(e.s3[lat].URL)
}

// profile records, with perf, where the CPU of one more cold Mirador run
// at the first latency goes, in the tile function and in the S3 endpoint.
func (e *imagesEnv) profile(ctx context.Context, res *ImagesResult) {
	lat := e.p.Latencies[0]
	proc, url, err := e.startTiles(ctx, lat)
	if err != nil {
		res.ProfileNote = "profile: " + err.Error()
		return
	}
	defer proc.Stop()
	res.Profile, err = perfProfile(ctx, filepath.Join(e.tmp, "perf-cold.data"), []int{proc.Cmd.Process.Pid, e.s3[lat].Cmd.Process.Pid}, func() error {
		_, err := runSession(ctx, url, asWorkload(e.ts[1], e.tsPrefix))
		return err
	})
	if err != nil {
		res.ProfileNote = "profile: " + err.Error()
	}
}

// perfProfile records the processes pids with perf while run runs and
// returns the share of each binary (the kernel's included), then the
// hottest symbols (perfTop of `perf report --sort dso` and `dso,symbol`).
func perfProfile(ctx context.Context, data string, pids []int, run func() error) ([]string, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, errors.New("perf not installed")
	}
	ps := make([]string, len(pids))
	for i, p := range pids {
		ps[i] = strconv.Itoa(p)
	}
	rec := exec.CommandContext(ctx, "perf", "record", "-F", "999", "-p", strings.Join(ps, ","), "-o", data)
	if err := rec.Start(); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	time.Sleep(300 * time.Millisecond) // perf attaches
	rerr := run()
	rec.Process.Signal(os.Interrupt)
	rec.Wait()
	if rerr != nil {
		return nil, fmt.Errorf("profiled run: %w", rerr)
	}
	var top []string
	for _, sort := range []string{"dso", "dso,symbol"} {
		out, err := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--sort", sort, "--percent-limit", "1.5").Output()
		if err != nil {
			return nil, fmt.Errorf("perf report: %w", err)
		}
		top = append(top, perfTop(string(out), 12)...)
	}
	return top, nil
}

// perfTop is the first n sample lines of `perf report --stdio`: "12.34%
// binary symbol", or "12.34% binary" when sorted by binary alone.
func perfTop(out string, n int) []string {
	var top []string
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || !strings.HasSuffix(f[0], "%") {
			continue
		}
		// "12.34%  tiles  [.] image/jpeg.(*decoder).decodeHuffman  -  -"
		var sym []string
		if len(f) > 3 {
			sym = f[3:]
		}
		for len(sym) > 1 && sym[len(sym)-1] == "-" {
			sym = sym[:len(sym)-1]
		}
		top = append(top, strings.TrimSpace(f[0]+" "+f[1]+" "+strings.Join(sym, " ")))
		if len(top) == n {
			break
		}
	}
	return top
}
