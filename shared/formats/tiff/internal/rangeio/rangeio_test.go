package rangeio

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ranges []Range
		gap    int64
		span   int64
		reads  [][2]int64 // offset and length of each read
	}{
		{"apart", []Range{{0, 10, 0}, {100, 10, 1}}, 50, 1 << 20, [][2]int64{{0, 10}, {100, 10}}},
		{"within the gap, unsorted", []Range{{100, 10, 1}, {0, 10, 0}}, 90, 1 << 20, [][2]int64{{0, 110}}},
		{"touching", []Range{{0, 10, 0}, {10, 10, 1}}, 0, 1 << 20, [][2]int64{{0, 20}}},
		{"over the span", []Range{{0, 10, 0}, {12, 10, 1}, {24, 10, 2}}, 5, 25, [][2]int64{{0, 22}, {24, 10}}},
		{"one longer than the span", []Range{{0, 100, 0}}, 5, 25, [][2]int64{{0, 100}}},
		{"overlapping and repeated", []Range{{0, 10, 0}, {0, 10, 1}, {5, 20, 2}}, 0, 1 << 20, [][2]int64{{0, 25}}},
		{"none", nil, 0, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got [][2]int64
			for _, r := range Plan(tc.ranges, tc.gap, tc.span) {
				got = append(got, [2]int64{r.Off, r.N})
			}
			if len(got) != len(tc.reads) {
				t.Fatalf("got reads %v, want %v", got, tc.reads)
			}
			for i := range got {
				if got[i] != tc.reads[i] {
					t.Fatalf("got reads %v, want %v", got, tc.reads)
				}
			}
		})
	}
}

func TestDo(t *testing.T) {
	t.Parallel()
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i)
	}
	read := func(_ context.Context, off, n int64) ([]byte, error) {
		return append([]byte(nil), data[off:off+n]...), nil
	}
	reads := Plan([]Range{{10, 5, 0}, {20, 5, 1}, {500, 3, 2}}, 10, 100)
	gotBytes := map[int][]byte{}
	count, n, err := Do(context.Background(), reads, 2, read, func(r Range, b []byte) { gotBytes[r.ID] = b })
	if err != nil || count != 2 || n != 18 {
		t.Fatalf("got %d reads of %d bytes, %v; want 2 of 18", count, n, err)
	}
	for id, off := range map[int]byte{0: 10, 1: 20, 2: 244} {
		if b := gotBytes[id]; len(b) == 0 || b[0] != off || cap(b) != len(b) {
			t.Errorf("range %d: got %v (cap %d), want bytes from %d, capped", id, b, cap(b), off)
		}
	}
}

func TestDoStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var calls atomic.Int32
	read := func(ctx context.Context, off, n int64) ([]byte, error) {
		calls.Add(1)
		if off == 0 {
			return nil, boom
		}
		return nil, ctx.Err()
	}
	reads := []Read{{0, 1, []Range{{0, 1, 0}}}, {10, 1, []Range{{10, 1, 1}}}, {20, 1, []Range{{20, 1, 2}}}}
	_, _, err := Do(context.Background(), reads, 1, read, func(Range, []byte) {})
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want boom", err)
	}
	if calls.Load() != 1 {
		t.Errorf("got %d reads, want 1: the first failed", calls.Load())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Do(ctx, reads, 1, read, func(Range, []byte) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v with a cancelled context, want context.Canceled", err)
	}
}
