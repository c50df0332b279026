package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/testkit/cmdtest"
	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

// runAsDevstack makes this test binary the devstack command in a
// subprocess, so the tests below drive the real main: its flags, its
// signals and its exit status.
const runAsDevstack = "TILESIEVE_TEST_RUN_DEVSTACK"

func TestMain(m *testing.M) { cmdtest.Main(m, runAsDevstack, main) }

// cleanEnv is an environment with nothing of AWS or tilesieve in it but
// what a test adds, and with every credential source that could leave this
// machine (instance metadata, profiles) shut.
func cleanEnv(extra ...string) []string {
	env := []string{
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "TILES_") || k == "PORT" || k == "S3_LOCAL_PORT" || k == "ADMIN_TOKEN" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// devstack is a devstack process a test started.
type devstack struct {
	cmd    *exec.Cmd
	banner string
	stderr *syncBuffer
	done   chan error
}

// freePorts keeps the stack off the ports a developer's `make run` uses.
var freePorts = []string{"-port", "0", "-s3-port", "0", "-seed-zoom", "1"}

// syncBuffer collects a process's output; banner receives everything up to
// the banner's last line once it has been written.
type syncBuffer struct {
	mu     sync.Mutex // guards b and sent
	b      bytes.Buffer
	sent   bool
	banner chan string
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.banner != nil && !w.sent && strings.Contains(w.b.String(), "\nCtrl-C stops it") {
		w.sent = true
		w.banner <- w.b.String()
	}
	return len(p), nil
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// start runs cmd and waits for its banner; it fails the test if the
// process exits first. The process is killed at the end of the test if it
// still runs (with its process group when it has one).
func start(t *testing.T, cmd *exec.Cmd) *devstack {
	t.Helper()
	out := &syncBuffer{banner: make(chan string, 1)}
	d := &devstack{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = out, d.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		d.done <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			} else {
				cmd.Process.Kill()
			}
			<-exited
		}
	})
	select {
	case d.banner = <-out.banner:
	case err := <-d.done:
		t.Fatalf("exited before its banner: %v; stdout:\n%s\nstderr:\n%s", err, out, d.stderr)
	case <-time.After(90 * time.Second):
		t.Fatalf("no banner within 90s; stderr:\n%s", d.stderr)
	}
	return d
}

func devstackCmd(t *testing.T, timeout time.Duration, env []string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return cmdtest.SelfContext(ctx, runAsDevstack, env, args...)
}

var viewerLine = regexp.MustCompile(`(?m)^\s+viewer\s+(http://127\.0\.0\.1:\d+)/$`)

// url is the address of the tile function the banner names.
func (d *devstack) url(t *testing.T) string {
	t.Helper()
	m := viewerLine.FindStringSubmatch(d.banner)
	if m == nil {
		t.Fatalf("no viewer URL on 127.0.0.1 in the banner:\n%s", d.banner)
	}
	return m[1]
}

// interrupt sends SIGINT, as Ctrl-C does, and returns the exit error.
func (d *devstack) interrupt(t *testing.T) error {
	t.Helper()
	if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGINT; stderr:\n%s", d.stderr)
		return nil
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestInterruptExitsZero: Ctrl-C is how the stack is meant to stop, so it
// is a success, and make prints no error after it.
func TestInterruptExitsZero(t *testing.T) {
	t.Parallel()
	d := start(t, devstackCmd(t, 2*time.Minute, cleanEnv(), freePorts...))
	if code := getStatus(t, d.url(t)+"/demo/0/0/0.png"); code != http.StatusOK {
		t.Fatalf("demo tile: %d", code)
	}
	if err := d.interrupt(t); err != nil {
		t.Fatalf("after SIGINT: %v, want exit status 0; stderr:\n%s", err, d.stderr)
	}
	if s := d.stderr.String(); strings.Contains(s, "level=ERROR") || strings.Contains(s, "devstack: devstack:") {
		t.Errorf("stderr after a clean stop:\n%s", s)
	}
}

// TestExportedS3VariablesKeepTheEmbeddedS3: variables exported for another
// project (or a LocalStack session) must not switch the embedded S3 off
// behind the user's back; only -embedded=false does.
func TestExportedS3VariablesKeepTheEmbeddedS3(t *testing.T) {
	t.Parallel()
	env := cleanEnv("TILES_BUCKET=someone-elses-bucket", "AWS_ENDPOINT_URL=http://127.0.0.1:9")
	d := start(t, devstackCmd(t, 2*time.Minute, env, freePorts...))
	if !strings.Contains(d.banner, "embedded S3") {
		t.Errorf("the banner does not say the embedded S3 is in use:\n%s", d.banner)
	}
	for _, v := range []string{"TILES_BUCKET", "AWS_ENDPOINT_URL"} {
		if !strings.Contains(d.banner, v) {
			t.Errorf("the banner does not say %s from the environment is not used:\n%s", v, d.banner)
		}
	}
	if code := getStatus(t, d.url(t)+"/demo/0/0/0.png"); code != http.StatusOK {
		t.Errorf("demo tile: %d, want 200 from the embedded S3", code)
	}
	if err := d.interrupt(t); err != nil {
		t.Fatalf("after SIGINT: %v; stderr:\n%s", err, d.stderr)
	}
}

// TestExternalS3WithoutRegionOrCredentials: with -embedded=false and no
// region or credentials the command refuses to start, on one line that says
// what is missing, and prints no banner.
func TestExternalS3WithoutRegionOrCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     []string
		missing []string
	}{
		{"neither", nil, []string{"region", "credentials"}},
		{"no region", []string{"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret"}, []string{"region"}},
		{"no credentials", []string{"AWS_REGION=eu-west-1"}, []string{"credentials"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := cleanEnv(append([]string{"TILES_BUCKET=tiles"}, tc.env...)...)
			// Bounded: a stack that starts anyway runs until it is stopped.
			r := cmdtest.Run(t, devstackCmd(t, 30*time.Second, env, append([]string{"-embedded=false"}, freePorts...)...))
			if r.Code != 1 {
				t.Fatalf("got exit %d, want 1; stderr:\n%s", r.Code, r.Stderr)
			}
			if r.Stdout != "" {
				t.Errorf("printed a banner although it did not start:\n%s", r.Stdout)
			}
			msg := strings.TrimSuffix(r.Stderr, "\n")
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "devstack: ") || strings.Contains(msg, "devstack: devstack:") {
				t.Errorf("want one line starting with one \"devstack: \", got:\n%s", msg)
			}
			for _, m := range tc.missing {
				if !strings.Contains(msg, "no "+m) {
					t.Errorf("the error does not say there is no %s: %s", m, msg)
				}
			}
			if strings.Contains(msg, "DNS") || (len(tc.missing) == 1 && strings.Contains(msg, "no region") != (tc.missing[0] == "region")) {
				t.Errorf("the error names the wrong cause: %s", msg)
			}
		})
	}
}

// TestExternalS3RefusalAsksNoMetadataService: off EC2, with no credentials
// anywhere and nothing said about the instance metadata service, the
// refusal of -embedded=false is the whole output, one line, and nothing
// reaches the metadata service (here a local fake standing in for it).
func TestExternalS3RefusalAsksNoMetadataService(t *testing.T) {
	if awsclient.OnEC2() {
		t.Skip("on EC2 the SDK asks the instance's metadata service, as it should")
	}
	t.Parallel()
	var asked atomic.Int64
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer fake.Close()
	var env []string
	for _, kv := range cleanEnv("TILES_BUCKET=x", "AWS_EC2_METADATA_SERVICE_ENDPOINT="+fake.URL) {
		if !strings.HasPrefix(kv, awsclient.MetadataDisabledEnv+"=") {
			env = append(env, kv)
		}
	}
	r := cmdtest.Run(t, devstackCmd(t, 30*time.Second, env, append([]string{"-embedded=false"}, freePorts...)...))
	if r.Code != 1 {
		t.Fatalf("got exit %d, want 1; stderr:\n%s", r.Code, r.Stderr)
	}
	if got := r.Stdout + r.Stderr; strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "devstack: -embedded=false uses the S3 of the environment") {
		t.Errorf("want the refusal alone, on one line; got:\n%s", got)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the instance metadata service got %d requests, want none", n)
	}
}

// TestBannerPurgeWalk runs the banner's numbered steps as a newcomer pastes
// them into a shell, with Go, curl and grep alone (the project's command
// stands in built once, where the steps say go run), and checks each answer
// against what its comment promises.
func TestBannerPurgeWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tilesieve command")
	}
	for _, tool := range []tooltest.Tool{tooltest.Debian("sh", "dash", ""), tooltest.Curl, tooltest.Debian("grep", "grep", ""), tooltest.Debian("head", "coreutils", "")} {
		tool.Path(t)
	}
	t.Parallel()
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "tilesieve")
	build := exec.Command("go", "build", "-o", bin, "./infra/tilesieve")
	build.Dir, build.Env = root, append(os.Environ(), buildAsThisTest(t)...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./infra/tilesieve: %v\n%s", err, out)
	}
	d := start(t, devstackCmd(t, 3*time.Minute, cleanEnv(), freePorts...))
	var steps []string
	for line := range strings.SplitSeq(d.banner, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), strconv.Itoa(len(steps)+1)+". "); ok {
			if i := strings.LastIndex(rest, " # "); i >= 0 {
				rest = rest[:i]
			}
			steps = append(steps, strings.ReplaceAll(strings.TrimSpace(rest), stack.Tilesieve, bin))
		}
	}
	if len(steps) != 7 {
		t.Fatalf("got %d steps, want 7:\n%s", len(steps), d.banner)
	}
	dir := t.TempDir()
	sh := func(i int) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", steps[i-1])
		cmd.Dir, cmd.Env = dir, cleanEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("step %d: %v: %s\n%s", i, err, steps[i-1], out)
		}
		return string(out)
	}
	// headers reads the X-Cache and ETag lines a step printed, and fails
	// the test on any other line.
	headers := func(i int, out string) (xcache, etag string) {
		t.Helper()
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			name, value, _ := strings.Cut(strings.TrimSpace(line), ": ")
			switch strings.ToLower(name) {
			case "x-cache":
				xcache = value
			case "etag":
				etag = value
			default:
				t.Errorf("step %d printed %q, want only X-Cache and ETag", i, line)
			}
		}
		return xcache, etag
	}
	// until reruns step i until ok accepts its output: the purge reaches
	// the function within SYNC_INTERVAL, asynchronously.
	until := func(i int, ok func(string) bool) {
		t.Helper()
		var out string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out = sh(i); ok(out) {
				return
			}
		}
		t.Fatalf("step %d: still %q after 10s", i, out)
	}
	sh(1)
	if x, _ := headers(2, sh(2)); x != "MISS" {
		t.Errorf("step 2: X-Cache %q, want MISS", x)
	}
	x, etag := headers(3, sh(3))
	if x != "HIT-MEMORY" || etag == "" {
		t.Errorf("step 3: X-Cache %q, ETag %q; want HIT-MEMORY and an ETag", x, etag)
	}
	if out := sh(4); !strings.Contains(out, ": 1 uploaded (") {
		t.Errorf("step 4: %q, want one file uploaded", out)
	}
	until(5, func(out string) bool { x, e := headers(5, out); return x == "MISS" && e != etag })
	if out := sh(6); !strings.HasSuffix(out, ": deleted\n") {
		t.Errorf("step 6: %q, want the tile deleted", out)
	}
	until(7, func(out string) bool { return strings.Contains(out, " 404") })
	if err := d.interrupt(t); err != nil {
		t.Fatalf("after SIGINT: %v; stderr:\n%s", err, d.stderr)
	}
}

// TestHelp: -h, -help, --help and help print one usage text on stdout and
// exit 0, with each default as it is (PORT's, not -1); anything else that
// is not a flag is bad usage (exit 2, the usage on stderr).
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  []string
		code int
		want []string // in the output: stdout for 0, stderr for 2
	}{
		{[]string{"-h"}, nil, 0, []string{"usage: make run ARGS='[flags]'\n", "-port int\n", "(env PORT; 0: any free port) (default 8080)\n", "(default 9000)\n", "NAME.mbtiles"}},
		{[]string{"--help"}, []string{"PORT=8123", "S3_LOCAL_PORT=9100"}, 0, []string{"(default 8123)\n", "(default 9100)\n"}},
		{[]string{"-help"}, nil, 0, []string{"usage: make run"}},
		{[]string{"help"}, nil, 0, []string{"usage: make run"}},
		{[]string{"-port", "0", "help"}, nil, 0, []string{"usage: make run"}},
		{[]string{"bogus"}, nil, 2, []string{"devstack: unexpected argument \"bogus\"\nusage: make run"}},
		{[]string{"-nope"}, nil, 2, []string{"flag provided but not defined: -nope\nusage: make run"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := cmdtest.Run(t, devstackCmd(t, 30*time.Second, cleanEnv(tc.env...), tc.args...))
			got, other := r.Stdout, r.Stderr
			if tc.code != 0 {
				got, other = other, got
			}
			if r.Code != tc.code || other != "" {
				t.Errorf("got exit %d, stdout %q, stderr %q; want %d and one output", r.Code, r.Stdout, r.Stderr, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "(default -1)") {
				t.Errorf("a default printed as -1:\n%s", got)
			}
		})
	}
}

// repoRoot is the module root, where the Makefile is.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Skipf("no Makefile at %s: %v", root, err)
	}
	return root
}

func makeCmd(t *testing.T) string {
	t.Helper()
	return tooltest.Debian("make", "make", "").Path(t)
}

// TestMakeRunInterruptPrintsNoError presses Ctrl-C on `make run` as a
// terminal does: SIGINT to the whole foreground process group. make then
// reports any recipe that did not exit 0 ("make: *** [run] Error 1").
func TestMakeRunInterruptPrintsNoError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the devstack binary")
	}
	t.Parallel()
	bin := makeCmd(t)
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-s", "--no-print-directory", "run",
		"DEVSTACK_BIN="+filepath.Join(t.TempDir(), "devstack"),
		"ARGS="+strings.Join(freePorts, " "))
	cmd.Dir = root
	cmd.Env = cleanEnv(buildAsThisTest(t)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	d := start(t, cmd)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("make run still running 30s after SIGINT; stderr:\n%s", d.stderr)
	}
	if s := d.stderr.String(); strings.Contains(s, "make: ***") || strings.Contains(s, "exit status") {
		t.Errorf("make reported an error after Ctrl-C:\n%s", s)
	}
}

// buildAsThisTest is the environment under which a go command run by a test
// builds with this test binary's -race setting. `go test -race` has compiled
// every package that way, so `make run`'s go build reuses them; without it,
// from a cold build cache, it compiles the tree again without -race, which
// can take longer than the banner's wait.
func buildAsThisTest(t *testing.T) []string {
	t.Helper()
	bi, ok := debug.ReadBuildInfo()
	if !ok || !slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		return nil
	}
	out, err := exec.Command("go", "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS: %v", err)
	}
	return []string{"GOFLAGS=" + strings.TrimSpace(strings.TrimSpace(string(out))+" -race")}
}

// TestMakeHelpExpandsEverything: `make help` prints the targets' comments
// as they are written, so a comment that names a variable shows "$(...)".
func TestMakeHelpExpandsEverything(t *testing.T) {
	t.Parallel()
	bin := makeCmd(t)
	cmd := exec.Command(bin, "-s", "--no-print-directory", "help")
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("run")) {
		t.Fatalf("make help lists no run target:\n%s", out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "$(") || strings.Contains(line, "${") {
			t.Errorf("unexpanded variable: %s", line)
		}
	}
}
