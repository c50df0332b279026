package report

import (
	"bytes"
	"encoding/json"
	"strings"
)

// event is one line of the go test -json stream: a test event (test2json) or,
// since Go 1.24, a build event (build-output, build-fail) that names the
// package being built in ImportPath instead of Package.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string
}

// decodeEvent reports whether line is an event of the stream. Anything else
// (the go command's own messages, build errors printed as text, a line cut in
// the middle) is text the reporter passes through.
func decodeEvent(line []byte) (event, bool) {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return event{}, false
	}
	var e event
	if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
		return event{}, false
	}
	return e, true
}

// buildPackage returns the package a build event's ImportPath names, without
// the "[pkg.test]" variant suffix the go command adds for test builds.
func buildPackage(importPath string) string {
	p, _, _ := strings.Cut(importPath, " ")
	return p
}

// isFraming reports whether a line of a test's output is one the testing
// package writes around a test (=== RUN, --- FAIL: and the like, the
// package's closing PASS/FAIL/ok lines) rather than something the test or
// the code under test printed.
func isFraming(line string) bool {
	s := strings.TrimLeft(line, " \t")
	switch {
	case s == "", s == "PASS", s == "FAIL":
		return true
	case strings.HasPrefix(s, "=== "), strings.HasPrefix(s, "--- "):
		return true
	case strings.HasPrefix(line, "ok  \t"), strings.HasPrefix(line, "FAIL\t"):
		return true
	case strings.HasPrefix(line, "coverage: "), strings.HasPrefix(line, "testing: warning: no tests to run"):
		return true
	}
	return false
}
