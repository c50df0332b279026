package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/loadtool"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
	"github.com/tilesieve/tilesieve/bench/e2e/viewer"
	"github.com/tilesieve/tilesieve/bench/e2e/workload"
)

// The servers of the wrk runs.
const (
	wrkTS        = "tilesieve warm (memory hits)"
	wrkIIP       = "IIPImage warm"
	wrkIIPLegacy = "IIPImage warm, sizes as `w,` (OpenSeadragon 2)"
	wrkStatic    = "nginx static"
)

// throughputServer is one server of the wrk runs.
type throughputServer struct {
	name, url string
	paths     []string
	tilesieve bool
	pids      func() []int // its processes, whose CPU time is counted
}

// throughput loads warm servers with wrk, cycling through the Mirador
// session's requests, in rounds whose order rotates, and counts each
// server's CPU time per answer; then profiles tilesieve under one more run.
func (e *imagesEnv) throughput(ctx context.Context, res *ImagesResult) error {
	proc, url, err := e.startTiles(ctx, e.p.Latencies[0])
	if err != nil {
		return err
	}
	defer proc.Stop()
	if err := e.iip.start(ctx, "wrk"); err != nil {
		return err
	}
	defer e.iip.stop()
	nginx := func() []int { return processTree(e.nginx.Cmd.Process.Pid) }
	iip := func() []int { return append(e.iip.pids(), nginx()...) } // the FastCGI front is part of it
	servers := []throughputServer{
		{name: wrkTS, url: url, paths: wrkPaths(e.ts[1], e.tsPrefix), tilesieve: true, pids: func() []int { return []int{proc.Cmd.Process.Pid} }},
		{name: wrkIIP, url: e.fcgiURL, paths: wrkPaths(e.iipSess[1], e.iipPrefix), pids: iip},
		{name: wrkIIPLegacy, url: e.fcgiURL, paths: wrkPaths(e.iipLegacy[1], e.iipPrefix), pids: iip},
		{name: wrkStatic, url: e.staticURL, paths: wrkPaths(e.ts[1], e.staticPrefix), pids: nginx},
	}
	for _, s := range servers { // warm: one pass of the session
		w := workload.Workload{Name: "warm-up", Phases: []workload.Phase{{Keys: trimSlash(s.paths), Concurrency: 6}}}
		if _, err := runSession(ctx, s.url, w); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	res.WrkCommand = fmt.Sprintf("wrk -t %d -c %d -d %ds --latency -s <cycle the %d requests>.lua", e.p.WrkThreads, e.p.WrkConns, int(e.p.WrkDur.Seconds()), len(servers[0].paths))
	samples, cpu := map[string][]ServerRow{}, map[string][]float64{}
	var hits, reqs int64
	for r := range max(1, e.p.WrkRounds) {
		for i := range servers {
			s := servers[(i+r)%len(servers)]
			before, _ := handlerCounts(url)
			cpu0 := cpuOf(s.pids()...)
			w, err := loadtool.RunWrk(ctx, s.url, s.paths, e.p.WrkDur, e.p.WrkConns, e.p.WrkThreads, e.tmp)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			if w.Requests > 0 {
				cpu[s.name] = append(cpu[s.name], float64(cpuOf(s.pids()...)-cpu0)/float64(w.Requests))
			}
			if s.tilesieve {
				after, _ := handlerCounts(url)
				hits, reqs = hits+after.MemoryHits-before.MemoryHits, reqs+after.Requests-before.Requests
			}
			row := ServerRow{Server: s.name, Tool: "wrk", RPS: w.RPS, Mean: w.Mean, P50: w.P50, P99: w.P99, Errors: w.Non2xx}
			if w.SocketErrors != "" {
				row.Note = "socket errors: " + w.SocketErrors
			}
			samples[s.name] = append(samples[s.name], row)
		}
	}
	res.WrkCPU = map[string]time.Duration{}
	for _, s := range servers {
		row := medianRow(samples[s.name])
		if s.tilesieve && reqs > 0 {
			row.Note = joinNote(row.Note, fmt.Sprintf("%.1f%% memory hits during wrk (admin stats)", pct(hits, reqs)))
		}
		res.Throughput = append(res.Throughput, row)
		res.WrkCPU[s.name] = time.Duration(stats.MedianFloat(cpu[s.name]))
	}
	ts := servers[0]
	res.WrkProfile, err = perfProfile(ctx, filepath.Join(e.tmp, "perf-wrk.data"), ts.pids(), func() error {
		_, err := loadtool.RunWrk(ctx, ts.url, ts.paths, e.p.WrkDur, e.p.WrkConns, e.p.WrkThreads, e.tmp)
		return err
	})
	if err != nil {
		res.ProfileNote = joinNote(res.ProfileNote, "profile under wrk: "+err.Error())
	}
	return nil
}

// processTree is pid and its children (nginx's master and its workers).
func processTree(pid int) []int {
	out := []int{pid}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …": comm may hold spaces, so read after ")".
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(pid) {
				out = append(out, child)
			}
		}
	}
	return out
}

// HandlerCounts is the part of the admin stats the section reads.
type HandlerCounts struct{ Requests, MemoryHits int64 }

func handlerCounts(url string) (HandlerCounts, error) {
	st, err := tilesStats(url)
	return HandlerCounts{Requests: st.Handler.Requests, MemoryHits: st.Handler.MemoryHits}, err
}

func wrkPaths(s viewer.Session, prefix string) []string {
	var out []string
	for _, p := range s.Paths() {
		out = append(out, "/"+prefix+p)
	}
	return out
}

func trimSlash(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(p, "/")
	}
	return out
}
