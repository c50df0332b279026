package loadtool

import (
	"os"
	"strings"
	"testing"
	"time"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseAB(t *testing.T) {
	t.Parallel()
	r, err := ParseAB(read(t, "ab-keepalive.txt"), "")
	if err != nil {
		t.Fatal(err)
	}
	want := AB{Complete: 2000, KeepAlive: 2000, RPS: 33549.73, Mean: 596 * time.Microsecond,
		TransferKBs: 995352.31, P50: 0, P99: 2 * time.Millisecond}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	r, err = ParseAB(read(t, "ab-nokeepalive.txt"), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete != 500 || r.KeepAlive != 0 || r.RPS != 13303.89 {
		t.Errorf("no keep-alive: got %+v", r)
	}
	if _, err := ParseAB("ab: invalid URL", ""); err == nil {
		t.Errorf("garbage parsed")
	}
}

func TestParseABCSV(t *testing.T) {
	t.Parallel()
	pct, err := ParseABCSV(read(t, "ab-percentiles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if pct[99] != 2018*time.Microsecond || pct[0] != 38*time.Microsecond || pct[100] != 2676*time.Microsecond {
		t.Errorf("got p0 %v p99 %v p100 %v", pct[0], pct[99], pct[100])
	}
	r, err := ParseAB(read(t, "ab-keepalive.txt"), read(t, "ab-percentiles.csv"))
	if err != nil || r.P99 != 2018*time.Microsecond {
		t.Errorf("CSV p99 not used: %v %v", r.P99, err)
	}
	if _, err := ParseABCSV("Percentage served,Time in ms\n0,1\n"); err == nil {
		t.Errorf("short CSV parsed")
	}
}

func TestParseWrk(t *testing.T) {
	t.Parallel()
	r, err := ParseWrk(read(t, "wrk-latency.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Wrk{Requests: 69936, Duration: 2100 * time.Millisecond, RPS: 33246.10, TransferMBs: 803.93,
		Mean: 890 * time.Microsecond, P50: 436 * time.Microsecond, P90: 2350 * time.Microsecond, P99: 6140 * time.Microsecond}
	if r != want {
		t.Errorf("got %+v, want %+v", r, want)
	}
	r, err = ParseWrk(read(t, "wrk-non2xx.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Non2xx != 51243 || r.P99 != 4300*time.Microsecond || r.Mean != 344290*time.Nanosecond {
		t.Errorf("non-2xx: got %+v", r)
	}
	if _, err := ParseWrk("Running 1s test @ x\n"); err == nil {
		t.Errorf("output without results parsed")
	}
}

func TestWrkDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"436.00us": 436 * time.Microsecond, "1.01ms": 1010 * time.Microsecond, "2.10s": 2100 * time.Millisecond, "1.00m": time.Minute,
	} {
		if got, err := wrkDuration(in); err != nil || got != want {
			t.Errorf("%s: got %v, %v, want %v", in, got, err, want)
		}
	}
	if _, err := wrkDuration("fast"); err == nil {
		t.Errorf("bad duration parsed")
	}
}

func TestLoopbackAndScript(t *testing.T) {
	t.Parallel()
	if CheckLoopback("http://127.0.0.1:8080/a") != nil || CheckLoopback("http://example.com/") == nil || CheckLoopback("http://127.0.0.10:1/") == nil {
		t.Errorf("loopback check wrong")
	}
	s := WrkScript([]string{"/a/1.jpg", `/b/"q".jpg`})
	if !strings.Contains(s, `"/a/1.jpg"`) || !strings.Contains(s, `"/b/\"q\".jpg"`) || !strings.Contains(s, "wrk.format") {
		t.Errorf("script:\n%s", s)
	}
}
