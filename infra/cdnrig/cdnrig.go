// Package cdnrig puts a real HTTP cache, Varnish, in CloudFront's place for
// end-to-end tests: the tile function behind a cache configured as the SAM
// template configures its distribution, and a CloudFront invalidation API
// stand-in whose invalidations become Varnish bans.
//
// What it promises:
//   - Start runs varnishd on 127.0.0.1 (a port of its own, a working
//     directory under the test's temporary directory, no jail), with a VCL
//     rendered from a Policy, and stops it when the test ends. Without
//     varnishd on PATH the test is skipped with one line, or fails when
//     TILESIEVE_REQUIRE_VARNISH=1.
//   - PolicyFromTemplate reads the Policy from template.yaml: cache key and
//     TTLs of the cache policy, what the origin request policy forwards, the
//     origin's custom headers, origin access control's replacement of
//     Authorization, the viewer-request function and the behaviours with
//     caching disabled. What it cannot mirror is an error, not a guess.
//   - Rig.Invalidations is the invalidation API: the real SDK client (and so
//     cdn.Invalidator) talks to it, each path becomes a ban (an exact path
//     `req.url == path`, a wildcard `/dir/*` `req.url ~ ^/dir/`), and an
//     invalidation is Completed only after its bans were applied.
//
// What it cannot show is CloudFront's own: edge locations and regional
// caches, the CloudFront Function's JavaScript (the rig applies its effect),
// a SigV4 signature the function URL checks (the rig's is a placeholder),
// compression at the edge, and how long CloudFront really takes to complete
// an invalidation.
package cdnrig

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/purge/cdn/cdntest"
	"github.com/tilesieve/tilesieve/shared/testkit/syncbuf"
	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

// startTimeout bounds varnishd's start, VCL compilation included.
const startTimeout = 30 * time.Second

// Options configure Start.
type Options struct {
	// Origin is the host:port the cache fetches from (the tile function).
	Origin string
	// Policy is what the cache mirrors (PolicyFromTemplate).
	Policy Policy
	// PathPrefix is cdn.Config.PathPrefix: viewers reach key k at
	// "/"+PathPrefix+k, and the origin gets "/"+k.
	PathPrefix string
	// Memory is the cache's size in MiB; default 64.
	Memory int
}

// Rig is a running varnishd.
type Rig struct {
	// URL is where viewers reach the cache, e.g. http://127.0.0.1:41234.
	URL string
	// Addr is URL's host:port, the Host a viewer sends.
	Addr string
	// VCL is the configuration it runs.
	VCL string

	cli *cli
	out *syncbuf.Buffer // varnishd's output

	mu   sync.Mutex // guards bans
	bans []string
}

// Varnishd returns varnishd's path. Without one it skips the test with one
// line, or fails it when TILESIEVE_REQUIRE_VARNISH=1; with -short it skips.
func Varnishd(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("cdnrig: runs varnishd")
	}
	return tooltest.Varnishd.Path(t)
}

// Start runs varnishd for the test; it stops when the test ends.
func Start(t testing.TB, opts Options) *Rig {
	t.Helper()
	bin := Varnishd(t)
	if opts.Memory <= 0 {
		opts.Memory = 64
	}
	vcl, err := VCL(opts.Policy, opts.Origin, opts.PathPrefix)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	vclPath := filepath.Join(dir, "rig.vcl")
	if err := os.WriteFile(vclPath, []byte(vcl), 0o644); err != nil {
		t.Fatal(err)
	}
	// varnishd connects to this listener with its command line interface
	// (-M), so no port has to be guessed free.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &Rig{VCL: vcl, out: &syncbuf.Buffer{}}
	cmd := exec.Command(bin, "-F",
		"-j", "none", // the working directory is the test's, not varnish's user's
		"-n", filepath.Join(dir, "varnishd"),
		"-a", "127.0.0.1:0",
		"-M", ln.Addr().String(),
		"-f", vclPath,
		"-s", fmt.Sprintf("malloc,%dm", opts.Memory),
		// The viewer's Accept-Encoding reaches the origin as the key has it;
		// Varnish must not gzip or gunzip on its own.
		"-p", "http_gzip_support=off",
		"-p", "default_grace=0s",
		"-p", "default_keep=0s",
	)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("cdnrig: start varnishd: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if r.cli != nil {
			r.cli.close()
		}
		cmd.Process.Kill()
		<-exited
	})
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("cdnrig: "+format+"\nvarnishd said:\n%s", append(a, r.out.String())...)
	}

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	var conn net.Conn
	select {
	case conn = <-accepted:
	case <-exited:
		fail("varnishd exited at start")
	case <-time.After(startTimeout):
		fail("varnishd did not connect its CLI within %v", startTimeout)
	}
	secret, err := os.ReadFile(filepath.Join(dir, "varnishd", "_.secret"))
	if err != nil {
		conn.Close()
		fail("read the CLI secret: %v", err)
	}
	if r.cli, err = dialCLI(conn, secret); err != nil {
		conn.Close()
		fail("%v", err)
	}
	// The child listens once it has started; the master says where.
	deadline := time.Now().Add(startTimeout)
	for {
		body, err := r.cli.do("debug.listen_address")
		if err == nil {
			if r.Addr, err = listenAddr(body); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			fail("no listen address within %v: %v", startTimeout, err)
		}
		select {
		case <-exited:
			fail("varnishd exited at start")
		case <-time.After(50 * time.Millisecond): // polling for readiness
		}
	}
	r.URL = "http://" + r.Addr
	return r
}

// listenAddr parses debug.listen_address: "a0 127.0.0.1 41234".
func listenAddr(body string) (string, error) {
	f := strings.Fields(body)
	if len(f) < 3 {
		return "", fmt.Errorf("cdnrig: listen address %q", body)
	}
	return net.JoinHostPort(f[1], f[2]), nil
}

// Log returns what varnishd wrote to its output so far.
func (r *Rig) Log() string { return r.out.String() }

// Bans returns the ban expressions applied so far, in order.
func (r *Rig) Bans() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bans...)
}

// Ban applies a ban expression through the CLI; once it returns, no request
// is answered from an object the ban matches.
func (r *Rig) Ban(expr string) error {
	if _, err := r.cli.do("ban " + expr); err != nil {
		return fmt.Errorf("cdnrig: ban %s: %w", expr, err)
	}
	r.mu.Lock()
	r.bans = append(r.bans, expr)
	r.mu.Unlock()
	return nil
}

// ErrBadPath is an invalidation path CloudFront would refuse.
var ErrBadPath = errors.New("cdnrig: invalidation path")

// BanExpression is the ban of one invalidation path: an exact path matches
// that URL path, one ending in * every URL path that starts with what is
// before the *. Paths are compared as they are written, escapes included,
// as CloudFront compares them with its cache keys.
func BanExpression(path string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("%w %q: does not start with /", ErrBadPath, path)
	}
	if strings.ContainsAny(path, " \t\r\n") {
		return "", fmt.Errorf("%w %q: white space must be escaped", ErrBadPath, path)
	}
	if prefix, ok := strings.CutSuffix(path, "*"); ok {
		if strings.Contains(prefix, "*") {
			return "", fmt.Errorf("%w %q: * only at the end", ErrBadPath, path)
		}
		return "req.url ~ " + cliQuote("^"+regexp.QuoteMeta(prefix)), nil
	}
	if strings.Contains(path, "*") {
		return "", fmt.Errorf("%w %q: * only at the end", ErrBadPath, path)
	}
	return "req.url == " + cliQuote(path), nil
}

// BanPaths bans each invalidation path; it stops at the first that fails.
func (r *Rig) BanPaths(paths []string) error {
	for _, p := range paths {
		expr, err := BanExpression(p)
		if err != nil {
			return err
		}
		if err := r.Ban(expr); err != nil {
			return err
		}
	}
	return nil
}

// Invalidations starts a CloudFront invalidation API stand-in for the test
// whose invalidations are applied to this cache as bans (cdntest with
// Options.Apply); opts.Apply is replaced.
func (r *Rig) Invalidations(t testing.TB, opts cdntest.Options) *cdntest.Server {
	opts.Apply = func(ctx context.Context, id string, paths []string) error { return r.BanPaths(paths) }
	return cdntest.NewWithOptions(t, opts)
}

// cliQuote quotes s as one argument of the Varnish CLI.
func cliQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cli is an authenticated connection to varnishd's command line interface.
type cli struct {
	mu   sync.Mutex // guards the connection: one command and its answer at a time
	conn net.Conn
	rd   *bufio.Reader
}

func dialCLI(conn net.Conn, secret []byte) (*cli, error) {
	c := &cli{conn: conn, rd: bufio.NewReader(conn)}
	status, body, err := c.read()
	if err != nil {
		return nil, fmt.Errorf("cdnrig: CLI banner: %w", err)
	}
	if status == 107 {
		challenge, _, _ := strings.Cut(body, "\n")
		h := sha256.New()
		io.WriteString(h, challenge+"\n")
		h.Write(secret)
		io.WriteString(h, challenge+"\n")
		if _, err := c.do("auth " + hex.EncodeToString(h.Sum(nil))); err != nil {
			return nil, fmt.Errorf("cdnrig: CLI authentication: %w", err)
		}
	} else if status != 200 {
		return nil, fmt.Errorf("cdnrig: CLI banner: status %d: %s", status, body)
	}
	return c, nil
}

// do sends one command and returns the body of a 200 answer.
func (c *cli) do(cmd string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.conn, cmd+"\n"); err != nil {
		return "", err
	}
	status, body, err := c.read()
	if err != nil {
		return "", err
	}
	if status != 200 {
		return "", fmt.Errorf("status %d: %s", status, strings.TrimSpace(body))
	}
	return body, nil
}

// read reads one answer: "SSS LLLLLLLL\n", L bytes, "\n".
func (c *cli) read() (int, string, error) {
	line, err := c.rd.ReadString('\n')
	if err != nil {
		return 0, "", err
	}
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, "", fmt.Errorf("CLI answer header %q", line)
	}
	status, err1 := strconv.Atoi(f[0])
	n, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || n < 0 {
		return 0, "", fmt.Errorf("CLI answer header %q", line)
	}
	body := make([]byte, n+1)
	if _, err := io.ReadFull(c.rd, body); err != nil {
		return 0, "", err
	}
	return status, string(body[:n]), nil
}

func (c *cli) close() { c.conn.Close() }
