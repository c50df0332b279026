// Package longline fails after printing a line longer than test2json's
// output events.
package longline

import (
	"strings"
	"testing"
)

func TestLong(t *testing.T) {
	t.Log(strings.Repeat("x", 20000))
	t.Error("failed after a long line")
}
