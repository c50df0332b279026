// Package lambdarie builds a Lambda bootstrap as Lambda builds it and runs
// it under the Lambda Runtime Interface Emulator (aws-lambda-rie) on
// loopback, invoking it one invocation at a time over one kept-alive
// connection: how the benchmarks drive a real bootstrap. Everything it
// starts listens on 127.0.0.1 and is stopped by Stop.
package lambdarie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BuildCommand is how Build builds a bootstrap, as a section names it.
func BuildCommand() string {
	return "CGO_ENABLED=0 GOOS=linux GOARCH=" + runtime.GOARCH + " go build -trimpath -tags lambda.norpc,envcreds -ldflags='-s -w'"
}

// Build builds package pkg of the module in dir into out as Lambda builds a
// bootstrap, for this machine's architecture.
func Build(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "lambda.norpc,envcreds", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lambdarie: build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// Emulator is one aws-lambda-rie process over a bootstrap, answering.
type Emulator struct {
	url     string
	hc      *http.Client
	logPath string
	stop    func()
}

// Start starts the emulator rie over bootstrap (with env added to this
// process's environment, output to logPath) and invokes first until it
// answers; coldStart is the time from the process's start to that answer.
// The caller calls Stop.
func Start(ctx context.Context, rie, bootstrap string, env []string, logPath string, first []byte) (e *Emulator, coldStart time.Duration, err error) {
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, 0, err
	}
	rtAddr, err := freeAddr()
	if err != nil {
		return nil, 0, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", apiAddr, "--runtime-api-address", rtAddr, bootstrap)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the bootstrap is its child: stop both
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, 0, fmt.Errorf("lambdarie: start %s: %w", rie, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	e = &Emulator{logPath: logPath, stop: func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logFile.Close()
	}}
	e.url = "http://" + apiAddr + "/2015-03-31/functions/function/invocations"
	e.hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	fail := func(err error) (*Emulator, time.Duration, error) {
		e.Stop()
		return nil, 0, e.WithLog(err)
	}
	for {
		if _, err := e.Invoke(ctx, first); err == nil {
			break
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			return fail(err)
		}
		if time.Since(start) > 30*time.Second {
			return fail(errors.New("lambdarie: emulator not answering after 30s"))
		}
		select {
		case <-done:
			return fail(errors.New("lambdarie: emulator exited"))
		case <-ctx.Done():
			e.Stop()
			return nil, 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return e, time.Since(start), nil
}

// Stop stops the emulator and the bootstrap it runs.
func (e *Emulator) Stop() { e.stop() }

// WithLog is err with the tail of the emulator's log.
func (e *Emulator) WithLog(err error) error {
	b, _ := os.ReadFile(e.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return fmt.Errorf("%w\n%s", err, b)
}

// Invoke posts event to the emulator's invoke endpoint and returns the
// function's payload.
func (e *Emulator) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lambdarie: emulator answered %d: %.300s", resp.StatusCode, b)
	}
	return b, nil
}

// Hits is a run of sequential memory hits of one tile.
type Hits struct {
	Invokes      int
	Elapsed      time.Duration
	PerSec       float64
	PayloadBytes int // of the first hit
}

// TimeHits invokes event once (a miss fills the memory tier), checks that
// the next answer is a memory hit of the n-byte tile, then times
// sequential invocations of it: at most maxInvokes of them, for at most d.
// Errors carry the tail of the emulator's log.
func (e *Emulator) TimeHits(ctx context.Context, event []byte, n, maxInvokes int, d time.Duration) (Hits, error) {
	if _, err := e.Invoke(ctx, event); err != nil {
		return Hits{}, e.WithLog(err)
	}
	p, err := e.Invoke(ctx, event)
	if err != nil {
		return Hits{}, e.WithLog(err)
	}
	if err := CheckMemoryHit(p, n); err != nil {
		return Hits{}, e.WithLog(err)
	}
	h := Hits{PayloadBytes: len(p)}
	t0 := time.Now()
	for h.Invokes < maxInvokes && time.Since(t0) < d {
		q, err := e.Invoke(ctx, event)
		if err != nil {
			return h, e.WithLog(err)
		}
		// A payload of another length is checked whole: the Server-Timing
		// durations can change width from hit to hit.
		if len(q) != len(p) {
			if err := CheckMemoryHit(q, n); err != nil {
				return h, e.WithLog(fmt.Errorf("payload of %d bytes, first hit had %d: %w", len(q), len(p), err))
			}
		}
		h.Invokes++
	}
	h.Elapsed = time.Since(t0)
	h.PerSec = float64(h.Invokes) / h.Elapsed.Seconds()
	return h, nil
}

// WithPath is a function-URL event template with its rawPath set to path.
func WithPath(template []byte, path string) ([]byte, error) {
	var ev map[string]any
	if err := json.Unmarshal(template, &ev); err != nil {
		return nil, fmt.Errorf("lambdarie: event template: %w", err)
	}
	ev["rawPath"] = path
	return json.Marshal(ev)
}

// CheckMemoryHit checks that payload is the tile function's buffered answer
// to a memory hit of an n-byte tile: 200, X-Cache HIT-MEMORY, n bytes.
func CheckMemoryHit(payload []byte, n int) error {
	var r struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Body       string            `json:"body"`
	}
	if err := json.Unmarshal(payload, &r); err != nil {
		return fmt.Errorf("lambdarie: payload %.200q: %w", payload, err)
	}
	if r.StatusCode != 200 || r.Headers["X-Cache"] != "HIT-MEMORY" || r.Headers["Content-Length"] != strconv.Itoa(n) {
		return fmt.Errorf("lambdarie: not a memory hit of %d bytes: %d %v", n, r.StatusCode, r.Headers)
	}
	return nil
}

// Version names the emulator build on PATH.
func Version() string {
	p, err := exec.LookPath("aws-lambda-rie")
	if err != nil {
		return "aws-lambda-rie: not installed"
	}
	out, _ := exec.Command("go", "version", "-m", p).Output()
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "mod" {
			return "aws-lambda-rie " + f[2]
		}
	}
	return "aws-lambda-rie"
}

// freeAddr is a free loopback address.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
