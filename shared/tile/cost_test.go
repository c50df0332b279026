package tile

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestAllocBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		want int64
	}{
		{0, 0}, {1, 16}, {8, 16}, {15, 16}, {16, 16}, {17, 24}, {33, 48}, {100, 112}, {1025, 1152},
		{32768, 32768}, {32769, 40960}, {1 << 20, 1 << 20},
	} {
		if got := AllocBytes(tt.n); got != tt.want {
			t.Errorf("AllocBytes(%d): got %d, want %d", tt.n, got, tt.want)
		}
	}
}

// TestCostCountsEveryField gives each field of Tile in turn a large value
// and checks that Cost grows by at least its size. A field of a kind this
// test does not know fails it: count the field in Cost, then add its kind
// here.
func TestCostCountsEveryField(t *testing.T) {
	t.Parallel()
	const big = 10_000
	base := (&Tile{}).Cost()
	typ := reflect.TypeFor[Tile]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var tl Tile
			v := reflect.ValueOf(&tl).Elem().Field(i)
			switch {
			case f.Type == reflect.TypeFor[time.Time]():
				return // no heap of its own: its Location is UTC or Local, shared
			case f.Type.Kind() == reflect.Bool:
				return
			case f.Type.Kind() == reflect.String:
				v.SetString(strings.Repeat("s", big))
			case f.Type == reflect.TypeFor[[]byte]():
				v.SetBytes(make([]byte, big))
			case f.Type == reflect.TypeFor[Prepared]():
				v.Set(reflect.ValueOf(Prepared(costOf(big))))
			default:
				t.Fatalf("field %s of type %s: count it in Cost, then teach this test its kind", f.Name, f.Type)
			}
			if got := tl.Cost(); got < base+big {
				t.Errorf("Cost with a %d-byte %s: got %d, want at least %d", big, f.Name, got, base+big)
			}
		})
	}
}

// TestCostMatchesHeap allocates distinct tiles, as the origin and the disk
// tier make them, and checks their summed Cost against the live heap they
// hold: never less (but for noise, the runtime's own allocations meanwhile),
// at most a few percent more. Not parallel: it reads the process's heap.
func TestCostMatchesHeap(t *testing.T) {
	const (
		n     = 50_000
		noise = 64 << 10
	)
	tests := []struct {
		name string
		make func(i int) *Tile
	}{
		{"404", func(int) *Tile { return &Tile{Missing: true, StoredAt: time.Now()} }},
		{"small tiles", func(i int) *Tile {
			return &Tile{Body: make([]byte, 50+i%700), ContentType: strings.Clone("image/png"),
				ETag: fmt.Sprintf(`"%032x"`, i), LastModified: time.Now().UTC()}
		}},
		{"vector tiles", func(i int) *Tile {
			return &Tile{Body: make([]byte, 2000+i%9000), ContentType: strings.Clone("application/vnd.mapbox-vector-tile"),
				ContentEncoding: strings.Clone("gzip"), ETag: fmt.Sprintf(`"%032x-%d"`, i, i%9)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tiles := make([]*Tile, n)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range tiles {
				tiles[i] = tt.make(i)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			held := int64(after.HeapAlloc - before.HeapAlloc)
			var cost int64
			for _, tl := range tiles {
				cost += tl.Cost()
			}
			runtime.KeepAlive(tiles)
			t.Logf("%d tiles: heap %d, Cost %d (%.3fx)", n, held, cost, float64(cost)/float64(held))
			if cost < held-noise || float64(cost) > 1.05*float64(held) {
				t.Errorf("summed Cost %d, want between the heap held %d (less %d of noise) and 5%% more", cost, held, noise)
			}
		})
	}
}

// costOf is a Prepared that holds n bytes.
type costOf int64

func (c costOf) Cost() int64 { return int64(c) }
