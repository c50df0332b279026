package e2e

import (
	"context"
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
}
