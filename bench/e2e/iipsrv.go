package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// IIPSrv is Debian's IIPImage server (package iipimage-server), a FastCGI
// program.
const IIPSrv = "/usr/lib/iipimage-server/iipsrv.fcgi"

// iipPath is where the nginx front of the IIPImage baseline passes requests
// to it, as IIPImage's documentation configures nginx.
const iipPath = "/fcgi-bin/iipsrv.fcgi"

// iipServers is a set of iipsrv processes, each answering one FastCGI
// connection at a time on a port of its own, behind one nginx upstream.
type iipServers struct {
	ports []int
	env   []string
	logs  string
	procs []*Proc
}

// newIIPServers picks n ports for iipsrv processes reading images from dir
// with a tile cache of cacheMB and JPEG quality q.
func newIIPServers(n int, dir string, cacheMB, q int, logs string) (*iipServers, error) {
	s := &iipServers{logs: logs, env: []string{
		"FILESYSTEM_PREFIX=" + strings.TrimSuffix(dir, "/") + "/",
		"MAX_IMAGE_CACHE_SIZE=" + strconv.Itoa(cacheMB),
		"JPEG_QUALITY=" + strconv.Itoa(q),
		"PATH=" + os.Getenv("PATH"),
	}}
	for range n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		s.ports = append(s.ports, p)
	}
	return s, nil
}

// start starts fresh processes (empty caches, no image opened) and waits
// until each accepts connections.
func (s *iipServers) start(ctx context.Context, round string) error {
	s.stop()
	for i, port := range s.ports {
		cmd := exec.Command(IIPSrv, "--bind", "127.0.0.1:"+strconv.Itoa(port), "--backlog", "1024")
		cmd.Env = s.env
		p, err := startTCPProc(ctx, fmt.Sprintf("iipsrv-%s-%d", round, i), cmd, "127.0.0.1:"+strconv.Itoa(port), s.logs)
		if err != nil {
			s.stop()
			return err
		}
		s.procs = append(s.procs, p)
	}
	return nil
}

func (s *iipServers) stop() {
	for _, p := range s.procs {
		p.Stop()
	}
	s.procs = nil
}

// pids are the running processes' ids.
func (s *iipServers) pids() []int {
	var out []int
	for _, p := range s.procs {
		out = append(out, p.Cmd.Process.Pid)
	}
	return out
}

// startTCPProc starts cmd (output to logDir/name.log) and waits until addr
// accepts a TCP connection: for servers that do not speak HTTP.
func startTCPProc(ctx context.Context, name string, cmd *exec.Cmd, addr, logDir string) (*Proc, error) {
	logf, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited before it was ready; see %s", name, logf.Name())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return p, nil
		}
	}
	p.Stop()
	return nil, fmt.Errorf("%s not listening within 30s; see %s", name, logf.Name())
}

// imagesNginxConf is the nginx.conf of the section's two nginx servers, in
// one process: on fcgiPort the front of the iipsrv processes (IIPImage's
// documented nginx set-up, one connection per request: an iipsrv process
// serves one connection at a time, so a kept connection would hold it), and
// on staticPort the files under www with sendfile on.
func imagesNginxConf(prefix, www string, fcgiPort, staticPort int, iipPorts []int) string {
	var up strings.Builder
	for _, p := range iipPorts {
		fmt.Fprintf(&up, "        server 127.0.0.1:%d;\n", p)
	}
	return nginxHead(prefix) + fmt.Sprintf(`    upstream iip {
%[5]s    }
    server {
        listen 127.0.0.1:%[3]d;
        location %[6]s {
            fastcgi_pass iip;
            fastcgi_param PATH_INFO $fastcgi_script_name;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param CONTENT_TYPE $content_type;
            fastcgi_param CONTENT_LENGTH $content_length;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param SERVER_NAME $host;
            fastcgi_param SERVER_PORT $server_port;
        }
    }
    server {
        listen 127.0.0.1:%[4]d;
        root %[2]s;
        location / {
            add_header Cache-Control "public, max-age=86400";
        }
    }
}
`, prefix, www, fcgiPort, staticPort, up.String(), iipPath)
}
