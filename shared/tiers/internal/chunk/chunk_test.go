package chunk_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/internal/chunk"
)

// sorted is an ordered listing whose keys include "", which the first
// chunk must deliver and a later one must not deliver again.
var sorted = []string{"", "a", "b", "c", "d", "e", "f", "g"}

// scan lists sorted with chunks of size until fn has seen stop, recording
// each chunk's length.
func scan(size, limit int, stop string) (got []string, chunks []int) {
	next := func(buf []string, after string, first bool, want int) []string {
		i := 0
		if !first {
			i, _ = slices.BinarySearch(sorted, after)
			i++
		}
		for ; i < len(sorted) && len(buf) < want; i++ {
			buf = append(buf, sorted[i])
		}
		chunks = append(chunks, len(buf))
		return buf
	}
	chunk.Scan(make([]string, 0, size), limit, func(s string) string { return s }, next, func(s string) bool {
		got = append(got, s)
		return s != stop
	})
	return got, chunks
}

func TestScan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		size, limit int
		stop        string
		want        string
		chunks      []int
	}{
		{"all in one chunk and a short one", 8, 0, "none", "|a|b|c|d|e|f|g", []int{8, 0}},
		{"chunks of three", 3, 0, "none", "|a|b|c|d|e|f|g", []int{3, 3, 2}},
		{"limit inside a chunk", 3, 4, "none", "|a|b|c", []int{3, 1}},
		{"limit at a chunk's end", 2, 4, "none", "|a|b|c", []int{2, 2}},
		{"fn stops", 3, 0, "d", "|a|b|c|d", []int{3, 3}},
		{"a buffer without room reads one at a time", 0, 3, "none", "|a|b", []int{1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, chunks := scan(tc.size, tc.limit, tc.stop)
			if s := strings.Join(got, "|"); s != tc.want {
				t.Errorf("items: got %q, want %q", s, tc.want)
			}
			if !slices.Equal(chunks, tc.chunks) {
				t.Errorf("chunk lengths: got %v, want %v", chunks, tc.chunks)
			}
		})
	}
}
