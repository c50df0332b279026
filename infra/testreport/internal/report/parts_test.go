package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int
		writes  []string
		want    string
		wantCut int64
	}{
		{name: "fits", max: 16, writes: []string{"a\n", "b\n"}, want: "a\nb\n"},
		{name: "drops whole lines", max: 8, writes: []string{"one\n", "two\n", "three\n"}, want: "three\n", wantCut: 8},
		{name: "one long write", max: 8, writes: []string{"0123456789\nabc\n"}, want: "abc\n", wantCut: 11},
		{name: "a line longer than max", max: 4, writes: []string{"abcdefgh"}, want: "efgh", wantCut: 4},
		{name: "cut inside a rune", max: 4, writes: []string{"aé€"}, want: "€", wantCut: 3},
		{name: "nothing kept", max: 0, writes: []string{"abc"}, want: "", wantCut: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := tail{max: tt.max}
			total := 0
			for _, w := range tt.writes {
				tl.write(w)
				total += len(w)
			}
			if got := tl.String(); got != tt.want {
				t.Errorf("kept: got %q, want %q", got, tt.want)
			}
			if tl.cut != tt.wantCut {
				t.Errorf("cut: got %d, want %d", tl.cut, tt.wantCut)
			}
			if int(tl.cut)+len(tl.buf) != total {
				t.Errorf("cut+kept: got %d, want %d", int(tl.cut)+len(tl.buf), total)
			}
			if !utf8.Valid(tl.buf) {
				t.Errorf("kept %q is not valid UTF-8", tl.buf)
			}
		})
	}
}

// TestTailBounded: however much is written, the array stays under twice max.
func TestTailBounded(t *testing.T) {
	t.Parallel()
	tl := tail{max: 1 << 10}
	for i := 0; i < 10000; i++ {
		tl.write(strings.Repeat("z", i%300) + "\n")
		if c := cap(tl.buf); c > 2*tl.max+300 {
			t.Fatalf("after %d writes: capacity %d, want at most %d", i+1, c, 2*tl.max+300)
		}
	}
}

func TestSkipReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		output string
		want   string
	}{
		{name: "t.Skip", output: "=== RUN   TestX\n    x_test.go:12: needs chromium\n--- SKIP: TestX (0.00s)\n", want: "needs chromium"},
		{name: "last line wins", output: "=== RUN   TestX\n    x_test.go:10: looking\n    x_test.go:12: not found\n--- SKIP: TestX (0.00s)\n", want: "not found"},
		{name: "subtest", output: "=== RUN   TestX/sub\n    x_test.go:3: no sqlite3\n    --- SKIP: TestX/sub (0.00s)\n", want: "no sqlite3"},
		{name: "several lines", output: "    x_test.go:19: first line\n        second line\n--- SKIP: TestX (0.00s)\n", want: "first line second line"},
		{name: "SkipNow", output: "=== RUN   TestX\n--- SKIP: TestX (0.00s)\n", want: ""},
		{name: "no output kept", output: "", want: ""},
		{name: "printed, not logged", output: "=== RUN   TestX\nno database here\n--- SKIP: TestX (0.00s)\n", want: "no database here"},
		{name: "indented print after a log", output: "    x_test.go:1: log\nplain\n        indented\n--- SKIP: TestX (0.00s)\n", want: "indented"},
		{name: "empty message", output: "    x_test.go:12: \n--- SKIP: TestX (0.00s)\n", want: ""},
		{name: "not a file:line", output: "    note: x.go:abc: text\n--- SKIP: TestX (0.00s)\n", want: "note: x.go:abc: text"},
		{name: "parallel framing after", output: "    x_test.go:5: slow\n=== CONT  TestX\n--- SKIP: TestX (0.00s)\n", want: "slow"},
		{name: "clipped", output: "    x_test.go:5: " + strings.Repeat("é", 200) + "\n", want: strings.Repeat("é", 118) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := tail{max: 1 << 16}
			tl.write(tt.output)
			if got := skipReason(tl.lines()); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line   string
		wantOK bool
		want   event
	}{
		{line: `{"Action":"pass","Package":"p","Test":"T","Elapsed":1.5}`, wantOK: true, want: event{Action: "pass", Package: "p", Test: "T", Elapsed: 1.5}},
		{line: ` {"ImportPath":"p [p.test]","Action":"build-fail"} `, wantOK: true, want: event{Action: "build-fail", ImportPath: "p [p.test]"}},
		{line: `{"Action":"attr","Package":"p","Test":"T","Key":"k","Value":"v"}`, wantOK: true, want: event{Action: "attr", Package: "p", Test: "T"}},
		{line: `{"Package":"p"}`},
		{line: `{"Action":1}`},
		{line: `{"Action":"pass"`},
		{line: `# example.com/p`},
		{line: ``},
		{line: `{}`},
	}
	for _, tt := range tests {
		got, ok := decodeEvent([]byte(tt.line))
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("decodeEvent(%q): got %+v, %v, want %+v, %v", tt.line, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{40*time.Second + 400*time.Millisecond, "40s"},
		{59*time.Second + 600*time.Millisecond, "1m00s"},
		{2*time.Minute + 5*time.Second, "2m05s"},
		{12*time.Minute + 30*time.Second, "12m30s"},
		{time.Hour + 2*time.Minute + 5*time.Second, "1h02m05s"},
	}
	for _, tt := range tests {
		if got := clock(tt.d); got != tt.want {
			t.Errorf("clock(%v): got %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestIsFraming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want bool
	}{
		{"=== RUN   TestX", true},
		{"    --- FAIL: TestX/sub (0.00s)", true},
		{"=== ATTR  TestX key value", true},
		{"PASS", true},
		{"ok  \texample.com/p\t0.01s", true},
		{"FAIL\texample.com/p [build failed]", true},
		{"   ", true},
		{"    x_test.go:1: hello", false},
		{"panic: boom", false},
		{"FAILED to connect", false},
	}
	for _, tt := range tests {
		if got := isFraming(tt.line); got != tt.want {
			t.Errorf("isFraming(%q): got %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestRunSet(t *testing.T) {
	t.Parallel()
	var s runSet
	runs := make(map[string]*pkgRun)
	for i := 0; i < 1000; i++ {
		p := &pkgRun{path: fmt.Sprint(i)}
		runs[p.path] = p
		s.add(p)
		if i >= 3 {
			s.remove(runs[fmt.Sprint(i-3)]) // three run at a time
		}
		if len(s.order) > 2*s.len()+16 {
			t.Fatalf("after %d: order holds %d for %d running", i, len(s.order), s.len())
		}
	}
	s.add(&pkgRun{path: "998"}) // started again: the new run replaces the old
	var got []string
	for _, p := range s.all() {
		got = append(got, p.path)
	}
	if want := []string{"997", "999", "998"}; !slices.Equal(got, want) {
		t.Errorf("running: got %v, want %v", got, want)
	}
	if !runs["998"].ended {
		t.Errorf("the replaced run is not marked ended")
	}
}
