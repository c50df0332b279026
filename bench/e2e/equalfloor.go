package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/loadtool"
	"github.com/tilesieve/tilesieve/bench/e2e/stats"
)

// EqualParams sizes section 2's comparison with the equal-header floor: one
// tile of about Bytes, loaded with ab and wrk at each of Conns, in Rounds
// rounds.
type EqualParams struct {
	Bytes  int           // the tile nearest this size is requested
	Conns  []int         // concurrency levels (ab -c, wrk -c)
	ABN    int           // ab requests per run
	WrkDur time.Duration // wrk duration per run
	Rounds int
}

// EqualResult is the comparison of tilesieve's memory hits with the
// equal-header floor.
type EqualResult struct {
	Path   string      `json:"path"`
	Bytes  int         `json:"bytes"`
	Wire   int         `json:"wire_bytes"`   // one answer on the wire: status line, header and body
	Header int         `json:"header_bytes"` // of which the status line and header
	Params EqualParams `json:"params"`
	Cells  []EqualCell `json:"cells"`
}

// EqualCell is one server × tool × concurrency over the rounds.
type EqualCell struct {
	Server string    `json:"server"`
	Tool   string    `json:"tool"`
	Conns  int       `json:"conns"`
	RPS    []float64 `json:"rps"`              // every round's req/s, in run order
	Ratios []float64 `json:"ratios,omitempty"` // every round's req/s ÷ the floor's in the same round
	Median float64   `json:"median_rps"`
	Ratio  float64   `json:"ratio"` // median of Ratios
	// CPU is every round's CPU time of the server process per request
	// (ns), and CPURatios each one over the floor's in the same round: the
	// work each server does per answer, which a busy machine slows but
	// does not add to, unlike req/s.
	CPU       []float64 `json:"cpu_ns"`
	CPURatios []float64 `json:"cpu_ratios,omitempty"`
	CPURatio  float64   `json:"cpu_ratio"` // median of CPURatios
	Errors    int       `json:"errors"`
	Target    bool      `json:"target,omitempty"` // its ratios are held to the target
}

// equalServer is a running server of the comparison; the floor is last.
type equalServer struct {
	name   string
	url    string
	pid    int  // the server's process, whose CPU time is read
	target bool // its ratios are held to the target
}

// runEqual loads each server with ab and wrk at each concurrency, one
// (tool, concurrency) cell at a time: within a cell each server runs beside
// a run of the floor, so each round's ratio compares runs a second apart.
func runEqual(ctx context.Context, p EqualParams, path string, bytes int, servers []equalServer, tmp string) (EqualResult, error) {
	res := EqualResult{Path: path, Bytes: bytes, Params: p}
	floor := servers[len(servers)-1]
	var err error
	if res.Wire, res.Header, err = wireAnswer(floor.url + path); err != nil {
		return res, fmt.Errorf("%s: %w", floor.name, err)
	}
	for _, s := range servers[:len(servers)-1] {
		wire, _, err := wireAnswer(s.url + path)
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.name, err)
		}
		if wire != res.Wire {
			return res, fmt.Errorf("%s sends %d bytes per answer, the floor %d: the floor is not an equal-header floor", s.name, wire, res.Wire)
		}
	}
	type key struct {
		server, tool string
		conns        int
	}
	cells := map[key]*EqualCell{}
	var order []key
	cell := func(k key) *EqualCell {
		if c, ok := cells[k]; ok {
			return c
		}
		c := &EqualCell{Server: k.server, Tool: k.tool, Conns: k.conns}
		for _, s := range servers {
			c.Target = c.Target || (s.name == k.server && s.target)
		}
		cells[k] = c
		order = append(order, k)
		return c
	}
	// run is one load of s, appended to its cell: its req/s and server CPU
	// per request.
	run := func(s equalServer, tool string, conns int) (rps, cpu float64, err error) {
		before, err := ProcCPU(s.pid)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", s.name, err)
		}
		rps, n, errs, err := loadOne(ctx, p, tool, conns, s.url+path, tmp)
		if err != nil {
			return 0, 0, fmt.Errorf("%s %s -c %d: %w", s.name, tool, conns, err)
		}
		after, err := ProcCPU(s.pid)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", s.name, err)
		}
		cpu = float64((after - before).Nanoseconds()) / float64(max(n, 1))
		c := cell(key{s.name, tool, conns})
		c.RPS, c.CPU, c.Errors = append(c.RPS, rps), append(c.CPU, cpu), c.Errors+errs
		return rps, cpu, nil
	}
	for round := range max(1, p.Rounds) {
		for _, tool := range []string{"ab", "wrk"} {
			for _, conns := range p.Conns {
				// Each server is paired with a run of the floor right
				// before or after it (alternating by round), so a busy
				// patch of the machine that lasts a few seconds falls on
				// both sides of a ratio.
				for _, s := range servers[:len(servers)-1] {
					var rps, cpu, frps, fcpu float64
					var err error
					if round%2 == 0 {
						if rps, cpu, err = run(s, tool, conns); err == nil {
							frps, fcpu, err = run(floor, tool, conns)
						}
					} else if frps, fcpu, err = run(floor, tool, conns); err == nil {
						rps, cpu, err = run(s, tool, conns)
					}
					if err != nil {
						return res, err
					}
					c := cell(key{s.name, tool, conns})
					c.Ratios = append(c.Ratios, stats.Ratio(rps, frps))
					c.CPURatios = append(c.CPURatios, stats.Ratio(cpu, fcpu))
				}
			}
		}
	}
	// Rows by server, then tool, then concurrency, as the servers were given.
	slices.SortStableFunc(order, func(a, b key) int {
		ia := slices.IndexFunc(servers, func(s equalServer) bool { return s.name == a.server })
		ib := slices.IndexFunc(servers, func(s equalServer) bool { return s.name == b.server })
		return ia - ib
	})
	for _, k := range order {
		c := cells[k]
		c.Median = stats.MedianFloat(slices.Clone(c.RPS))
		if len(c.Ratios) > 0 {
			c.Ratio = stats.MedianFloat(slices.Clone(c.Ratios))
			c.CPURatio = stats.MedianFloat(slices.Clone(c.CPURatios))
		}
		res.Cells = append(res.Cells, *c)
	}
	return res, nil
}

// loadOne is one run of tool at conns against u: its req/s, requests
// answered and errors.
func loadOne(ctx context.Context, p EqualParams, tool string, conns int, u, tmp string) (rps float64, n, errs int, err error) {
	if tool == "ab" {
		r, err := loadtool.RunAB(ctx, u, p.ABN, conns, tmp)
		return r.RPS, r.Complete, r.Failed + r.Non2xx, err
	}
	r, err := loadtool.RunWrk(ctx, u, nil, p.WrkDur, conns, min(2, conns), tmp)
	if err == nil && r.SocketErrors != "" {
		err = fmt.Errorf("socket errors: %s", r.SocketErrors)
	}
	return r.RPS, r.Requests, r.Non2xx, err
}

// ProcCPU is the CPU time pid's threads have used: the sum of their
// schedstat run times (ns, unlike /proc/PID/stat's clock ticks). A thread
// that exits takes its time with it; Go servers keep theirs.
func ProcCPU(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("schedstat of %d/%s: %q", pid, t.Name(), b)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("schedstat of %d/%s: %w", pid, t.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// TreeCPU is ProcCPU of pid and of its children (nginx's workers are
// children of its master).
func TreeCPU(pid int) (time.Duration, error) {
	sum, err := ProcCPU(pid)
	if err != nil {
		return 0, err
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return sum, nil
	}
	for _, d := range procs {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command (in parentheses, which may hold
		// spaces): state, then the parent's pid.
		_, rest, ok := strings.Cut(string(b), ") ")
		if f := strings.Fields(rest); !ok || len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if c, err := ProcCPU(child); err == nil {
			sum += c
		}
	}
	return sum, nil
}

// wireAnswer reads one answer to a GET of u over a new connection, as the
// bytes the server sent: their count and that of the status line and header.
func wireAnswer(u string) (wire, header int, err error) {
	pu, err := url.Parse(u)
	if err != nil {
		return 0, 0, err
	}
	conn, err := net.DialTimeout("tcp", pu.Host, 5*time.Second)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", pu.RequestURI(), pu.Host)
	raw, err := io.ReadAll(conn)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(raw))), nil)
	if err != nil {
		return 0, 0, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	// Connection: close is the answer's only field the request chose; the
	// loads keep connections alive, so it is not counted.
	i := strings.Index(string(raw), "\r\n\r\n")
	hdr := string(raw[:i+4])
	hdr = strings.Replace(hdr, "Connection: close\r\n", "", 1)
	n, _ := strconv.Atoi(resp.Header.Get("Content-Length"))
	return len(hdr) + n, len(hdr), nil
}

// targets holds every targeted server's median ratio at each tool and
// concurrency to the floor. Its note adds the server against the floor
// with the local server's timeouts, where that floor ran: what is left
// once net/http's per-request deadlines are on both sides.
func (r EqualResult) targets() []Target {
	var ts []Target
	for _, c := range r.Cells {
		if !c.Target || len(c.Ratios) == 0 {
			continue
		}
		reason := fmt.Sprintf("same-round ratios %s; server CPU per request %.2fx the floor's", ratioList(c.Ratios), c.CPURatio)
		if rps, cpu, ok := r.overTimeouts(c); ok {
			reason += fmt.Sprintf("; against the floor with the local server's timeouts, %.2fx req/s and %.2fx CPU per request (medians of the same rounds' ratios)", rps, cpu)
		}
		ts = append(ts, Target{
			What: fmt.Sprintf("memory hits of a %s tile ≥ 0.95x the equal-header floor (req/s, %s -c %d)", kb(r.Bytes), c.Tool, c.Conns),
			Want: 0.95, Got: c.Ratio, Unit: "x", Higher: true,
			Reason: reason,
		}.Check())
	}
	return ts
}

// overTimeouts compares c with the cell of the floor with the local
// server's timeouts at the same tool and concurrency: the median over the
// rounds of c's ratio to the plain floor over that floor's ratio to it (both
// ratios of one round, each to its own paired run of the plain floor), for
// req/s and for CPU per request. ok is false where that floor did not run.
func (r EqualResult) overTimeouts(c EqualCell) (rps, cpu float64, ok bool) {
	i := slices.IndexFunc(r.Cells, func(o EqualCell) bool {
		return o.Server == equalTimeouts && o.Tool == c.Tool && o.Conns == c.Conns
	})
	if i < 0 {
		return 0, 0, false
	}
	to := r.Cells[i]
	n := min(len(c.Ratios), len(to.Ratios), len(c.CPURatios), len(to.CPURatios))
	if n == 0 {
		return 0, 0, false
	}
	rr, cr := make([]float64, n), make([]float64, n)
	for k := range n {
		rr[k] = stats.Ratio(c.Ratios[k], to.Ratios[k])
		cr[k] = stats.Ratio(c.CPURatios[k], to.CPURatios[k])
	}
	return stats.MedianFloat(rr), stats.MedianFloat(cr), true
}

func ratioList(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = strconv.FormatFloat(r, 'f', 2, 64)
	}
	return strings.Join(s, ", ")
}

func kb(n int) string { return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + " KB" }
