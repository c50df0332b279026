// Package panic has a test that panics.
package panic

import "testing"

func TestOK(t *testing.T) {}

func TestPanics(t *testing.T) {
	var m map[string]int
	m["x"] = 1
}
