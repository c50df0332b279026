// Package chunk delivers an ordered listing a chunk at a time, so the lock
// a listing is read under is held for one chunk and never while the
// caller's function runs. The memory and disk tiers list their keys with it.
package chunk

// Scan calls fn for up to limit items (limit <= 0: all) in the order next
// produces them, until fn returns false. next appends to buf up to want
// items that come after the key after, where first marks the first chunk
// (after is then "", which some indexes also hold as a key); next is where
// the caller takes and releases its lock. Chunks hold at most cap(buf)
// items; the listing ends at the first short chunk. key names an item, so
// the next chunk resumes after the last one delivered.
func Scan[T any](buf []T, limit int, key func(T) string, next func(buf []T, after string, first bool, want int) []T, fn func(T) bool) {
	size := max(cap(buf), 1)
	after, first, delivered := "", true, 0
	for {
		want := size
		if limit > 0 {
			want = min(want, limit-delivered)
		}
		items := next(buf[:0], after, first, want)
		for _, it := range items {
			if !fn(it) {
				return
			}
		}
		delivered += len(items)
		if len(items) < want || (limit > 0 && delivered >= limit) {
			return
		}
		after, first = key(items[len(items)-1]), false
		buf = items
	}
}
