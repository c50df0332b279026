package tileserver

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// TestResponseReset: reset leaves a pooled Response as a new one, whatever
// fields it gains: every field is set here (the test fails on a field it
// does not set), then reset.
func TestResponseReset(t *testing.T) {
	t.Parallel()
	r := &Response{
		Status: 200, Body: []byte("x"), Stream: io.NopCloser(strings.NewReader("")), Admin: true,
		extra: &prepared{}, timing: "memory;dur=0.001", elapsed: time.Millisecond, origin: "https://a.example",
	}
	r.set("X-Cache", xCacheValues[srcMemory])
	r.lease = leased(t)
	v := reflect.ValueOf(r).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("field %s is not set by this test: set it, and clear it in reset", v.Type().Field(i).Name)
		}
	}
	r.reset()
	if !reflect.DeepEqual(*r, Response{}) {
		t.Fatalf("reset left %+v", *r)
	}
}

// leased is a lease on a body the memory tier keeps off the heap.
func leased(t *testing.T) memory.Lease {
	t.Helper()
	c, err := memory.New(memory.Config{MaxBytes: 1 << 20, OffHeap: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Set("k", &tile.Tile{Body: make([]byte, memory.MinOffHeap)})
	_, l, ok := c.Acquire("k")
	if !ok || l == (memory.Lease{}) {
		t.Fatal("no lease on an off-heap body")
	}
	return l
}
