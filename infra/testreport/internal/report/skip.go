package report

import (
	"strings"
	"unicode/utf8"
)

// maxReason bounds a skip reason in the summary; the JSON copy has it whole.
const maxReason = 240

// skipReason returns why a test skipped, from its output before the
// --- SKIP line: the last non-empty line, without the file:line prefix
// t.Skip adds. A t.Skip message of several lines is joined into one: its
// later lines are indented past the first, which carries the prefix.
func skipReason(lines []string) string {
	last := len(lines) - 1
	for last >= 0 && isFraming(lines[last]) {
		last--
	}
	if last < 0 {
		return ""
	}
	if msg, ok := logMessage(lines[last]); ok {
		return clip(msg)
	}
	if indent(lines[last]) >= 8 {
		if r, ok := joinContinued(lines[:last+1]); ok {
			return clip(r)
		}
	}
	return clip(strings.TrimSpace(lines[last]))
}

// joinContinued joins a message whose last line ends lines and whose first
// line, a few lines up and indented less than the rest, has a file:line prefix.
func joinContinued(lines []string) (string, bool) {
	const maxLines = 50
	i := len(lines) - 1
	for ; i >= 0 && len(lines)-i <= maxLines; i-- {
		l := lines[i]
		if msg, ok := logMessage(l); ok && indent(l) < 8 {
			parts := []string{msg}
			for _, c := range lines[i+1:] {
				if c = strings.TrimSpace(c); c != "" {
					parts = append(parts, c)
				}
			}
			return strings.Join(parts, " "), true
		}
		if strings.TrimSpace(l) != "" && indent(l) < 8 {
			return "", false
		}
	}
	return "", false
}

// logMessage splits a line written by t.Log, t.Skip and the like
// ("    name_test.go:12: message") and returns the message.
func logMessage(line string) (string, bool) {
	s := strings.TrimLeft(line, " \t")
	loc, msg, ok := strings.Cut(s, ": ")
	if !ok {
		loc, ok = strings.CutSuffix(s, ":")
		if !ok {
			return "", false
		}
	}
	file, num, ok := cutLast(loc, ':')
	if !ok || !strings.HasSuffix(file, ".go") || strings.ContainsAny(file, " \t") || !allDigits(num) {
		return "", false
	}
	return strings.TrimSpace(msg), true
}

func cutLast(s string, sep byte) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// indent counts a line's leading spaces, a tab counting as eight.
func indent(line string) int {
	n := 0
	for _, c := range line {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 8
		default:
			return n
		}
	}
	return n
}

// clip shortens s to maxReason bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
