// Package setupfail imports a package that does not exist.
package setupfail

import (
	"testing"

	_ "example.com/sample/doesnotexist"
)

func TestX(t *testing.T) {}
