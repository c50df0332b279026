// Package fail fails: a test with output and a failed subtest.
package fail

import "testing"

func TestFails(t *testing.T) {
	t.Log("before the failure")
	t.Errorf("got %d, want %d", 1, 2)
}

func TestSub(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("bad", func(t *testing.T) { t.Fatal("sub failed") })
}

func TestPasses(t *testing.T) {}
