// Package loadtool runs the outside load generators of the end-to-end
// benchmarks, ApacheBench (ab) and wrk, against loopback URLs, and parses
// what they print. Every run is bounded: ab by its request count, wrk by its
// duration, both by the caller's context.
package loadtool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// AB is what one ab run measured.
type AB struct {
	Complete    int           `json:"complete"`
	Failed      int           `json:"failed"`
	Non2xx      int           `json:"non_2xx"`
	KeepAlive   int           `json:"keep_alive"`
	RPS         float64       `json:"rps"`
	Mean        time.Duration `json:"mean"` // time per request (mean) as one client saw it
	TransferKBs float64       `json:"transfer_kb_s"`
	P50         time.Duration `json:"p50"`
	P99         time.Duration `json:"p99"` // from the -e CSV when given (0.001 ms resolution), else the 1 ms table
}

var (
	reABComplete = regexp.MustCompile(`(?m)^Complete requests:\s+(\d+)`)
	reABFailed   = regexp.MustCompile(`(?m)^Failed requests:\s+(\d+)`)
	reABNon2xx   = regexp.MustCompile(`(?m)^Non-2xx responses:\s+(\d+)`)
	reABKeep     = regexp.MustCompile(`(?m)^Keep-Alive requests:\s+(\d+)`)
	reABRPS      = regexp.MustCompile(`(?m)^Requests per second:\s+([\d.]+)`)
	reABMean     = regexp.MustCompile(`(?m)^Time per request:\s+([\d.]+) \[ms\] \(mean\)$`)
	reABTransfer = regexp.MustCompile(`(?m)^Transfer rate:\s+([\d.]+)`)
	reABPct      = regexp.MustCompile(`(?m)^\s+(\d+)%\s+(\d+)`)
)

// ParseAB reads ab's standard output. csv, when not empty, is the file ab
// wrote with -e; its percentiles are finer than the printed table's.
func ParseAB(out, csv string) (AB, error) {
	var r AB
	var err error
	if r.Complete, err = atoi(reABComplete, out, true); err != nil {
		return r, err
	}
	if r.Failed, err = atoi(reABFailed, out, true); err != nil {
		return r, err
	}
	r.Non2xx, _ = atoi(reABNon2xx, out, false)
	r.KeepAlive, _ = atoi(reABKeep, out, false)
	if r.RPS, err = atof(reABRPS, out); err != nil {
		return r, err
	}
	ms, err := atof(reABMean, out)
	if err != nil {
		return r, err
	}
	r.Mean = msDur(ms)
	r.TransferKBs, _ = atof(reABTransfer, out)
	for _, m := range reABPct.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.Atoi(m[1])
		v, _ := strconv.Atoi(m[2])
		switch p {
		case 50:
			r.P50 = time.Duration(v) * time.Millisecond
		case 99:
			r.P99 = time.Duration(v) * time.Millisecond
		}
	}
	if csv != "" {
		pct, err := ParseABCSV(csv)
		if err != nil {
			return r, err
		}
		r.P50, r.P99 = pct[50], pct[99]
	}
	return r, nil
}

// ParseABCSV reads ab's -e file: "Percentage served,Time in ms" then one
// line per percent 0..100.
func ParseABCSV(csv string) (map[int]time.Duration, error) {
	out := map[int]time.Duration{}
	sc := bufio.NewScanner(strings.NewReader(csv))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		p, v, ok := strings.Cut(line, ",")
		if !ok {
			continue
		}
		pi, err1 := strconv.Atoi(p)
		vf, err2 := strconv.ParseFloat(v, 64)
		if err1 != nil || err2 != nil {
			continue // the header
		}
		out[pi] = msDur(vf)
	}
	if len(out) < 100 {
		return nil, fmt.Errorf("loadtool: ab percentile CSV has %d rows, want 101", len(out))
	}
	return out, nil
}

// Wrk is what one wrk run measured.
type Wrk struct {
	Requests     int           `json:"requests"`
	Duration     time.Duration `json:"duration"`
	RPS          float64       `json:"rps"`
	TransferMBs  float64       `json:"transfer_mb_s"`
	Mean         time.Duration `json:"mean"`
	P50          time.Duration `json:"p50"`
	P90          time.Duration `json:"p90"`
	P99          time.Duration `json:"p99"`
	Non2xx       int           `json:"non_2xx"`
	SocketErrors string        `json:"socket_errors,omitempty"`
}

var (
	reWrkDone   = regexp.MustCompile(`(?m)^\s*(\d+) requests in ([\d.]+\w+), ([\d.]+\w+) read`)
	reWrkRPS    = regexp.MustCompile(`(?m)^Requests/sec:\s+([\d.]+)`)
	reWrkXfer   = regexp.MustCompile(`(?m)^Transfer/sec:\s+([\d.]+)(\w+)`)
	reWrkLat    = regexp.MustCompile(`(?m)^\s+Latency\s+([\d.]+\w+)`)
	reWrkPct    = regexp.MustCompile(`(?m)^\s+(50|75|90|99)%\s+([\d.]+\w+)`)
	reWrkNon2xx = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+(\d+)`)
	reWrkSocket = regexp.MustCompile(`(?m)^\s*Socket errors:\s+(.*)$`)
)

// ParseWrk reads wrk's output; it needs --latency for the percentiles.
func ParseWrk(out string) (Wrk, error) {
	var r Wrk
	m := reWrkDone.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New("loadtool: no request count in wrk output")
	}
	r.Requests, _ = strconv.Atoi(m[1])
	d, err := wrkDuration(m[2])
	if err != nil {
		return r, err
	}
	r.Duration = d
	if r.RPS, err = atof(reWrkRPS, out); err != nil {
		return r, err
	}
	if x := reWrkXfer.FindStringSubmatch(out); x != nil {
		v, _ := strconv.ParseFloat(x[1], 64)
		switch x[2] {
		case "GB":
			v *= 1024
		case "KB":
			v /= 1024
		case "B":
			v /= 1 << 20
		}
		r.TransferMBs = v
	}
	if l := reWrkLat.FindStringSubmatch(out); l != nil {
		r.Mean, _ = wrkDuration(l[1])
	}
	pct := reWrkPct.FindAllStringSubmatch(out, -1)
	if len(pct) == 0 {
		return r, errors.New("loadtool: no latency distribution in wrk output (run with --latency)")
	}
	for _, p := range pct {
		d, err := wrkDuration(p[2])
		if err != nil {
			return r, err
		}
		switch p[1] {
		case "50":
			r.P50 = d
		case "90":
			r.P90 = d
		case "99":
			r.P99 = d
		}
	}
	r.Non2xx, _ = atoi(reWrkNon2xx, out, false)
	if s := reWrkSocket.FindStringSubmatch(out); s != nil {
		r.SocketErrors = strings.TrimSpace(s[1])
	}
	return r, nil
}

// wrkDuration reads wrk's durations: 436.00us, 1.01ms, 2.10s, 1.00m.
func wrkDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}}
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				break
			}
			return time.Duration(math.Round(f * float64(u.d))), nil
		}
	}
	return 0, fmt.Errorf("loadtool: bad wrk duration %q", s)
}

func atoi(re *regexp.Regexp, s string, required bool) (int, error) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		if required {
			return 0, fmt.Errorf("loadtool: %s not found in output", re)
		}
		return 0, nil
	}
	return strconv.Atoi(m[1])
}

func atof(re *regexp.Regexp, s string) (float64, error) {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("loadtool: %s not found in output", re)
	}
	return strconv.ParseFloat(m[1], 64)
}

func msDur(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// ---- running ------------------------------------------------------------------

// CheckLoopback refuses any URL that is not on 127.0.0.1.
func CheckLoopback(url string) error {
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		return fmt.Errorf("loadtool: %q is not a loopback URL", url)
	}
	return nil
}

// RunAB runs `ab -k -n n -c c -e <tmp> url` and parses it.
func RunAB(ctx context.Context, url string, n, c int, tmpDir string) (AB, error) {
	if err := CheckLoopback(url); err != nil {
		return AB{}, err
	}
	csvPath := filepath.Join(tmpDir, fmt.Sprintf("ab-%d.csv", time.Now().UnixNano()))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ab", "-k", "-q", "-n", strconv.Itoa(n), "-c", strconv.Itoa(c), "-e", csvPath, url).CombinedOutput()
	if err != nil {
		return AB{}, fmt.Errorf("loadtool: ab: %w: %s", err, tail(out))
	}
	csv, err := os.ReadFile(csvPath)
	if err != nil {
		return AB{}, err
	}
	os.Remove(csvPath)
	return ParseAB(string(out), string(csv))
}

// WrkScript is a wrk Lua script that cycles through paths in order, each
// connection starting at a different place.
func WrkScript(paths []string) string {
	var b strings.Builder
	b.WriteString("local paths = {\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "  %q,\n", p)
	}
	b.WriteString("}\n")
	b.WriteString(`local i = 0
init = function(args)
  i = math.random(#paths)
end
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
`)
	return b.String()
}

// RunWrk runs wrk for d with c connections on t threads, cycling through
// paths (relative to base) when paths is not empty.
func RunWrk(ctx context.Context, base string, paths []string, d time.Duration, c, t int, tmpDir string) (Wrk, error) {
	if err := CheckLoopback(base); err != nil {
		return Wrk{}, err
	}
	args := []string{"-t", strconv.Itoa(t), "-c", strconv.Itoa(c), "-d", fmt.Sprintf("%ds", int(d.Seconds())), "--latency"}
	if len(paths) > 0 {
		script := filepath.Join(tmpDir, fmt.Sprintf("wrk-%d.lua", time.Now().UnixNano()))
		if err := os.WriteFile(script, []byte(WrkScript(paths)), 0o644); err != nil {
			return Wrk{}, err
		}
		defer os.Remove(script)
		args = append(args, "-s", script)
	}
	args = append(args, base)
	ctx, cancel := context.WithTimeout(ctx, d+time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "wrk", args...).CombinedOutput()
	if err != nil {
		return Wrk{}, fmt.Errorf("loadtool: wrk: %w: %s", err, tail(out))
	}
	return ParseWrk(string(out))
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	return s
}
