package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// pkgRun is a package whose test binary is running (or whose build is being
// reported): its tests in flight and what it printed outside them.
type pkgRun struct {
	path    string
	name    string // path relative to the module, as the report shows it
	ended   bool   // it had its result
	started time.Time
	tests   map[string]*tail // running tests by name, with their output
	output  tail             // output outside any test
	passed  int
	failed  int
	skipped int
	// parents holds the tests with a failed subtest: their own output is
	// only framing, so it is shown only when they printed something.
	parents map[string]bool
}

func (r *Reporter) handle(e event) {
	r.sum.sawEvent = true
	switch e.Action {
	case "build-output":
		// The go command prints an action's build output at once, so
		// writing it through keeps it whole and shows it without delay.
		r.text([]byte(e.Output))
		return
	case "build-fail":
		r.sum.addBuild(r.name(buildPackage(e.ImportPath)))
		return
	case "start":
		r.startPkg(e.Package)
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		r.pkgEvent(p, e)
		return
	}
	r.testEvent(p, e)
}

// startPkg begins a run; a package started again (a second go test run in
// one stream) starts afresh.
func (r *Reporter) startPkg(path string) {
	r.newPkg(path)
}

// pkg returns the running package, starting one for a stream that begins
// after its start event.
func (r *Reporter) pkg(path string) *pkgRun {
	if p := r.running.get(path); p != nil {
		return p
	}
	return r.newPkg(path)
}

func (r *Reporter) newPkg(path string) *pkgRun {
	p := &pkgRun{
		path:    path,
		name:    r.name(path),
		started: r.cfg.Now(),
		tests:   make(map[string]*tail),
		output:  tail{max: r.cfg.MaxOutput},
		parents: make(map[string]bool),
	}
	r.widen(p.name)
	r.running.add(p)
	return p
}

func (r *Reporter) pkgEvent(p *pkgRun, e event) {
	switch e.Action {
	case "output":
		p.output.write(e.Output)
	case "pass", "fail", "skip":
		r.running.remove(p)
		r.endPkg(p, e)
	}
}

func (r *Reporter) testEvent(p *pkgRun, e event) {
	switch e.Action {
	case "run":
		p.tests[e.Test] = &tail{max: r.cfg.MaxOutput}
	case "output":
		if t, ok := p.tests[e.Test]; ok {
			t.write(e.Output)
		} else {
			p.output.write(e.Output) // after its end, e.g. from a goroutine it left
		}
	case "pass":
		p.passed++
		delete(p.tests, e.Test)
	case "skip":
		p.skipped++
		var lines []string
		if t, ok := p.tests[e.Test]; ok {
			lines = t.lines()
		}
		r.sum.addSkip(skipReason(lines), p.name+" "+e.Test)
		delete(p.tests, e.Test)
	case "fail":
		r.testFailed(p, e)
	case "bench":
		delete(p.tests, e.Test)
	}
}

func (r *Reporter) testFailed(p *pkgRun, e event) {
	p.failed++
	t := p.tests[e.Test]
	delete(p.tests, e.Test)
	for name := e.Test; ; {
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			break
		}
		name = name[:i]
		p.parents[name] = true
	}
	if t == nil {
		t = &tail{}
	}
	if p.parents[e.Test] && !t.hasOwnOutput() {
		return // its failed subtests were shown and are listed
	}
	r.sum.addFailure(p.name + " " + e.Test)
	r.block(fmt.Sprintf("%s %s (%.2fs)", p.name, e.Test, e.Elapsed), t)
}

// endPkg prints what a finished package leaves to say: for a failure the
// output not shown yet, then the package's line.
func (r *Reporter) endPkg(p *pkgRun, e event) {
	switch e.Action {
	case "skip":
		r.sum.pkgNoTests++
		r.pkgLine(statusNone, p.name, "", "(no test files)")
		return
	case "pass":
		r.sum.pkgPassed++
		r.sum.addTests(p)
		r.sum.addTime(p.name, e.Elapsed)
		r.pkgLine(statusOK, p.name, seconds(e.Elapsed), counts(p, 0))
		return
	}
	r.sum.pkgFailed++
	r.sum.addTests(p)
	r.sum.addTime(p.name, e.Elapsed)
	if e.FailedBuild != "" || p.output.buildFailed() {
		detail := "build failed"
		if b := r.name(buildPackage(e.FailedBuild)); e.FailedBuild != "" && b != p.name {
			detail += ": " + b
		}
		r.pkgLine(statusFail, p.name, "", detail)
		return
	}
	left := r.leftTests(p, "did not finish")
	if p.failed == 0 && left == 0 || p.output.hasOwnOutput() {
		r.block(p.name+": its output outside any test", &p.output)
	}
	detail := counts(p, left)
	if p.failed == 0 && left == 0 {
		detail = "failed outside any test"
		if p.passed+p.skipped > 0 {
			detail += "; " + counts(p, 0)
		}
	}
	r.pkgLine(statusFail, p.name, seconds(e.Elapsed), detail)
}

// unfinished reports a package the stream left without a result.
func (r *Reporter) unfinished(p *pkgRun) {
	r.sum.pkgUnfinished++
	r.sum.unfinished = appendCapped(r.sum.unfinished, p.name, &r.sum.unfinishedDropped)
	r.sum.addTests(p)
	left := r.leftTests(p, "no result, the stream ended")
	if p.output.hasOwnOutput() {
		r.block(p.name+": its output outside any test", &p.output)
	}
	r.pkgLine(statusFail, p.name, "", "no result, the stream ended; "+counts(p, left))
}

// leftTests shows the tests of a failed or cut-off package that have no
// result: the output of those that printed something, the names of the
// rest. It returns how many there were.
func (r *Reporter) leftTests(p *pkgRun, why string) int {
	names := make([]string, 0, len(p.tests))
	for name := range p.tests {
		names = append(names, name)
	}
	slices.Sort(names)
	var quiet []string
	for _, name := range names {
		t := p.tests[name]
		if !t.hasOwnOutput() {
			quiet = append(quiet, name)
			continue
		}
		r.sum.addFailure(p.name + " " + name + " (" + why + ")")
		r.block(fmt.Sprintf("%s %s: %s", p.name, name, why), t)
	}
	if len(quiet) > 0 {
		r.printf(">>> %s %s, with no output of their own: %s\n", r.fail("FAIL"), why, strings.Join(quiet, ", "))
	}
	r.sum.unfinishedTests += len(names)
	p.tests = make(map[string]*tail)
	return len(names)
}

// block prints a failure's output under a header.
func (r *Reporter) block(header string, t *tail) {
	r.printf(">>> %s %s\n", r.fail("FAIL"), header)
	if t.cut > 0 {
		r.printf(">>> (its first %d bytes are cut: the report keeps the last %d)\n", t.cut, t.max)
	}
	if len(t.buf) == 0 {
		return
	}
	r.write(t.buf)
	if t.buf[len(t.buf)-1] != '\n' {
		r.printf("\n")
	}
}

// counts says how many tests passed, failed and skipped, failures first.
func counts(p *pkgRun, left int) string {
	var parts []string
	if p.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", p.failed))
	}
	if left > 0 {
		parts = append(parts, fmt.Sprintf("%d did not finish", left))
	}
	if p.passed > 0 {
		parts = append(parts, fmt.Sprintf("%d passed", p.passed))
	}
	if p.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", p.skipped))
	}
	if len(parts) == 0 {
		return "no tests ran"
	}
	return strings.Join(parts, "  ")
}
