package report

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// tail keeps the last max bytes written to it, cut at a line start where
// it can be, and counts what it dropped, so a test that prints without end
// costs a bounded amount of memory.
type tail struct {
	buf []byte
	cut int64 // bytes dropped from the front
	max int
}

func (t *tail) write(s string) {
	if t.max <= 0 {
		t.cut += int64(len(s))
		return
	}
	if len(s) > t.max {
		t.cut += int64(len(t.buf) + len(s) - t.max)
		t.buf = append(t.buf[:0], s[len(s)-t.max:]...)
		t.trimToBoundary()
		return
	}
	t.buf = append(t.buf, s...)
	if over := len(t.buf) - t.max; over > 0 {
		t.cut += int64(over)
		// Reslicing keeps the array; append copies only the live part when
		// it next grows, so the array stays under twice max.
		t.buf = t.buf[over:]
		t.trimToBoundary()
	}
}

// trimToBoundary drops the partial line (or, for one very long line, the
// partial UTF-8 sequence) left at the front by a cut.
func (t *tail) trimToBoundary() {
	if i := bytes.IndexByte(t.buf, '\n'); i >= 0 && i+1 < len(t.buf) {
		t.cut += int64(i + 1)
		t.buf = t.buf[i+1:]
		return
	}
	n := 0
	for n < len(t.buf) && n < utf8.UTFMax && !utf8.RuneStart(t.buf[n]) {
		n++
	}
	t.cut += int64(n)
	t.buf = t.buf[n:]
}

func (t *tail) String() string { return string(t.buf) }

// lines returns the kept output split into lines, without newlines.
func (t *tail) lines() []string {
	s := strings.TrimSuffix(string(t.buf), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// hasOwnOutput reports whether the kept output holds a line other than the
// testing package's framing.
func (t *tail) hasOwnOutput() bool {
	for _, l := range t.lines() {
		if !isFraming(l) {
			return true
		}
	}
	return false
}

// buildFailed reports whether a package's output ends in the go command's
// line for a package it could not build, "FAIL\tpath [build failed]" (or
// [setup failed]): streams from before Go 1.24, or with
// GODEBUG=gotestjsonbuildtext=1, carry no FailedBuild field.
func (t *tail) buildFailed() bool {
	for _, l := range t.lines() {
		if strings.HasPrefix(l, "FAIL\t") && (strings.HasSuffix(l, " [build failed]") || strings.HasSuffix(l, " [setup failed]")) {
			return true
		}
	}
	return false
}
