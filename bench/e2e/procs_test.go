package e2e

import (
	"os"
	"strings"
	"testing"
)

func TestParseProcStatus(t *testing.T) {
	t.Parallel()
	m, err := ParseProcStatus("Name:\ttiles\nVmPeak:\t 1300000 kB\nVmHWM:\t   30256 kB\nVmRSS:\t   29000 kB\n")
	if err != nil || m.VmHWM != 30256<<10 || m.VmRSS != 29000<<10 {
		t.Errorf("got %+v, %v", m, err)
	}
	if _, err := ParseProcStatus("Name: x\n"); err == nil {
		t.Errorf("status without VmHWM parsed")
	}
	if m, err := ReadProcMemory(os.Getpid()); err != nil || m.VmHWM == 0 {
		t.Errorf("own status: %+v, %v", m, err)
	}
}

func TestNginxConf(t *testing.T) {
	t.Parallel()
	c := NginxConf("/tmp/p", "/tmp/www", 8081)
	for _, want := range []string{"daemon off;", "pid /tmp/p/nginx.pid;", "listen 127.0.0.1:8081;", "root /tmp/www;", "sendfile on;", "error_log /tmp/p/error.log"} {
		if !strings.Contains(c, want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
}
