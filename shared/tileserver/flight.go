package tileserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// flight merges concurrent fetches of one key into one origin request
// (groupcache's singleflight), with waiters that can give up on their own
// deadline: when the last waiter of a fetch gives up, the fetch is
// cancelled, so an S3 hang does not keep sockets and bytes for nobody.
type flight struct {
	mu    sync.Mutex // guards calls and every call's waiters
	calls map[string]*call
}

type call struct {
	epoch   uint64 // guard epoch the fetch started at
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int // callers still waiting; guarded by flight.mu
	t       *tile.Tile
	src     source
	err     error
}

// do runs fn once for key among concurrent callers; epoch is the guard
// epoch now, and fn is given the context and the epoch its fetch runs at.
// fn's context is detached from any one caller (others may wait) and is
// cancelled when every caller has given up.
//
// A caller joins a call in flight unless overtaken reports that a purge of
// key was applied since that call started: then it starts a fetch of its
// own, which later callers join instead. A caller whose ctx ends first
// returns ctx.Err(). shared reports whether this caller joined a call
// another one started.
func (f *flight) do(ctx context.Context, key string, epoch uint64, overtaken func(key string, epoch uint64) bool,
	fn func(ctx context.Context, epoch uint64) (*tile.Tile, source, error)) (t *tile.Tile, src source, shared bool, err error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[string]*call)
	}
	c, ok := f.calls[key]
	if ok && overtaken(key, c.epoch) {
		ok = false
	}
	if !ok {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call{epoch: epoch, done: make(chan struct{}), cancel: cancel}
		f.calls[key] = c
		go f.run(fctx, key, c, fn)
	}
	c.waiters++
	f.mu.Unlock()
	select {
	case <-c.done:
		return c.t, c.src, ok, c.err
	case <-ctx.Done():
		f.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			c.cancel()
			f.forget(key, c)
		}
		f.mu.Unlock()
		return nil, 0, ok, ctx.Err()
	}
}

func (f *flight) run(ctx context.Context, key string, c *call, fn func(context.Context, uint64) (*tile.Tile, source, error)) {
	defer func() {
		// A panic in a fetch must not take the process down: its callers
		// answer 500, and the next request fetches again.
		if p := recover(); p != nil {
			c.t, c.src, c.err = nil, 0, fmt.Errorf("%w: fetch of %q panicked: %v", errPanic, key, p)
		}
		f.mu.Lock()
		f.forget(key, c)
		f.mu.Unlock()
		c.cancel()
		close(c.done)
	}()
	c.t, c.src, c.err = fn(ctx, c.epoch)
}

// forget removes c from the calls if it is still there. f.mu is held.
func (f *flight) forget(key string, c *call) {
	if f.calls[key] == c {
		delete(f.calls, key)
	}
}
