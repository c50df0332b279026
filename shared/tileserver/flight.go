package tileserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// flight merges concurrent fetches of one key into one origin request
// (groupcache's singleflight, with waiters that can give up on their own
// deadline without cancelling the fetch for the others).
type flight struct {
	mu    sync.Mutex // guards calls
	calls map[string]*call
}

type call struct {
	epoch uint64 // guard epoch the fetch started at
	done  chan struct{}
	t     *tile.Tile
	src   source
	err   error
}

// do runs fn once for key among concurrent callers; epoch is the guard
// epoch now, and fn is given the epoch its fetch starts at. A caller joins
// a call in flight unless overtaken reports that a purge of key was applied
// since that call started: then it starts a fetch of its own, which later
// callers join instead. A caller whose ctx ends first returns ctx.Err(); fn
// goes on for the others. shared reports whether this caller joined a call
// another one started.
func (f *flight) do(ctx context.Context, key string, epoch uint64, overtaken func(key string, epoch uint64) bool,
	fn func(epoch uint64) (*tile.Tile, source, error)) (t *tile.Tile, src source, shared bool, err error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[string]*call)
	}
	c, ok := f.calls[key]
	if ok && overtaken(key, c.epoch) {
		ok = false
	}
	if !ok {
		c = &call{epoch: epoch, done: make(chan struct{})}
		f.calls[key] = c
		go func() {
			defer func() {
				// A panic in a fetch must not take the process down: its
				// callers answer 500, and the next request fetches again.
				if p := recover(); p != nil {
					c.t, c.src, c.err = nil, 0, fmt.Errorf("%w: fetch of %q panicked: %v", errPanic, key, p)
					f.mu.Lock()
					if f.calls[key] == c {
						delete(f.calls, key)
					}
					f.mu.Unlock()
					close(c.done)
				}
			}()
			c.t, c.src, c.err = fn(c.epoch)
			f.mu.Lock()
			if f.calls[key] == c {
				delete(f.calls, key)
			}
			f.mu.Unlock()
			close(c.done)
		}()
	}
	f.mu.Unlock()
	select {
	case <-c.done:
		return c.t, c.src, ok, c.err
	case <-ctx.Done():
		return nil, 0, ok, ctx.Err()
	}
}
