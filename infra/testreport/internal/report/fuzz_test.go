package report

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"
	"time"
)

// FuzzReadFrom feeds arbitrary streams: the reporter must not panic, and
// text that cannot be an event comes out as it went in.
func FuzzReadFrom(f *testing.F) {
	names, err := fs.Glob(streams, "testdata/streams/*.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range names {
		b, err := streams.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		clock := newFakeClock()
		var out bytes.Buffer
		r := New(Config{Out: &out, Now: clock.now, Heartbeat: time.Second, MaxOutput: 512, MaxLine: 4096, Module: "example.com/sample"})
		for i, chunk := range bytes.SplitAfter(in, []byte("\n")) {
			if i%7 == 0 {
				clock.advance(time.Second)
				r.Tick()
			}
			r.Line(chunk)
		}
		o := r.Finish()
		if o.Err != nil {
			t.Fatalf("Finish: %v", o.Err)
		}
		if bytes.ContainsRune(in, '{') {
			return
		}
		rest := out.String()
		for _, l := range strings.SplitAfter(string(in), "\n") {
			if l == "" {
				continue
			}
			i := strings.Index(rest, strings.TrimSuffix(l, "\n")+"\n")
			if i < 0 {
				t.Fatalf("text without events: report lacks %q in order; report:\n%s", l, out.String())
			}
			rest = rest[i+len(l):]
		}
	})
}
