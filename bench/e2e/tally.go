package e2e

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// tally counts the answers of a load run: the ones it wants, and the
// others with the first of them (an error or an unexpected status).
type tally struct {
	ok, other atomic.Int64
	first     atomic.Value // string
}

// miss counts an unwanted answer, what.
func (t *tally) miss(what string) {
	t.other.Add(1)
	t.first.CompareAndSwap(nil, what)
}

// expect GETs url and counts the answer: wanted when its status is want.
// An error after ctx ended is the run stopping, not an answer.
func (t *tally) expect(ctx context.Context, client *http.Client, url string, want int) {
	resp, err := client.Get(url)
	if err != nil {
		if ctx.Err() == nil {
			t.miss(err.Error())
		}
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == want {
		t.ok.Add(1)
	} else {
		t.miss(resp.Status)
	}
}

// note is label and the first unwanted answer, or "" when there was none.
func (t *tally) note(label string) string {
	if e, ok := t.first.Load().(string); ok {
		return label + e
	}
	return ""
}

// inRounds runs fn from clients goroutines at once (i is the goroutine's
// number), rounds times, one round after the other, until ctx ends.
func inRounds(ctx context.Context, rounds, clients int, fn func(i int)) error {
	for range rounds {
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() { fn(i) })
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
