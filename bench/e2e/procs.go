package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a server process the benchmark started (and only it stops).
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	URL  string
	Log  string // its output
	done chan struct{}
}

// FreePort picks a free loopback port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartProc starts cmd (output to logDir/name.log) and waits until GET
// url+probe answers 200.
func StartProc(ctx context.Context, name string, cmd *exec.Cmd, url, probe, logDir string) (*Proc, error) {
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, URL: url, Log: logf.Name(), done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(60 * time.Second)
	c := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before it was ready; see %s", name, logf.Name())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		default:
		}
		if resp, err := c.Get(url + probe); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("%s not ready within 60s; see %s", name, logf.Name())
}

// Build is one binary a section runs: the package pkg, built in dir (the
// module it belongs to) into bin/out.
type Build struct{ Dir, Out, Pkg string }

// BuildAll builds each of builds into bin with go build.
func BuildAll(ctx context.Context, bin string, builds ...Build) error {
	for _, b := range builds {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, b.Out), b.Pkg)
		cmd.Dir = b.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", b.Pkg, err, out)
		}
	}
	return nil
}

// mkdirs creates each of dirs with its parents.
func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// buildAndServe builds the tile function, bench/cmd/s3serve and any more
// into bin, then starts s3serve over dir (with its flags), logging to logs:
// the start every section that runs the tile function as a process shares.
func buildAndServe(ctx context.Context, repoRoot, benchDir, bin, dir, logs string, flags []string, more ...Build) (*Proc, error) {
	builds := append([]Build{{repoRoot, "tiles", "./functions/tiles"}, {benchDir, "s3serve", "./cmd/s3serve"}}, more...)
	if err := BuildAll(ctx, bin, builds...); err != nil {
		return nil, err
	}
	return StartS3Serve(ctx, filepath.Join(bin, "s3serve"), dir, logs, flags...)
}

// StartS3Serve starts bench/cmd/s3serve (with any further flags) and reads
// its URL from its first line.
func StartS3Serve(ctx context.Context, bin, dir, logDir string, flags ...string) (*Proc, error) {
	cmd := exec.Command(bin, append([]string{"-dir", dir}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(logDir, "s3serve.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Name: "s3serve", Cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	select {
	case l := <-lines:
		u, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			p.Stop()
			return nil, fmt.Errorf("s3serve said %q", l)
		}
		p.URL = u
		return p, nil
	case <-p.done:
		return nil, errors.New("s3serve exited; see s3serve.log")
	case <-time.After(2 * time.Minute):
		p.Stop()
		return nil, errors.New("s3serve not ready in 2 minutes")
	}
}

// Stop sends SIGTERM to this process only, then SIGKILL after 5 s.
func (p *Proc) Stop() {
	if p == nil || p.Cmd.Process == nil {
		return
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.Cmd.Process.Kill()
		<-p.done
	}
}

// ProcMemory is what /proc/<pid>/status says about a process's memory.
type ProcMemory struct {
	VmHWM int64 `json:"vm_hwm"` // peak resident set, bytes
	VmRSS int64 `json:"vm_rss"`
}

// ReadProcMemory reads VmHWM and VmRSS of pid.
func ReadProcMemory(pid int) (ProcMemory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ProcMemory{}, err
	}
	return ParseProcStatus(string(b))
}

// ParseProcStatus reads VmHWM and VmRSS (in kB) from a /proc status file.
func ParseProcStatus(s string) (ProcMemory, error) {
	var m ProcMemory
	for line := range strings.SplitSeq(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmHWM":
			m.VmHWM = n << 10
		case "VmRSS":
			m.VmRSS = n << 10
		}
	}
	if m.VmHWM == 0 {
		return m, errors.New("e2e: no VmHWM in /proc status")
	}
	return m, nil
}
