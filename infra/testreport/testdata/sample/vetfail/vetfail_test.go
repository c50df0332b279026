// Package vetfail compiles but fails go vet's printf check.
package vetfail

import (
	"fmt"
	"testing"
)

func TestVet(t *testing.T) {
	_ = fmt.Sprintf("%d", "string")
}
