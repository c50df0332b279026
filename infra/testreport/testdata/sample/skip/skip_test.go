// Package skip skips for the reasons a report must show.
package skip

import "testing"

func TestNeedsChromium(t *testing.T) {
	t.Log("looking for chromium")
	t.Skip("chromium not found (apt-get install chromium)")
}

func TestShortA(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
}

func TestShortB(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
}

func TestSubSkip(t *testing.T) {
	t.Run("runs", func(t *testing.T) {})
	t.Run("skips", func(t *testing.T) { t.Skipf("no %s here", "sqlite3") })
	t.Run("multi", func(t *testing.T) { t.Skip("first line\nsecond line") })
}

func TestSkipNow(t *testing.T) { t.SkipNow() }
