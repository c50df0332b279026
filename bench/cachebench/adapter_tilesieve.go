package cachebench

import (
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// tilesieveCache drives shared/tiers/memory. It charges cache.EntryOverhead per entry
// on top of len(key)+len(body); the peers are not charged it, which makes
// tilesieve hold slightly fewer bytes of tiles at the same budget.
type tilesieveCache struct{ c *memory.Cache }

// TilesieveOverhead is the per-entry charge of shared/tiers/memory beyond key and body.
const TilesieveOverhead = memory.EntryOverhead

func newTilesieve(maxBytes int64, _ float64) (Cache, error) {
	c, err := memory.New(memory.Config{MaxBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	return &tilesieveCache{c}, nil
}

func (s *tilesieveCache) Get(key string) (*tile.Tile, bool)          { return s.c.Get(key) }
func (s *tilesieveCache) Set(key string, t *tile.Tile, _ int64) bool { return s.c.Set(key, t) }
func (s *tilesieveCache) Delete(key string) bool                     { return s.c.Delete(key) }
func (s *tilesieveCache) DeletePrefix(prefix string) int {
	n, _ := s.c.DeletePrefix(prefix)
	return n
}
func (s *tilesieveCache) Sync()  {}
func (s *tilesieveCache) Close() {}

// TilesieveStats exposes the memory tier's counters for the bound check.
func TilesieveStats(c Cache) (bytes, maxBytes, entries int64, ok bool) {
	s, ok := c.(*tilesieveCache)
	if !ok {
		return 0, 0, 0, false
	}
	st := s.c.Stats()
	return st.Bytes, st.MaxBytes, st.Entries, true
}
