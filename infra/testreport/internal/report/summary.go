package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds on what the summary keeps; past them it counts.
const (
	maxNames   = 1000 // failed tests, failed builds, packages without a result
	maxReasons = 500  // distinct skip reasons
	maxExample = 2    // test names shown beside a shared skip reason
)

// summary accumulates what the end of the report says.
type summary struct {
	sawEvent                         bool
	pkgPassed, pkgFailed, pkgNoTests int
	pkgUnfinished                    int
	passed, failed, skipped          int
	unfinishedTests                  int
	slowest                          []pkgTime
	slowestMax                       int
	skips                            map[string]*skipGroup
	skipsDropped                     int // skipped tests whose reason was past maxReasons
	failures, builds, unfinished     []string
	failuresDropped, buildsDropped   int
	unfinishedDropped                int
}

type pkgTime struct {
	name    string
	elapsed float64
}

type skipGroup struct {
	reason string
	count  int
	tests  []string // the first maxExample
}

func newSummary(slowest int) summary {
	return summary{skips: make(map[string]*skipGroup), slowestMax: slowest}
}

func (s *summary) anyFailure() bool {
	return s.pkgFailed > 0 || s.failed > 0 || len(s.builds) > 0 || s.buildsDropped > 0 || s.pkgUnfinished > 0
}

func (s *summary) packages() int { return s.pkgPassed + s.pkgFailed + s.pkgNoTests }

func (s *summary) addTests(p *pkgRun) {
	s.passed += p.passed
	s.failed += p.failed
	s.skipped += p.skipped
}

func (s *summary) addTime(name string, elapsed float64) {
	s.slowest = append(s.slowest, pkgTime{name, elapsed})
	slices.SortStableFunc(s.slowest, func(a, b pkgTime) int { return cmp.Compare(b.elapsed, a.elapsed) })
	if len(s.slowest) > s.slowestMax {
		s.slowest = s.slowest[:s.slowestMax]
	}
}

func (s *summary) addSkip(reason, test string) {
	if reason == "" {
		reason = "(no reason given)"
	}
	g, ok := s.skips[reason]
	if !ok {
		if len(s.skips) >= maxReasons {
			s.skipsDropped++
			return
		}
		g = &skipGroup{reason: reason}
		s.skips[reason] = g
	}
	g.count++
	if len(g.tests) < maxExample {
		g.tests = append(g.tests, test)
	}
}

func (s *summary) addFailure(test string) {
	s.failures = appendCapped(s.failures, test, &s.failuresDropped)
}

func (s *summary) addBuild(pkg string) {
	if !slices.Contains(s.builds, pkg) {
		s.builds = appendCapped(s.builds, pkg, &s.buildsDropped)
	}
}

func appendCapped(list []string, s string, dropped *int) []string {
	if len(list) >= maxNames {
		*dropped++
		return list
	}
	return append(list, s)
}

// printSummary prints the end of the report.
func (r *Reporter) printSummary(wall time.Duration) {
	s := &r.sum
	r.printf("\n")
	if !s.sawEvent {
		r.printf("No test events in the input (was go test run with -json?).\n")
	}
	r.printf("Packages: %d passed, %d failed, %d without test files", s.pkgPassed, s.pkgFailed, s.pkgNoTests)
	if s.pkgUnfinished > 0 {
		r.printf(", %d without a result", s.pkgUnfinished)
	}
	r.printf("\nTests:    %d passed, %d failed, %d skipped", s.passed, s.failed, s.skipped)
	if s.unfinishedTests > 0 {
		r.printf(", %d did not finish", s.unfinishedTests)
	}
	r.printf("\nTime:     %s\n", clock(wall))
	if len(s.slowest) > 0 {
		r.printf("Slowest packages:\n")
		for _, p := range s.slowest {
			r.printf("  %7s  %s\n", seconds(p.elapsed), p.name)
		}
	}
	r.printSkips()
	r.printList("Failed tests", s.failures, s.failuresDropped)
	r.printList("Failed builds", s.builds, s.buildsDropped)
	r.printList("Packages without a result (the stream ended while they ran)", s.unfinished, s.unfinishedDropped)
	if s.anyFailure() {
		r.printf("%s\n", r.fail("FAIL"))
	} else {
		r.printf("%s\n", r.paint(ansiGreen, "PASS"))
	}
}

// printSkips prints every skip reason once, the most common first: a reason
// of one test with its name, a shared one with a count and an example or two.
func (r *Reporter) printSkips() {
	s := &r.sum
	if s.skipped == 0 && len(s.skips) == 0 {
		return
	}
	groups := make([]*skipGroup, 0, len(s.skips))
	for _, g := range s.skips {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b *skipGroup) int {
		return cmp.Or(cmp.Compare(b.count, a.count), strings.Compare(a.reason, b.reason))
	})
	r.printf("%s:\n", r.paint(ansiYellow, fmt.Sprintf("Skipped tests (%d)", s.skipped)))
	for _, g := range groups {
		if g.count == 1 {
			r.printf("  %s: %s\n", g.tests[0], g.reason)
			continue
		}
		more := ""
		if n := g.count - len(g.tests); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		r.printf("  %d tests: %s (%s%s)\n", g.count, g.reason, strings.Join(g.tests, ", "), more)
	}
	if s.skipsDropped > 0 {
		r.printf("  %d more tests, skipped for other reasons\n", s.skipsDropped)
	}
}

func (r *Reporter) printList(title string, names []string, dropped int) {
	if len(names) == 0 && dropped == 0 {
		return
	}
	r.printf("%s (%d):\n", r.fail(title), len(names)+dropped)
	for _, n := range names {
		r.printf("  %s\n", n)
	}
	if dropped > 0 {
		r.printf("  and %d more\n", dropped)
	}
}
