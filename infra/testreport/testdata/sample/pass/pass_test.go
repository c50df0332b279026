// Package pass passes: a test that logs, parallel subtests, and a test
// skipped in -short mode.
package pass

import "testing"

func TestOne(t *testing.T) { t.Log("hello") }

func TestTable(t *testing.T) {
	for _, n := range []string{"a", "b"} {
		t.Run(n, func(t *testing.T) { t.Parallel() })
	}
}

func TestLong(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
}
