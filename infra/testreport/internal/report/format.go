package report

import (
	"fmt"
	"strings"
	"time"
)

// The package column is minWidth wide, room for most module-relative
// paths, so lines stay aligned although names arrive one by one; a longer
// name widens it, up to maxWidth, from its line on.
const (
	minWidth = 36
	maxWidth = 60
)

// Status words of the package lines, padded to one width.
const (
	statusOK   = "ok"
	statusFail = "FAIL"
	statusNone = "---"
)

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

func (r *Reporter) paint(color, s string) string {
	if !r.cfg.Color {
		return s
	}
	return color + s + ansiReset
}

func (r *Reporter) fail(s string) string { return r.paint(ansiRed, s) }

// name returns an import path relative to the module, as the report shows it.
func (r *Reporter) name(path string) string {
	if m := r.cfg.Module; m != "" {
		if rest, ok := strings.CutPrefix(path, m+"/"); ok && rest != "" {
			return rest
		}
	}
	return path
}

func (r *Reporter) widen(name string) {
	if n := len(name); n > r.width {
		r.width = min(n, maxWidth)
	}
}

// pkgLine prints "ok   shared/cache   4.2s  57 passed  1 skipped".
func (r *Reporter) pkgLine(status, name, elapsed, detail string) {
	r.widen(name)
	word := fmt.Sprintf("%-4s", status)
	switch status {
	case statusOK:
		word = r.paint(ansiGreen, status) + word[len(status):]
	case statusFail:
		word = r.fail(status)
	}
	r.printf("%s %-*s %7s  %s\n", word, r.width, name, elapsed, detail)
}

// seconds formats a package's elapsed time as go test does, to a tenth.
func seconds(s float64) string { return fmt.Sprintf("%.1fs", s) }

// clock formats a duration as 40s, 2m05s or 1h02m05s.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm%02ds", s/3600, s/60%60, s%60)
}

// maxListed bounds the running packages a heartbeat names.
const maxListed = 4

// heartbeat prints "12m30s  41/69 done; running: functions/tiles (2m05s)".
func (r *Reporter) heartbeat(now time.Time) {
	var b strings.Builder
	b.WriteString(clock(now.Sub(r.start)))
	done := r.sum.packages()
	running := r.running.all()
	seen := done + len(running)
	if seen == 0 {
		b.WriteString("  building: no package has started yet")
		r.printf("%s\n", b.String())
		return
	}
	fmt.Fprintf(&b, "  %d/%d done", done, seen)
	if n := r.sum.pkgFailed; n > 0 {
		fmt.Fprintf(&b, " (%s)", r.fail(fmt.Sprintf("%d failed", n)))
	}
	if len(running) == 0 {
		b.WriteString("; building the next")
		r.printf("%s\n", b.String())
		return
	}
	b.WriteString("; running: ")
	for i, p := range running {
		if i == maxListed {
			fmt.Fprintf(&b, ", and %d more", len(running)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", p.name, clock(now.Sub(p.started)))
	}
	r.printf("%s\n", b.String())
}
