package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

func TestNearestTile(t *testing.T) {
	set := tileset.Set{
		{Key: "b", Body: make([]byte, 100)},
		{Key: "a", Body: make([]byte, 140)},
		{Key: "c", Body: make([]byte, 60)},
	}
	for _, tc := range []struct {
		n    int
		key  string
		size int
	}{
		{100, "b", 100}, {125, "a", 140}, {0, "c", 60}, {120, "a", 140}, {80, "b", 100},
	} {
		t.Run(fmt.Sprint(tc.n), func(t *testing.T) {
			if key, size := nearestTile(set, tc.n); key != tc.key || size != tc.size {
				t.Errorf("got %s (%d bytes), want %s (%d bytes)", key, size, tc.key, tc.size)
			}
		})
	}
}

// TestWireAnswer: the count is the status line, the header and the body as
// sent, without the Connection field the request asked for; a field more is
// counted.
func TestWireAnswer(t *testing.T) {
	body := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"image/png"}
		if r.URL.Path == "/more" {
			w.Header()["X-More"] = []string{"1"}
		}
		w.Header()["Date"] = []string{"Mon, 01 Jan 2024 00:00:00 GMT"}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	head := "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: image/png\r\nDate: Mon, 01 Jan 2024 00:00:00 GMT\r\n\r\n"
	for _, tc := range []struct {
		path       string
		wire, head int
	}{
		{"/", len(head) + len(body), len(head)},
		{"/more", len(head) + len(body) + len("X-More: 1\r\n"), len(head) + len("X-More: 1\r\n")},
	} {
		t.Run(tc.path, func(t *testing.T) {
			wire, header, err := wireAnswer(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if wire != tc.wire || header != tc.head {
				t.Errorf("got %d bytes (%d of header), want %d (%d)", wire, header, tc.wire, tc.head)
			}
		})
	}
}

// TestProcCPU: ProcCPU of this process grows with what getrusage says it
// used, over a busy loop of 50 ms of CPU (however long a busy machine
// takes to give it that).
func TestProcCPU(t *testing.T) {
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	pid := os.Getpid()
	before, err := ProcCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	r0 := rusage()
	for rusage()-r0 < 50*time.Millisecond {
	}
	used := rusage() - r0
	after, err := ProcCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < used*9/10 || d > used*2+20*time.Millisecond {
		t.Errorf("got %v of CPU, want about the %v getrusage counted", d, used)
	}
}
