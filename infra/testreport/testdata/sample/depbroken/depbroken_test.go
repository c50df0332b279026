// Package depbroken imports a package that does not compile.
package depbroken

import (
	"testing"

	"example.com/sample/broken"
)

func TestX(t *testing.T) { _ = broken.F() }
