package tileserver

import (
	"strings"
	"sync"
)

// guard closes the purge race: a fill that began before a purge of its key
// was applied must not put the old bytes back afterwards.
//
// Every purge takes the write lock, bumps the epoch, records its prefix and
// removes the prefix from both tiers. A fill notes the epoch when it starts
// and inserts under the read lock only if no purge recorded since then covers
// its key. So a fill either lands wholly before a purge (which then removes
// it) or sees the purge and drops its bytes. When more purges have happened
// than the record keeps, the fill is dropped: a lost insert costs one refetch,
// a wrong one serves purged bytes.
type guard struct {
	mu     sync.RWMutex // guards epoch and recent; held for writing while a purge is applied
	epoch  uint64
	recent [guardWindow]purgeRec // ring, indexed by epoch % guardWindow
}

const guardWindow = 256

type purgeRec struct {
	epoch  uint64
	prefix string
}

// begin returns the epoch a fill starts at.
func (g *guard) begin() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.epoch
}

// insert runs fn (which stores the fill) unless a purge since epoch covers
// key; it reports whether fn ran. Purges wait for fn to finish.
func (g *guard) insert(key string, epoch uint64, fn func()) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.overtakenLocked(key, epoch) {
		return false
	}
	fn()
	return true
}

// overtaken reports whether a purge applied since epoch covers key (or may:
// more purges than the record keeps count as covering).
func (g *guard) overtaken(key string, epoch uint64) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.overtakenLocked(key, epoch)
}

func (g *guard) overtakenLocked(key string, epoch uint64) bool {
	if g.epoch-epoch >= guardWindow {
		return true
	}
	for e := epoch + 1; e <= g.epoch; e++ {
		if strings.HasPrefix(key, g.recent[e%guardWindow].prefix) {
			return true
		}
	}
	return false
}

// purge records prefix and runs fn (which removes it from the tiers) with no
// fill inserting meanwhile.
func (g *guard) purge(prefix string, fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.epoch++
	g.recent[g.epoch%guardWindow] = purgeRec{epoch: g.epoch, prefix: prefix}
	fn()
}
