package slab

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

func newArena(t *testing.T, size int64) *Arena {
	t.Helper()
	a, err := New(size, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFirstFit: blocks are placed at the lowest free run, and a freed run
// is reused before the arena's free end.
func TestFirstFit(t *testing.T) {
	t.Parallel()
	a := newArena(t, 64*Granule)
	var bs []Block
	for _, n := range []int{1, Granule, Granule + 1, 3 * Granule} {
		b, err := a.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	if got := []uint32{bs[0].start, bs[1].start, bs[2].start, bs[3].start}; !slices.Equal(got, []uint32{0, 1, 2, 4}) {
		t.Fatalf("starts %v, want [0 1 2 4]", got)
	}
	a.Free(bs[2]) // two granules at 2
	b, err := a.Alloc(2 * Granule)
	if err != nil || b.start != 2 {
		t.Fatalf("got %+v, %v; want the freed run at 2", b, err)
	}
	c, err := a.Alloc(3 * Granule) // no hole holds it: after the last block
	if err != nil || c.start != 7 {
		t.Fatalf("got %+v, %v; want 7", c, err)
	}
	a.Free(bs[0])
	a.Free(bs[1])
	d, err := a.Alloc(2 * Granule) // the coalesced run at 0
	if err != nil || d.start != 0 {
		t.Fatalf("got %+v, %v; want 0", d, err)
	}
}

// TestFull: an allocation no free run holds is refused, not split.
func TestFull(t *testing.T) {
	t.Parallel()
	a := newArena(t, 64*Granule)
	size := int(a.Size())
	b, err := a.Alloc(size)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Alloc(1); !errors.Is(err, ErrFull) {
		t.Fatalf("got %v, want ErrFull", err)
	}
	a.Free(b)
	if _, err := a.Alloc(size + 1); !errors.Is(err, ErrFull) {
		t.Fatalf("got %v, want ErrFull for more than the arena", err)
	}
}

// TestResident: a page counts while a granule of it is in use, and only
// then.
func TestResident(t *testing.T) {
	t.Parallel()
	page := int64(os.Getpagesize())
	var told []int64
	a, err := New(16*page, func(r int64) { told = append(told, r) }, 1)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := a.Alloc(1)         // page 0
	b2, _ := a.Alloc(int(page)) // the rest of page 0 and part of page 1
	if got, want := a.Resident(), 2*page; got != want {
		t.Fatalf("resident %d, want %d", got, want)
	}
	a.Free(b1) // page 0 still holds part of b2
	if got, want := a.Resident(), 2*page; got != want {
		t.Fatalf("resident %d, want %d", got, want)
	}
	a.Free(b2)
	if got := a.Resident(); got != 0 {
		t.Fatalf("resident %d, want 0", got)
	}
	if !slices.Equal(told, []int64{0, page, 2 * page, 0}) {
		t.Fatalf("told %v", told)
	}
}

// TestReleasedPagesReadZero: a page handed back reads as zeros when it is
// used again, and a page still partly in use keeps its bytes.
func TestReleasedPagesReadZero(t *testing.T) {
	t.Parallel()
	page := os.Getpagesize()
	a := newArena(t, int64(8*page))
	if !a.OffHeap() {
		if runtime.GOOS == "linux" {
			t.Fatal("no off-heap mapping on Linux, where mapAnon must make one")
		}
		t.Skip("no mapping on this system")
	}
	b1, _ := a.Alloc(page)
	keep, _ := a.Alloc(Granule) // on the page after b1's
	fill := func(b Block, n int, c byte) {
		for i := range a.Bytes(b, n) {
			a.Bytes(b, n)[i] = c
		}
	}
	fill(b1, page, 0xaa)
	fill(keep, Granule, 0xbb)
	a.Free(b1)
	b3, _ := a.Alloc(page)
	if b3.start != b1.start {
		t.Fatalf("got %+v, want b1's place", b3)
	}
	for i, c := range a.Bytes(b3, page) {
		if c != 0 {
			t.Fatalf("byte %d of a released page is %#x, want 0", i, c)
		}
	}
	for i, c := range a.Bytes(keep, Granule) {
		if c != 0xbb {
			t.Fatalf("byte %d of a block in use is %#x, want 0xbb", i, c)
		}
	}
}

// TestAgainstModel: random allocations and frees keep the arena's bitmap,
// page counts and resident bytes in line with a plain model, and blocks
// never overlap.
func TestAgainstModel(t *testing.T) {
	t.Parallel()
	page := os.Getpagesize()
	for seed := range uint64(4) {
		a := newArena(t, int64(64*page))
		owner := make([]int, int(a.Size())/Granule) // block id per granule, 0 free
		live := map[int]Block{}
		r := rand.New(rand.NewPCG(seed, 3))
		for id := 1; id < 4000; id++ {
			if len(live) > 0 && r.IntN(2) == 0 {
				for k, b := range live { // any one
					for g := b.start; g < b.start+b.n; g++ {
						owner[g] = 0
					}
					a.Free(b)
					delete(live, k)
					break
				}
			} else {
				n := 1 + r.IntN(6*Granule)
				b, err := a.Alloc(n)
				want := firstFree(owner, Granules(n))
				if err != nil {
					if want >= 0 {
						t.Fatalf("Alloc(%d) refused, model has room at %d", n, want)
					}
					continue
				}
				if int(b.start) != want {
					t.Fatalf("Alloc(%d) at %d, model's first fit %d", n, b.start, want)
				}
				for g := b.start; g < b.start+b.n; g++ {
					owner[g] = id
				}
				live[id] = b
			}
			var resident int64
			for p := 0; p < len(owner)/a.perPage; p++ {
				if slices.ContainsFunc(owner[p*a.perPage:(p+1)*a.perPage], func(o int) bool { return o != 0 }) {
					resident += int64(page)
				}
			}
			if got := a.Resident(); got != resident {
				t.Fatalf("resident %d, model %d", got, resident)
			}
		}
	}
}

func firstFree(owner []int, g int) int {
	run := 0
	for i, o := range owner {
		if o != 0 {
			run = 0
			continue
		}
		if run++; run == g {
			return i - g + 1
		}
	}
	return -1
}

// TestConcurrent: allocations and frees from many goroutines never hand
// out overlapping blocks.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	a := newArena(t, 1<<20)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for range 2000 {
				n := 1 + r.IntN(4*Granule)
				b, err := a.Alloc(n)
				if err != nil {
					continue
				}
				p := a.Bytes(b, n)
				for i := range p {
					p[i] = byte(w)
				}
				for i := range p {
					if p[i] != byte(w) {
						t.Errorf("block of worker %d overwritten", w)
						break
					}
				}
				a.Free(b)
			}
		})
	}
	wg.Wait()
	if got := a.Resident(); got != 0 {
		t.Fatalf("resident %d after every block was freed, want 0", got)
	}
}

func TestContains(t *testing.T) {
	t.Parallel()
	a := newArena(t, 4*Granule)
	b, _ := a.Alloc(10)
	if !a.Contains(&a.Bytes(b, 10)[0]) {
		t.Fatal("a block's byte is not in the arena")
	}
	if other := make([]byte, 1); a.Contains(&other[0]) {
		t.Fatal("a heap byte is in the arena")
	}
}
