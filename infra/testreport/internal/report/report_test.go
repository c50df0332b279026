package report

import (
	"bytes"
	"embed"
	"regexp"
	"strings"
	"testing"
	"time"
)

//go:embed testdata/streams/*.jsonl
var streams embed.FS

func stream(t *testing.T, name string) []byte {
	t.Helper()
	b, err := streams.ReadFile("testdata/streams/" + name + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func newFakeClock() *fakeClock               { return &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// replay feeds a whole stream to a Reporter and returns its report.
func replay(t *testing.T, in []byte, cfg Config) (string, Outcome) {
	t.Helper()
	var out bytes.Buffer
	cfg.Out = &out
	if cfg.Now == nil {
		cfg.Now = newFakeClock().now
	}
	if cfg.Module == "" {
		cfg.Module = "example.com/sample"
	}
	r := New(cfg)
	if _, err := r.ReadFrom(bytes.NewReader(in)); err != nil {
		t.Fatalf("ReadFrom: %v", err)
	}
	o := r.Finish()
	if o.Err != nil {
		t.Fatalf("Finish: %v", o.Err)
	}
	return out.String(), o
}

var (
	secondsRE = regexp.MustCompile(`\b[0-9]+\.[0-9]+s\b`)
	spacesRE  = regexp.MustCompile(`[ \t]+`)
)

// normalize makes report lines comparable across recordings: times become
// #s, runs of blanks one space.
func normalize(s string) []string {
	s = secondsRE.ReplaceAllString(s, "#s")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(spacesRE.ReplaceAllString(l, " "), " ")
	}
	return lines
}

// checkLines fails unless every want line is a line of got (normalized),
// and no line of got starts with one of the absent prefixes.
func checkLines(t *testing.T, got string, want, absent []string) {
	t.Helper()
	lines := normalize(got)
	have := make(map[string]bool, len(lines))
	for _, l := range lines {
		have[l] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("report has no line %q; got:\n%s", w, got)
		}
	}
	for _, a := range absent {
		for _, l := range lines {
			if strings.HasPrefix(l, a) {
				t.Errorf("report has line %q, want none starting %q", l, a)
			}
		}
	}
}

// replayTests name a recorded stream and what its report must say: whole
// lines, compared after normalize.
var replayTests = []struct {
	stream     string
	maxOutput  int
	want       []string
	absent     []string
	wantFailed bool
}{
	{
		stream: "pass",
		want: []string{
			"ok pass #s 5 passed",
			"Packages: 1 passed, 0 failed, 0 without test files",
			"Tests: 5 passed, 0 failed, 0 skipped",
			"PASS",
		},
		absent: []string{">>>", "Skipped tests", "Failed tests"},
	},
	{
		stream: "fail",
		want: []string{
			">>> FAIL fail TestFails (#s)",
			"=== RUN TestFails",
			" fail_test.go:7: before the failure",
			" fail_test.go:8: got 1, want 2",
			"--- FAIL: TestFails (#s)",
			">>> FAIL fail TestSub/bad (#s)",
			" fail_test.go:13: sub failed",
			"FAIL fail #s 3 failed 2 passed",
			"Tests: 2 passed, 3 failed, 0 skipped",
			"Failed tests (2):",
			" fail TestFails",
			" fail TestSub/bad",
			"FAIL",
		},
		// TestSub failed only through its subtest, which was shown.
		absent:     []string{">>> FAIL fail TestSub (", ">>> FAIL fail: its output"},
		wantFailed: true,
	},
	{
		stream: "skip",
		want: []string{
			"ok skip #s 4 passed 4 skipped",
			"Skipped tests (4):",
			" skip TestNeedsChromium: chromium not found (apt-get install chromium)",
			" skip TestSubSkip/skips: no sqlite3 here",
			" skip TestSubSkip/multi: first line second line",
			" skip TestSkipNow: (no reason given)",
			"PASS",
		},
	},
	{
		stream: "short",
		want: []string{
			"ok pass #s 4 passed 1 skipped",
			"ok skip #s 2 passed 6 skipped",
			"Skipped tests (7):",
			" 3 tests: skipped in -short mode (pass TestLong, skip TestShortA and 1 more)",
			" skip TestNeedsChromium: chromium not found (apt-get install chromium)",
		},
	},
	{
		stream: "panic",
		want: []string{
			">>> FAIL panic TestPanics (#s)",
			"panic: assignment to entry in nil map [recovered, repanicked]",
			" example.com/sample/panic/panic_test.go:10 +0x28",
			"FAIL panic #s 1 failed 1 passed",
		},
		wantFailed: true,
	},
	{
		stream: "buildfail",
		want: []string{
			"# example.com/sample/buildfail [example.com/sample/buildfail.test]",
			`buildfail/buildfail_test.go:7:14: cannot use "not an int" (untyped string constant) as int value in variable declaration`,
			"FAIL buildfail build failed",
			"# example.com/sample/broken",
			"FAIL depbroken build failed: broken",
			"FAIL setupfail build failed: doesnotexist",
			`vetfail/vetfail_test.go:10:19: fmt.Sprintf format %d has arg "string" of wrong type string`,
			"FAIL vetfail build failed",
			"Packages: 0 passed, 4 failed, 0 without test files",
			"Failed builds (4):",
			" broken",
		},
		wantFailed: true,
	},
	{
		stream: "buildtext",
		want: []string{
			"# example.com/sample/buildfail [example.com/sample/buildfail.test]",
			`buildfail/buildfail_test.go:7:14: cannot use "not an int" (untyped string constant) as int value in variable declaration`,
			"FAIL buildfail build failed",
		},
		wantFailed: true,
	},
	{
		stream: "timeout",
		want: []string{
			">>> FAIL timeout TestHangs: did not finish",
			" timeout_test.go:10: about to hang",
			"panic: test timed out after 2s",
			"FAIL timeout #s 1 did not finish",
			"Tests: 0 passed, 0 failed, 0 skipped, 1 did not finish",
			" timeout TestHangs (did not finish)",
		},
		absent:     []string{">>> FAIL timeout: its output"},
		wantFailed: true,
	},
	{
		stream: "testmain",
		want: []string{
			">>> FAIL testmain: its output outside any test",
			"setup failed: no database",
			"FAIL testmain #s failed outside any test",
		},
		wantFailed: true,
	},
	{
		stream: "notests",
		want:   []string{"--- notests (no test files)", "Packages: 0 passed, 0 failed, 1 without test files", "PASS"},
	},
	{
		stream: "bench",
		want:   []string{"ok bench #s no tests ran", "PASS"},
		absent: []string{">>>", "BenchmarkSum"},
	},
	{
		stream:    "longline",
		maxOutput: 4096,
		want: []string{
			">>> FAIL longline TestLong (#s)",
			" long_test.go:12: failed after a long line",
			"FAIL longline #s 1 failed",
		},
		wantFailed: true,
	},
	{
		stream: "all",
		want: []string{
			"ok pass #s 4 passed 1 skipped",
			"FAIL fail #s 3 failed 2 passed",
			"ok skip #s 2 passed 6 skipped",
			"FAIL panic #s 1 failed 1 passed",
			"FAIL buildfail build failed",
			"FAIL timeout #s 1 did not finish",
			"FAIL testmain #s failed outside any test",
			"--- notests (no test files)",
			"ok bench #s 1 passed",
			"Packages: 3 passed, 5 failed, 1 without test files",
			"Tests: 10 passed, 4 failed, 7 skipped, 1 did not finish",
			" 3 tests: skipped in -short mode (pass TestLong, skip TestShortA and 1 more)",
			"FAIL",
		},
		wantFailed: true,
	},
}

func TestReplay(t *testing.T) {
	t.Parallel()
	for _, tt := range replayTests {
		t.Run(tt.stream, func(t *testing.T) {
			t.Parallel()
			got, o := replay(t, stream(t, tt.stream), Config{MaxOutput: tt.maxOutput, Heartbeat: 30 * time.Second})
			checkLines(t, got, tt.want, tt.absent)
			if o.Failed != tt.wantFailed {
				t.Errorf("Failed: got %v, want %v", o.Failed, tt.wantFailed)
			}
		})
	}
}
