package purge

import (
	"cmp"
	"slices"
	"strings"
)

// CoalesceConfig bounds how many prefixes a batch of keys becomes.
type CoalesceConfig struct {
	// Threshold is how many affected entries one directory may hold directly
	// (keys in it, or subdirectories already purged whole) before the
	// directory is purged instead of its entries. Default 8.
	Threshold int
	// Cap is the most prefixes a batch may become. Default 15: CloudFront
	// allows 15 wildcard invalidation paths in progress at a time.
	Cap int
}

// Defaults of CoalesceConfig.
const (
	DefaultThreshold = 8
	DefaultCap       = 15
)

func (c CoalesceConfig) withDefaults() CoalesceConfig {
	if c.Threshold <= 0 {
		c.Threshold = DefaultThreshold
	}
	if c.Cap <= 0 {
		c.Cap = DefaultCap
	}
	return c
}

// Coalesce turns a batch of keys (or prefixes) into few prefixes that cover
// all of them. The result is sorted, every input is covered by one of its
// prefixes, none of its prefixes covers another, and it has at most Cap
// entries.
//
// It works on directories ("osm/12/2048/"), the unit both the tiers and a CDN
// wildcard purge well:
//
//  1. A directory holding more than Threshold affected entries directly is
//     purged whole; bottom-up, so a directory of purged directories can be
//     purged whole in turn. This is conservative on purpose: ten tiles in ten
//     columns of one zoom level stay ten keys, not the whole zoom level,
//     because an over-broad purge costs origin load at the CDN.
//  2. While there are more than Cap prefixes, the deepest directory that
//     covers at least two of them (the most entries first, among equally
//     deep ones) replaces them, climbing toward the root; "" (everything) is
//     the last resort.
//
// Coalesce is a pure function on strings; it runs on a sorted slice and maps
// rather than a radix tree because it groups by directory, not by prefix.
func Coalesce(keys []string, cfg CoalesceConfig) []string {
	cfg = cfg.withDefaults()
	items := minimal(keys)
	if len(items) == 0 || items[0] == "" {
		return items
	}
	items = collapseCrowded(items, cfg.Threshold)
	if len(items) > cfg.Cap {
		items = collapseToCap(items, cfg.Cap)
	}
	return items
}

// Shrink coalesces targets (Coalesce's output) further upward into at most
// limit prefixes, with the configured threshold. It is a cdn.Shrink: the
// purge pipeline hands it to the CDN, which knows what is in progress.
func (c CoalesceConfig) Shrink(targets []string, limit int) []string {
	c = c.withDefaults()
	return Coalesce(targets, CoalesceConfig{Threshold: c.Threshold, Cap: max(limit, 1)})
}

// parent is the directory that holds p: "a/b/" for "a/b/c.png" and "a/" for
// "a/b/" (a directory's parent is above it); "" at the top. It is always
// strictly shorter than p, so climbing ends.
func parent(p string) string {
	t := strings.TrimSuffix(p, "/")
	return t[:strings.LastIndexByte(t, '/')+1]
}

// depth is the number of directory levels of a directory prefix.
func depth(dir string) int { return strings.Count(dir, "/") }

// minimal sorts and dedups prefixes and drops those another one covers.
func minimal(in []string) []string {
	s := slices.Clone(in)
	slices.Sort(s)
	s = slices.Compact(s)
	out := s[:0]
	for _, p := range s {
		// In sorted order a covering prefix comes first, and every string
		// between it and p shares it, so comparing with the last kept one
		// suffices.
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// collapseCrowded purges whole every directory with more than threshold
// entries directly in it, deepest first.
func collapseCrowded(items []string, threshold int) []string {
	direct := make(map[string]int) // directory → entries directly in it
	for _, it := range items {
		direct[parent(it)]++
	}
	// A parent is strictly shorter than its child, so visiting directories
	// longest first visits every child before its parent, including the
	// parents that collapsing adds.
	queue := make([]string, 0, len(direct))
	for d := range direct {
		queue = append(queue, d)
	}
	byLenDesc := func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	}
	slices.SortFunc(queue, byLenDesc)
	var collapsed []string
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if direct[d] <= threshold {
			continue
		}
		collapsed = append(collapsed, d)
		if d == "" {
			break
		}
		p := parent(d)
		if direct[p] == 0 {
			// New directory: insert in order (rare; the queue is short).
			i, _ := slices.BinarySearchFunc(queue, p, byLenDesc)
			queue = slices.Insert(queue, i, p)
		}
		direct[p]++
	}
	if len(collapsed) == 0 {
		return items
	}
	return minimal(append(items, collapsed...))
}

// collapseToCap replaces entries by their deepest common directories until at
// most limit remain.
func collapseToCap(items []string, limit int) []string {
	under := make(map[string]int) // directory → entries under it, at any depth
	for _, it := range items {
		for d := parent(it); ; d = parent(d) {
			under[d]++
			if d == "" {
				break
			}
		}
	}
	levels := make(map[int][]string)
	maxDepth := 0
	for d := range under {
		n := depth(d)
		levels[n] = append(levels[n], d)
		maxDepth = max(maxDepth, n)
	}
	total := len(items)
	var collapsed []string
	for lv := maxDepth; lv >= 0 && total > limit; lv-- {
		dirs := levels[lv]
		// Counts at this level are final: every deeper collapse is done and
		// siblings do not change each other's counts.
		slices.SortFunc(dirs, func(a, b string) int {
			return cmp.Or(cmp.Compare(under[b], under[a]), strings.Compare(a, b))
		})
		for _, d := range dirs {
			if total <= limit {
				break
			}
			n := under[d]
			if n < 2 {
				continue
			}
			collapsed = append(collapsed, d)
			total -= n - 1
			if d == "" {
				break
			}
			for a := parent(d); ; a = parent(a) {
				under[a] -= n - 1
				if a == "" {
					break
				}
			}
		}
	}
	return minimal(append(items, collapsed...))
}
