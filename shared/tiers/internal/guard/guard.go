// Package guard closes the purge race of a cache fill: a fill that began
// before a purge of its key was applied must not put the old bytes back
// afterwards.
//
// Every purge takes the write lock, bumps the epoch, records its prefix and
// runs its removal. A fill notes the epoch when it starts (Begin) and
// inserts under the read lock (Insert) only if no purge recorded since then
// covers its key. So a fill either lands wholly before a purge (which then
// removes it) or sees the purge and drops its bytes. When more purges have
// happened than the record keeps, the fill counts as overtaken: a lost
// insert costs one refetch, a wrong one serves purged bytes.
//
// What runs under the lock is the caller's: keep it to index updates, so a
// purge (which blocks new readers while it waits) never waits for I/O.
package guard

import (
	"strings"
	"sync"
)

// Window is how many recent purges a Guard remembers.
const Window = 256

// Guard is the purge record. The zero value is ready; it is safe for
// concurrent use.
type Guard struct {
	mu     sync.RWMutex // guards epoch and recent; held for writing while a purge is applied
	epoch  uint64
	recent [Window]string // prefixes, indexed by epoch % Window
}

// Begin returns the epoch a fill starts at.
func (g *Guard) Begin() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.epoch
}

// Insert runs fn (which stores the fill) unless a purge since epoch covers
// key; it reports whether fn ran. Purges wait for fn to finish.
func (g *Guard) Insert(key string, epoch uint64, fn func()) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.overtakenLocked(key, epoch) {
		return false
	}
	fn()
	return true
}

// Overtaken reports whether a purge applied since epoch covers key (or may:
// more purges than the record keeps count as covering).
func (g *Guard) Overtaken(key string, epoch uint64) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.overtakenLocked(key, epoch)
}

func (g *Guard) overtakenLocked(key string, epoch uint64) bool {
	if g.epoch-epoch >= Window {
		return true
	}
	for e := epoch + 1; e <= g.epoch; e++ {
		if strings.HasPrefix(key, g.recent[e%Window]) {
			return true
		}
	}
	return false
}

// Purge records prefix and runs fn (which removes it from the tiers) with no
// fill inserting meanwhile.
func (g *Guard) Purge(prefix string, fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch++
	g.recent[g.epoch%Window] = prefix
	fn()
}
