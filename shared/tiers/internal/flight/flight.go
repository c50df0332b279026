// Package flight merges concurrent fetches of one key into one call
// (groupcache's singleflight), with waiters that can give up on their own
// deadline: when the last waiter of a call gives up, the call's context is
// cancelled, so a hung origin does not keep sockets and bytes for nobody.
//
// A call carries the purge epoch it started at (see the guard package): a
// caller never joins a call a purge of its key has overtaken, since its
// bytes may be what the purge removed.
package flight

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrPanic marks a call whose function panicked.
var ErrPanic = errors.New("flight: call panicked")

// Group runs calls of values of type T. The zero value is ready; it is
// safe for concurrent use.
type Group[T any] struct {
	mu    sync.Mutex // guards calls and every call's waiters
	calls map[string]*call[T]
}

type call[T any] struct {
	epoch   uint64 // epoch the call started at
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int // callers still waiting; guarded by Group.mu
	v       T
	err     error
}

// Do runs fn once for key among concurrent callers; epoch is the purge
// epoch now, and fn is given the context and the epoch its call runs at.
// fn's context is detached from any one caller (others may wait) and is
// cancelled when every caller has given up.
//
// A caller joins a call in flight unless overtaken reports that a purge of
// key was applied since that call started: then it starts a call of its
// own, which later callers join instead. A caller whose ctx ends first
// returns ctx.Err(). shared reports whether this caller joined a call
// another one started. A panic in fn is returned to every waiter as an
// error wrapping ErrPanic.
func (g *Group[T]) Do(ctx context.Context, key string, epoch uint64, overtaken func(key string, epoch uint64) bool,
	fn func(ctx context.Context, epoch uint64) (T, error)) (v T, shared bool, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = make(map[string]*call[T])
	}
	c, ok := g.calls[key]
	if ok && overtaken(key, c.epoch) {
		ok = false
	}
	if !ok {
		cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call[T]{epoch: epoch, done: make(chan struct{}), cancel: cancel}
		g.calls[key] = c
		go g.run(cctx, key, c, fn)
	}
	c.waiters++
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.v, ok, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.waiters--
		if c.waiters == 0 {
			c.cancel()
			g.forget(key, c)
		}
		g.mu.Unlock()
		var zero T
		return zero, ok, ctx.Err()
	}
}

func (g *Group[T]) run(ctx context.Context, key string, c *call[T], fn func(context.Context, uint64) (T, error)) {
	defer func() {
		// A panic in a call must not take the process down: its callers
		// get an error, and the next caller runs the call again.
		if p := recover(); p != nil {
			var zero T
			c.v, c.err = zero, fmt.Errorf("%w: call of %q: %v", ErrPanic, key, p)
		}
		g.mu.Lock()
		g.forget(key, c)
		g.mu.Unlock()
		c.cancel()
		close(c.done)
	}()
	c.v, c.err = fn(ctx, c.epoch)
}

// forget removes c from the calls if it is still there. g.mu is held.
func (g *Group[T]) forget(key string, c *call[T]) {
	if g.calls[key] == c {
		delete(g.calls, key)
	}
}
