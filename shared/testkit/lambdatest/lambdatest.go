// Package lambdatest runs a function's real `bootstrap` under the Lambda
// Runtime Interface Emulator (aws-lambda-rie) for smoke tests: the binary is
// built the way Lambda runs it (CGO_ENABLED=0, GOOS=linux, -tags
// lambda.norpc,envcreds) and invoked through the emulator's HTTP API on 127.0.0.1.
//
// The emulator takes one invocation at a time and does not stream, so Invoke
// is sequential. Tests skip when aws-lambda-rie is not on PATH, unless
// TILESIEVE_REQUIRE_RIE=1 (set by `make test` and CI), where they fail.
package lambdatest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

// RIEBinary is the emulator's command name.
var RIEBinary = tooltest.Emulator.Name

// RequireEmulator returns the emulator's path, or ends the test first: a
// skip when aws-lambda-rie is not on PATH, a failure when
// TILESIEVE_REQUIRE_RIE=1. Tests call it before they build or start
// anything, so a machine without the emulator pays for nothing.
func RequireEmulator(t testing.TB) string {
	t.Helper()
	return tooltest.Emulator.Path(t)
}

// Build compiles pkg (an import path) into a bootstrap for this machine's
// architecture, as Lambda builds are made, and returns its path. It checks
// for the emulator first (RequireEmulator): a bootstrap is only built to
// run under it.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	RequireEmulator(t)
	out := filepath.Join(t.TempDir(), "bootstrap")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-tags", "lambda.norpc,envcreds", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	unlock := lockBuilds(t)
	b, err := cmd.CombinedOutput()
	unlock()
	if err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// lockBuilds takes a lock shared by every test binary on the machine, so
// bootstrap builds run one at a time: go test runs packages in parallel, and
// two builds of the same graph started together (the tile function's and the
// worker's share most of it) both compile it, where the second one to start
// after the first finds it in the build cache. It waits within the test's
// deadline, less time for the build (10 minutes without one): a build held
// up elsewhere fails the test with a reason instead of hanging the package
// until go test's timeout kills it unexplained.
func lockBuilds(t testing.TB) (unlock func()) {
	t.Helper()
	give := time.Now().Add(10 * time.Minute)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			give = dl.Add(-2 * time.Minute)
		}
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), "tilesieve-lambdatest-build.lock"), give, func() {
		t.Logf("lambdatest: waiting for another test process's bootstrap build")
	})
	if err != nil {
		t.Fatalf("lambdatest: build lock: %v", err)
	}
	return unlock
}

// lockFile takes an exclusive lock on the file at path (made if missing),
// calling waiting once if another holder makes it wait, and gives up with an
// error after give.
func lockFile(path string, give time.Time, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the file releases the lock
		}
		if err != syscall.EWOULDBLOCK || time.Now().After(give) {
			f.Close()
			if err == syscall.EWOULDBLOCK {
				return nil, fmt.Errorf("%s: still held by another process after %s", path, give.Format(time.TimeOnly))
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !waited {
			waiting()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Emulator is a running aws-lambda-rie with one function.
type Emulator struct {
	url    string
	mu     sync.Mutex // serialises invocations: the emulator takes one at a time
	out    *syncbuf.Buffer
	cmd    *exec.Cmd
	exited chan struct{} // closed when the emulator's process has exited
}

// Start runs bootstrap under the emulator with env added to this process's
// environment. It stops when the test ends.
func Start(t testing.TB, bootstrap string, env ...string) *Emulator {
	t.Helper()
	rie := RequireEmulator(t)
	apiAddr, runtimeAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", apiAddr,
		"--runtime-api-address", runtimeAddr,
		bootstrap)
	cmd.Env = append(os.Environ(), env...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", RIEBinary, err)
	}
	e := &Emulator{url: "http://" + apiAddr + "/2015-03-31/functions/function/invocations", out: out,
		cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(e.exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-e.exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-e.exited
		}
		if t.Failed() {
			t.Logf("emulator and function output:\n%s", e.Output())
		}
	})
	waitListening(t, apiAddr)
	return e
}

// Invoke sends one event and returns the function's response payload.
func (e *Emulator) Invoke(t testing.TB, event []byte) []byte {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(event))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, e.Output())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("invoke: read: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("invoke: emulator answered %d: %s\n%s", resp.StatusCode, b, e.Output())
	}
	return b
}

// Output is what the emulator and the function printed so far.
func (e *Emulator) Output() string {
	return e.out.String()
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("emulator not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Env formats KEY=VALUE pairs.
func Env(kv ...string) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fmt.Sprintf("%s=%s", kv[i], kv[i+1]))
	}
	return out
}

// Bootstrap is Build for a test that runs the bootstrap: skipped in -short
// mode, and, as RequireEmulator says, before anything is built on a machine
// without the emulator.
func Bootstrap(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs a binary")
	}
	return Build(t, pkg)
}

// S3Env is the environment (KEY=VALUE) under which a bootstrap speaks to the
// s3local endpoint at url, path-style, with s3local's region and
// credentials, and reads none of the machine's AWS configuration.
func S3Env(url string) []string {
	return Env(
		"AWS_ENDPOINT_URL", url, "S3_FORCE_PATH_STYLE", "true", "AWS_REGION", s3local.DefaultRegion,
		"AWS_ACCESS_KEY_ID", s3local.DefaultAccessKey, "AWS_SECRET_ACCESS_KEY", s3local.DefaultSecretKey,
		"AWS_EC2_METADATA_DISABLED", "true", "AWS_CONFIG_FILE", os.DevNull, "AWS_SHARED_CREDENTIALS_FILE", os.DevNull,
	)
}
