package cachebench

import (
	"strings"
	"sync"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// fifo is the simplest byte-bounded policy: evict in insertion order, ignore
// hits. It is the floor of the hit-ratio tables (SIEVE is FIFO plus one
// visited bit).
type fifo struct {
	mu    sync.Mutex // guards all below
	m     map[string]*fifoEntry
	head  *fifoEntry // oldest
	tail  *fifoEntry // newest
	bytes int64
	max   int64
}

type fifoEntry struct {
	key        string
	t          *tile.Tile
	weight     int64
	prev, next *fifoEntry
}

func newFIFO(maxBytes int64, _ float64) (Cache, error) {
	return &fifo{m: make(map[string]*fifoEntry), max: maxBytes}, nil
}

func (f *fifo) Get(key string) (*tile.Tile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[key]; ok {
		return e.t, true
	}
	return nil, false
}

func (f *fifo) Set(key string, t *tile.Tile, weight int64) bool {
	if weight > f.max {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[key]; ok {
		f.unlink(e)
	}
	e := &fifoEntry{key: key, t: t, weight: weight, prev: f.tail}
	if f.tail != nil {
		f.tail.next = e
	} else {
		f.head = e
	}
	f.tail = e
	f.m[key] = e
	f.bytes += weight
	for f.bytes > f.max {
		f.unlink(f.head)
	}
	return true
}

func (f *fifo) unlink(e *fifoEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		f.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		f.tail = e.prev
	}
	delete(f.m, e.key)
	f.bytes -= e.weight
}

func (f *fifo) Delete(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[key]
	if ok {
		f.unlink(e)
	}
	return ok
}

func (f *fifo) DeletePrefix(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for e := f.head; e != nil; {
		next := e.next
		if strings.HasPrefix(e.key, prefix) {
			f.unlink(e)
			n++
		}
		e = next
	}
	return n
}

func (f *fifo) Sync()  {}
func (f *fifo) Close() {}
