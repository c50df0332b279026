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

// TestEqualTargetsAgainstTimeouts checks the note that sets a target's
// ratio beside the floor with the local server's timeouts: per round, the
// server's ratio over that floor's, then the median.
func TestEqualTargetsAgainstTimeouts(t *testing.T) {
	r := EqualResult{Bytes: 12193, Cells: []EqualCell{
		{Server: equalDefault, Tool: "wrk", Conns: 20, Target: true, Ratio: 0.90,
			Ratios: []float64{0.90, 0.80, 1.00}, CPURatios: []float64{1.10, 1.20, 1.00}},
		{Server: equalDefault, Tool: "ab", Conns: 20, Target: true, Ratio: 0.90,
			Ratios: []float64{0.90}, CPURatios: []float64{1.10}},
		{Server: equalTimeouts, Tool: "wrk", Conns: 20,
			Ratios: []float64{0.90, 1.00, 0.80}, CPURatios: []float64{1.10, 1.00, 1.25}},
	}}
	rps, cpu, ok := r.overTimeouts(r.Cells[0])
	// Rounds: 0.90/0.90, 0.80/1.00, 1.00/0.80 = 1, 0.8, 1.25; CPU 1, 1.2, 0.8.
	if !ok || fmt.Sprintf("%.2f %.2f", rps, cpu) != "1.00 1.00" {
		t.Fatalf("overTimeouts = %.3f, %.3f, %v; want 1.00, 1.00, true", rps, cpu, ok)
	}
	if _, _, ok := r.overTimeouts(r.Cells[1]); ok {
		t.Fatal("overTimeouts found a timeouts floor for ab, which did not run")
	}
	ts := r.targets()
	if len(ts) != 2 {
		t.Fatalf("%d targets, want 2", len(ts))
	}
	if !strings.Contains(ts[0].Reason, "1.00x req/s and 1.00x CPU") {
		t.Errorf("wrk note lacks the comparison with the timeouts floor: %s", ts[0].Reason)
	}
	if strings.Contains(ts[1].Reason, equalTimeouts) {
		t.Errorf("ab note names a floor that did not run: %s", ts[1].Reason)
	}
}
