package tileserver

import (
	"context"
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
	done chan struct{}
	t    *tile.Tile
	src  source
	err  error
}

// do runs fn once for key among concurrent callers. A caller whose ctx ends
// first returns ctx.Err(); fn goes on for the others. shared reports whether
// this caller joined a call another one started.
func (f *flight) do(ctx context.Context, key string, fn func() (*tile.Tile, source, error)) (t *tile.Tile, src source, shared bool, err error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[string]*call)
	}
	c, ok := f.calls[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		f.calls[key] = c
		go func() {
			c.t, c.src, c.err = fn()
			f.mu.Lock()
			delete(f.calls, key)
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
