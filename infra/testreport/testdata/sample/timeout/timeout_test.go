// Package timeout hangs until go test's -timeout ends it.
package timeout

import (
	"testing"
	"time"
)

func TestHangs(t *testing.T) {
	t.Log("about to hang")
	time.Sleep(time.Hour)
}
