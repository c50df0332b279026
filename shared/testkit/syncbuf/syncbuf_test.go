package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: every write lands whole, under -race too.
func TestConcurrentWrites(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := b.Write([]byte("line\n")); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got, want := strings.Count(b.String(), "line\n"), 800; got != want {
		t.Errorf("got %v lines, want %v", got, want)
	}
	if got, want := len(b.Bytes()), 800*len("line\n"); got != want {
		t.Errorf("got %v bytes, want %v", got, want)
	}
}
