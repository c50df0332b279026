package tiers

import (
	"context"

	"github.com/tilesieve/tilesieve/shared/tiers/memory"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// Derived answers an entry derived from a tile (its decoded variant, for a
// client without its coding), kept in the memory tier under dkey: a key
// inside the tile's own prefix, so that every purge of the tile removes it.
// A kept entry is answered while same reports it was derived from the
// version at hand; else derive runs once for the concurrent callers of that
// version (merged by version, as fills are merged by key: a new version
// never waits for the derivation of an old one), and what it returns is kept
// unless a purge of dkey was applied since the call began (the purge guard,
// as for fills). keep is tried first, and fallback (if any) when the memory
// tier refuses keep. derive must be bounded work: callers wait for it
// whatever their deadline. Derived returns nil when derive panicked.
func (e *Engine) Derived(dkey, version string, same func(kept *tile.Tile) bool, derive func() (keep, fallback *tile.Tile)) *tile.Tile {
	if kt, ok := e.mem.Get(dkey); ok && same(kt) {
		return kt
	}
	t, _, err := e.derived.Do(context.Background(), dkey+"\x00"+version, e.guard.Begin(), e.guard.Overtaken,
		func(_ context.Context, epoch uint64) (*tile.Tile, error) {
			// One that ended between the lookup above and this call kept
			// its entry before it left the group: look again.
			if kt, ok := e.mem.Get(dkey); ok && same(kt) {
				return kt, nil
			}
			keep, fallback := derive()
			// On the heap: Derived hands the kept entry out with no lease.
			e.guard.Insert(dkey, epoch, func() {
				if !e.mem.SetHeap(dkey, keep) && fallback != nil {
					e.mem.SetHeap(dkey, fallback)
				}
			})
			return keep, nil
		})
	if err != nil {
		return nil // derive panicked (flight.ErrPanic)
	}
	return t
}

// Room is the most an entry under key may hold in the memory tier beside
// its own bookkeeping: the tier's bound on one entry less the key's bytes
// and the entry's overhead.
func (e *Engine) Room(key string) int64 {
	return e.mem.MaxEntry() - int64(len(key)) - memory.EntryOverhead
}
