// Package buildfail does not compile: its test has a type error.
package buildfail

import "testing"

func TestBroken(t *testing.T) {
	var x int = "not an int"
	_ = x
}
