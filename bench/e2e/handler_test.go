package e2e

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
)

// BenchmarkServe measures one GET through the tile handler per op, from each
// tier, beside the static floor (e2e/floor over the same bytes and headers).
func BenchmarkServe(b *testing.B) {
	set := tileset.Build(IIIFKeys("bench"), tileset.NewPool(8, 256, 10_000, 60_000, 1))
	f, err := NewServeFixture(context.Background(), set)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, mode := range ServeModes {
		b.Run(mode, f.Bench(mode))
	}
}

func TestServeFixture(t *testing.T) {
	set := tileset.Build(IIIFKeys("t")[:20], tileset.NewPool(2, 64, 2_000, 4_000, 1))
	f, err := NewServeFixture(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if len(f.reqs) != 20 || len(f.handlers) != len(ServeModes) {
		t.Errorf("fixture: %d requests, %d handlers", len(f.reqs), len(f.handlers))
	}
	// The floor is only a floor if it sends what a memory hit sends: the
	// same header names, and the same values but the per-request timing and
	// the upload time.
	for _, r := range f.reqs {
		mem, static := &sinkWriter{h: http.Header{}}, &sinkWriter{h: http.Header{}}
		f.handlers["memory"].ServeHTTP(mem, r)
		f.handlers["static"].ServeHTTP(static, r)
		for _, name := range []string{"Server-Timing", "Last-Modified"} {
			if mem.h.Get(name) == "" || static.h.Get(name) == "" {
				t.Fatalf("%s: %s missing: memory %q, floor %q", r.URL.Path, name, mem.h.Get(name), static.h.Get(name))
			}
			mem.h.Del(name)
			static.h.Del(name)
		}
		if !reflect.DeepEqual(mem.h, static.h) || mem.n != static.n {
			t.Fatalf("%s: the floor sends %v (%d bytes), a memory hit %v (%d bytes)", r.URL.Path, static.h, static.n, mem.h, mem.n)
		}
	}
}
