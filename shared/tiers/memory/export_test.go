package memory

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/tiers/internal/radix"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// queue returns the keys from the oldest (tail) to the newest (head), their
// visited bits, and the key under the hand ("" and false when it is unset).
func (c *Cache) queue() (keys []string, visited []bool, hand string, handSet bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := range c.sieve.All() {
		keys = append(keys, radix.NodeOf(e).Key())
		visited = append(visited, e.meta.Load()&visitedBit != 0)
	}
	if h := c.sieve.Hand(); h != nil {
		return keys, visited, radix.NodeOf(h).Key(), true
	}
	return keys, visited, "", false
}

// peek reads key through the index like Get, without touching the visited
// bit or the counters, so checks do not steer eviction.
func (c *Cache) peek(key string) (*tile.Tile, bool) {
	h, s := c.hash(key)
	if n := s.tab.Load().find(key, h); n != nil {
		if t := n.Value().tile.Load(); t != nil {
			return t, true
		}
	}
	return nil, false
}

// check verifies that the queue, the tree, the index and the counters agree
// and that the byte bound holds.
func (c *Cache) check() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int
	var bytes int64
	handSeen := c.sieve.Hand() == nil
	var prev *entry
	for e := range c.sieve.All() {
		x := radix.NodeOf(e)
		if older, _ := c.sieve.Neighbours(e); older != prev {
			return fmt.Errorf("queue: %q has a wrong older link", x.Key())
		}
		prev = e
		if e == c.sieve.Hand() {
			handSeen = true
		}
		t := e.tile.Load()
		if t == nil {
			return fmt.Errorf("queue: %q has no tile", x.Key())
		}
		if c.tree.Find(x.Key()) != x {
			return fmt.Errorf("tree: %q missing or another node", x.Key())
		}
		h, s := c.hash(x.Key())
		if s.tab.Load().find(x.Key(), h) != x {
			return fmt.Errorf("index: %q missing or another node", x.Key())
		}
		n++
		if h, _ := c.hash(x.Key()); e.hash() != h {
			return fmt.Errorf("entry: %q keeps hash %#x, want %#x", x.Key(), e.hash(), h)
		}
		want := weight(x.Key(), t)
		if h := c.heldOf(t); h != nil {
			want = weighOffHeap(x.Key(), t)
			if h.refs.Load() < 1 {
				return fmt.Errorf("entry: %q holds a block with %d references", x.Key(), h.refs.Load())
			}
		}
		if e.weight(x.Key()) != want {
			return fmt.Errorf("entry: %q keeps weight %d, want %d", x.Key(), e.weight(x.Key()), want)
		}
		bytes += want
	}
	if prev != c.sieve.Newest() {
		return fmt.Errorf("queue: head is not the last entry")
	}
	if !handSeen {
		return fmt.Errorf("queue: hand %q is not in the queue", radix.NodeOf(c.sieve.Hand()).Key())
	}
	var live int
	for i := range c.shards {
		f := c.shards[i].fill
		got, err := countLive(c.shards[i].tab.Load())
		if err != nil {
			return err
		}
		if got != int(f.live) || f.used < f.live {
			return fmt.Errorf("index: shard %d has %d live slots, counts live %d used %d", i, got, f.live, f.used)
		}
		live += int(f.live)
	}
	switch {
	case n != c.tree.Len() || n != live || int64(n) != c.entries.Load():
		return fmt.Errorf("count: queue %d, tree %d, index %d, entries %d", n, c.tree.Len(), live, c.entries.Load())
	case bytes != c.bytes.Load():
		return fmt.Errorf("bytes: counter %d, sum of weights %d", c.bytes.Load(), bytes)
	case bytes > c.maxBytes:
		return fmt.Errorf("bytes: %d over the bound %d", bytes, c.maxBytes)
	}
	return nil
}

// countLive counts the live slots of t, checking each control byte against
// its slot: a tag for a node whose hash has that tag, empty or deleted for
// a nil slot, the spare byte always deleted.
func countLive(t *table) (int, error) {
	n := 0
	for g := range t.groups {
		grp := &t.groups[g]
		ctrl := grp.ctrl.Load()
		if ctrl>>56 != ctrlDeleted {
			return 0, fmt.Errorf("index: group %d spare control byte %#x", g, ctrl>>56)
		}
		for i := range groupSlots {
			b, p := ctrl>>(8*i)&0xff, grp.slots[i].Load()
			switch {
			case b == ctrlEmpty || b == ctrlDeleted:
				if p != nil {
					return 0, fmt.Errorf("index: group %d slot %d is free but holds %q", g, i, p.Key())
				}
			case b > tagMask || p == nil || tagOf(p.Value().hash()) != b:
				return 0, fmt.Errorf("index: group %d slot %d has control byte %#x for node %v", g, i, b, p)
			default:
				n++
			}
		}
	}
	return n, nil
}
