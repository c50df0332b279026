package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// line encodes one event of the stream.
func line(t *testing.T, e event) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestStreamCut(t *testing.T) {
	t.Parallel()
	all := stream(t, "all")
	pass := stream(t, "pass")
	lastLine := bytes.LastIndexByte(pass[:len(pass)-1], '\n') + 1
	tests := []struct {
		name string
		in   []byte
		want []string
	}{
		{
			name: "mid-line",
			in:   all[:len(all)/2],
			want: []string{"Packages without a result (the stream ended while they ran) (1):"},
		},
		{
			name: "before the package result",
			in:   pass[:lastLine],
			want: []string{
				"FAIL pass no result, the stream ended; 5 passed",
				"Packages: 0 passed, 0 failed, 0 without test files, 1 without a result",
				" pass",
			},
		},
		{
			name: "after a test started",
			in:   firstLines(pass, 3), // start, run TestOne, its === RUN line
			want: []string{">>> FAIL no result, the stream ended, with no output of their own: TestOne"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, o := replay(t, tt.in, Config{})
			checkLines(t, got, tt.want, nil)
			if !o.Failed {
				t.Errorf("Failed: got false, want true for a stream cut short")
			}
			// The cut line is not an event: it is written through whole.
			if i := bytes.LastIndexByte(tt.in, '\n'); i+1 < len(tt.in) {
				if partial := string(tt.in[i+1:]); !strings.Contains(got, partial+"\n") {
					t.Errorf("report lacks the cut line %q", partial)
				}
			}
		})
	}
}

// firstLines returns the first n lines of b.
func firstLines(b []byte, n int) []byte {
	end := 0
	for ; n > 0; n-- {
		end += bytes.IndexByte(b[end:], '\n') + 1
	}
	return b[:end]
}

func TestPassThrough(t *testing.T) {
	t.Parallel()
	in := "go: downloading example.com/dep v1.0.0\n" +
		string(stream(t, "notests")) +
		"not json {\n" +
		`{"Action":""}` + "\n" +
		"{\"no newline\": true}"
	got, o := replay(t, []byte(in), Config{})
	for _, want := range []string{
		"go: downloading example.com/dep v1.0.0\n",
		"not json {\n",
		`{"Action":""}` + "\n",
		"{\"no newline\": true}\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q; got:\n%s", want, got)
		}
	}
	if o.Failed {
		t.Errorf("Failed: got true, want false")
	}
}

func TestLongLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("y", 1000) // longer than MaxLine, which events are not
	in := "start " + long + " end\n" + string(stream(t, "notests")) + long
	got, _ := replay(t, []byte(in), Config{MaxLine: 256})
	for _, want := range []string{"start " + long + " end\n", long + "\n", "(no test files)"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %.40q...; got:\n%s", want, got)
		}
	}
}

func TestJSONCopy(t *testing.T) {
	t.Parallel()
	in := stream(t, "buildtext") // text lines and events
	var copied, want bytes.Buffer
	replay(t, in, Config{JSON: &copied})
	for _, l := range bytes.SplitAfter(in, []byte("\n")) {
		if _, ok := decodeEvent(l); ok {
			want.Write(l)
		}
	}
	if copied.String() != want.String() {
		t.Errorf("JSON copy: got\n%s\nwant\n%s", copied.String(), want.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	r := New(Config{Out: failingWriter{}, JSON: failingWriter{}})
	if _, err := r.ReadFrom(bytes.NewReader(stream(t, "fail"))); err != nil {
		t.Fatal(err)
	}
	o := r.Finish()
	if !o.Failed {
		t.Errorf("Failed: got false, want true: the outcome does not depend on writing")
	}
	for _, want := range []string{"writing the report", "writing the JSON copy"} {
		if o.Err == nil || !strings.Contains(o.Err.Error(), want) {
			t.Errorf("Err: got %v, want one mentioning %q", o.Err, want)
		}
	}
}

func TestAlignment(t *testing.T) {
	t.Parallel()
	got, _ := replay(t, stream(t, "all"), Config{})
	col := -1
	for _, l := range strings.Split(got, "\n") {
		if !strings.HasPrefix(l, "ok   ") && !strings.HasPrefix(l, "FAIL ") && !strings.HasPrefix(l, "---  ") {
			continue
		}
		if strings.HasPrefix(l, "FAIL\t") {
			continue
		}
		if strings.HasPrefix(l, "---  ") || strings.Contains(l, "build failed") {
			continue // no time column
		}
		c := len(l[:5+minWidth]) + strings.Index(l[5+minWidth:], "s  ")
		if col >= 0 && c != col {
			t.Errorf("line %q: time column ends at %d, want %d", l, c, col)
		}
		col = c
	}
	if col < 0 {
		t.Fatal("no package lines")
	}
}

func TestColor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		color bool
		want  []string
	}{
		{color: true, want: []string{ansiGreen + "ok" + ansiReset + "   pass", ansiRed + "FAIL" + ansiReset + " fail"}},
		{color: false, want: []string{"ok   pass", "FAIL fail"}},
	}
	for _, tt := range tests {
		got, _ := replay(t, stream(t, "all"), Config{Color: tt.color})
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("Color %v: report lacks %q", tt.color, w)
			}
		}
		if !tt.color && strings.Contains(got, "\x1b") {
			t.Errorf("Color false: report has an escape sequence")
		}
	}
}

func TestModuleNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		module, path, want string
	}{
		{"example.com/m", "example.com/m/a/b", "a/b"},
		{"example.com/m", "example.com/m", "example.com/m"},
		{"example.com/m", "example.com/mm/a", "example.com/mm/a"},
		{"", "example.com/m/a", "example.com/m/a"},
	}
	for _, tt := range tests {
		r := New(Config{Out: &bytes.Buffer{}, Module: tt.module})
		if got := r.name(tt.path); got != tt.want {
			t.Errorf("name(%q) with module %q: got %q, want %q", tt.path, tt.module, got, tt.want)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(Config{Out: &out, Heartbeat: 30 * time.Second, Now: clock.now, Module: "m"})
	steps := []struct {
		advance time.Duration
		event   *event
		want    string // what Tick prints after the event; "" for nothing
	}{
		{advance: 29 * time.Second},
		{advance: time.Second, want: "30s  building: no package has started yet\n"},
		{advance: time.Second, event: &event{Action: "start", Package: "m/a"}},
		{advance: 14 * time.Second},
		{advance: 15 * time.Second, want: "1m00s  0/1 done; running: a (29s)\n"},
		{advance: 5 * time.Second, event: &event{Action: "start", Package: "m/b"}},
		{advance: time.Second, event: &event{Action: "fail", Package: "m/b", Elapsed: 1}},
		{advance: 29 * time.Second},
		{advance: time.Second, want: "1m36s  1/2 done (1 failed); running: a (1m05s)\n"},
		{advance: time.Second, event: &event{Action: "pass", Package: "m/a", Elapsed: 66}},
		{advance: 30 * time.Second, want: "2m07s  2/2 done (1 failed); building the next\n"},
		{advance: 29 * time.Second},
		{advance: time.Second, want: "2m37s  2/2 done (1 failed); building the next\n"},
	}
	for i, s := range steps {
		clock.advance(s.advance)
		if s.event != nil {
			r.Line(line(t, *s.event))
		}
		out.Reset()
		r.Tick()
		if got := out.String(); got != s.want {
			t.Errorf("step %d: Tick printed %q, want %q", i, got, s.want)
		}
	}
}

func TestHeartbeatListsAtMostFour(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(Config{Out: &out, Heartbeat: time.Minute, Now: clock.now})
	for _, p := range []string{"a", "b", "c", "d", "e", "f"} {
		r.Line(line(t, event{Action: "start", Package: p}))
		clock.advance(10 * time.Second)
	}
	out.Reset()
	r.Tick()
	want := "1m00s  0/6 done; running: a (1m00s), b (50s), c (40s), d (30s), and 2 more\n"
	if got := out.String(); got != want {
		t.Errorf("Tick printed %q, want %q", got, want)
	}
}

func TestHeartbeatOff(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(Config{Out: &out, Now: clock.now})
	clock.advance(time.Hour)
	r.Tick()
	if out.Len() != 0 {
		t.Errorf("Tick with no Heartbeat printed %q, want nothing", out.String())
	}
}

// TestHeartbeatMidLine: no heartbeat may split a line being written through.
func TestHeartbeatMidLine(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	var out bytes.Buffer
	r := New(Config{Out: &out, Heartbeat: time.Second, Now: clock.now})
	r.Text([]byte("half a line"))
	clock.advance(time.Minute)
	r.Tick()
	if got := out.String(); got != "half a line" {
		t.Errorf("report: got %q, want %q", got, "half a line")
	}
}
