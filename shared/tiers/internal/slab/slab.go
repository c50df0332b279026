// Package slab keeps the memory tier's tile bytes off the Go heap: one
// mapping of anonymous memory, reserved once and cut into blocks of whole
// granules. The collector neither scans nor counts it, so the bytes a
// tier holds here do not raise the heap that the Go memory limit bounds,
// and holding more of them does not make the collector run more often.
//
// What it promises:
//
//   - A block is a contiguous run of granules (Granule bytes each), placed
//     first fit from the lowest free granule, which keeps the blocks in use
//     packed at the low end of the mapping.
//   - Resident reports the bytes of the pages that hold at least one
//     granule in use: a page no block uses any more is handed back to the
//     system at once (MADV_DONTNEED), so what the mapping costs in RSS
//     follows the blocks in use, not its size or its history.
//   - An Arena is safe for concurrent use; Free may be called from any
//     goroutine (the last reader of an evicted block frees it).
//
// It knows nothing of tiles or of who may still read a block: the memory
// tier frees a block only when no lease on it is left.
package slab

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Granule is the unit blocks are made of.
const Granule = 512

// Block is a run of granules of an Arena. The zero Block is none.
type Block struct {
	start, n uint32 // first granule and granule count
}

// Size is the bytes the block takes: its granules.
func (b Block) Size() int64 { return int64(b.n) * Granule }

// Arena is one mapping and the blocks cut from it.
type Arena struct {
	mem      []byte
	offHeap  bool // mem is a mapping outside the Go heap
	pageSize int
	perPage  int // granules per page

	mu    sync.Mutex // guards used, pages, hint, reported
	used  []uint64   // one bit per granule, set while a block holds it
	pages []uint8    // granules in use per page
	hint  int        // no granule below it is free

	resident atomic.Int64 // bytes of pages with a granule in use
	// onChange, when set, is told the resident bytes each time they have
	// moved by step since it was last told; reported is what it was told.
	onChange func(int64)
	step     int64
	reported int64
}

// New maps an arena of at least size bytes. onChange, when not nil, is
// called (under the arena's lock, so it must not call back into it) with
// the resident bytes whenever they have moved by step or more since its
// last call, and once with 0 at the start.
func New(size int64, onChange func(resident int64), step int64) (*Arena, error) {
	page := os.Getpagesize()
	if page < Granule || page/Granule > math.MaxUint8 {
		return nil, fmt.Errorf("slab: page size %d not supported", page)
	}
	if size <= 0 || size > math.MaxUint32*Granule {
		return nil, fmt.Errorf("slab: size %d out of range", size)
	}
	size = (size + int64(page) - 1) / int64(page) * int64(page)
	mem, offHeap, err := mapAnon(int(size))
	if err != nil {
		return nil, fmt.Errorf("slab: map %d bytes: %w", size, err)
	}
	granules := int(size / Granule)
	a := &Arena{
		mem: mem, offHeap: offHeap, pageSize: page, perPage: page / Granule,
		used:     make([]uint64, (granules+63)/64),
		pages:    make([]uint8, int(size)/page),
		onChange: onChange, step: max(step, 1),
	}
	if tail := granules % 64; tail != 0 {
		a.used[len(a.used)-1] = ^uint64(0) << tail // past the end: never free
	}
	if onChange != nil {
		onChange(0)
	}
	// The mapping is not the heap's: when the arena is gone, nothing refers
	// to it any more (a block's reader holds its arena), and it is unmapped.
	runtime.AddCleanup(a, func(m []byte) { unmap(m) }, mem)
	return a, nil
}

// OffHeap reports whether the arena lies outside the Go heap (a mapping);
// where the system offers none it is one heap allocation instead.
func (a *Arena) OffHeap() bool { return a.offHeap }

// Size is the arena's whole size: what it may ever hold.
func (a *Arena) Size() int64 { return int64(len(a.mem)) }

// Resident is the bytes of the pages that hold a granule in use.
func (a *Arena) Resident() int64 { return a.resident.Load() }

// Granules is how many granules n bytes take.
func Granules(n int) int { return (n + Granule - 1) / Granule }

// Contains reports whether p points into the arena.
func (a *Arena) Contains(p *byte) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(a.mem)))
	return uintptr(unsafe.Pointer(p))-base < uintptr(len(a.mem))
}

// Bytes is the first n bytes of b (n at most b.Size()). The slice is valid
// until b is freed.
func (a *Arena) Bytes(b Block, n int) []byte {
	off := int(b.start) * Granule
	return a.mem[off : off+n : off+int(b.Size())]
}

// ErrFull is an allocation no free run of the arena can hold.
var ErrFull = errors.New("slab: no free run large enough")

// Alloc takes a block of at least n bytes (n > 0), or reports ErrFull.
func (a *Arena) Alloc(n int) (Block, error) {
	g := Granules(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	start := a.find(g)
	if start < 0 {
		return Block{}, ErrFull
	}
	a.mark(start, g, true)
	if start == a.hint {
		a.hint = start + g
	}
	a.report()
	return Block{start: uint32(start), n: uint32(g)}, nil
}

// Free returns b's granules, and the pages no block uses any more to the
// system. b must not be read after.
func (a *Arena) Free(b Block) {
	if b.n == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mark(int(b.start), int(b.n), false)
	a.hint = min(a.hint, int(b.start))
	a.report()
}

// find returns the first granule of the lowest free run of g granules, or
// -1. a.mu is held.
func (a *Arena) find(g int) int {
	run, start := 0, 0
	for w := a.hint / 64; w < len(a.used); w++ {
		free := ^a.used[w]
		switch free {
		case 0:
			run = 0
			continue
		case ^uint64(0):
			if run == 0 {
				start = w * 64
			}
			if run += 64; run >= g {
				return start
			}
			continue
		}
		for pos := 0; pos < 64; {
			rest := free >> pos
			if rest&1 == 0 { // used granules from pos on
				pos += min(bits.TrailingZeros64(rest), 64-pos)
				run = 0
				continue
			}
			k := min(bits.TrailingZeros64(^rest), 64-pos) // free granules from pos on
			if run == 0 {
				start = w*64 + pos
			}
			if run += k; run >= g {
				return start
			}
			pos += k
		}
	}
	return -1
}

// mark sets (use) or clears the bits of granules [start, start+g), keeps
// the pages' counts and the resident bytes, and hands the pages that fall
// out of use back to the system. a.mu is held.
func (a *Arena) mark(start, g int, use bool) {
	for i := start; i < start+g; {
		w, b := i/64, i%64
		k := min(64-b, start+g-i)
		m := (^uint64(0) >> (64 - k)) << b
		if use {
			a.used[w] |= m
		} else {
			a.used[w] &^= m
		}
		i += k
	}
	first, last := start/a.perPage, (start+g-1)/a.perPage
	released := -1 // the first page of a run of pages just fallen out of use
	for p := first; p <= last; p++ {
		lo, hi := max(start, p*a.perPage), min(start+g, (p+1)*a.perPage)
		if use {
			if a.pages[p] == 0 {
				a.resident.Add(int64(a.pageSize))
			}
			a.pages[p] += uint8(hi - lo)
			continue
		}
		a.pages[p] -= uint8(hi - lo)
		if a.pages[p] == 0 {
			a.resident.Add(-int64(a.pageSize))
			if released < 0 {
				released = p
			}
			continue
		}
		a.release(released, p)
		released = -1
	}
	a.release(released, last+1)
}

// release hands pages [from, to) back to the system; from < 0 is none.
func (a *Arena) release(from, to int) {
	if from < 0 || from >= to {
		return
	}
	discard(a.mem[from*a.pageSize : to*a.pageSize])
}

// report tells onChange the resident bytes if they moved by a step. a.mu
// is held.
func (a *Arena) report() {
	if a.onChange == nil {
		return
	}
	if r := a.resident.Load(); r-a.reported >= a.step || a.reported-r >= a.step {
		a.reported = r
		a.onChange(r)
	}
}
