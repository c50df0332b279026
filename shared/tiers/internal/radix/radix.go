// Package radix is a compressed radix tree (a PATRICIA trie over bytes) that
// maps string keys to values and answers prefix questions cheaply: walking,
// counting and deleting every key under a prefix costs the depth of the tree
// plus the number of keys touched, never the size of the tree.
//
// Keys are arbitrary byte strings; "" is a key like any other, and a prefix
// may end in the middle of an edge ("osm/1" covers "osm/12/…"). Edge labels
// are substrings of the inserted keys, so the tree copies no key bytes.
//
// A Tree is not safe for concurrent use; callers lock. The zero Tree is empty
// and ready to use. A Tree holds at most math.MaxInt32 keys (subtree counts
// are 32 bits to keep nodes small).
//
// Besides the value API (Get, Insert, Delete, …) the tree offers node handles
// (Put, Find, Remove, …) for callers that build an intrusive structure on top
// of it, such as the memory cache: a *Node stays the home of its key's value,
// at the same address, for as long as the key is present, and NodeOf leads
// from a value back to its node.
package radix

import (
	"slices"
	"strings"
	"unsafe"
)

// Tree is a compressed radix tree. See the package doc.
type Tree[V any] struct {
	root *Node[V] // path ""; nil until the first insert
}

// Node is the slot of one key in a Tree. Nodes never move: splitting or
// merging edges rewires parents and leaves the node holding a value where it
// is, so a handle from Put or Find stays valid until its key is deleted.
//
// Only nodes that hold (or held) a key carry a V: they are allocated as a
// valued[V], whose first field is the Node. Inner nodes, about a quarter of
// a tile tree's nodes, are bare 32-byte Nodes.
type Node[V any] struct {
	// path is the whole key from the root to the end of this node's edge.
	// The edge label is path[len(parent.path):]; storing the full path instead
	// of the label means the node of a key needs no separate key field, and a
	// merge never rewrites a label.
	path string
	// kids points at the first of the children, sorted by c, in an array
	// holding nk+1 of them with room for kc+1; nil when there are none.
	// Keeping length and capacity in the node instead of behind a slice
	// header saves an allocation per parent and keeps the node at 32 bytes.
	kids   **Node[V]
	n      int32 // keys in this subtree, this node included
	c      byte  // first byte of the edge label, so a search need not load path
	nk, kc uint8 // len-1 and cap-1 of the kids array
	flags  uint8 // hasValue, valueNode
}

const (
	hasValue  = 1 << iota // the node holds a value (is a key)
	valueNode             // the node is the head of a valued[V]
)

// valued is a Node with room for a value.
type valued[V any] struct {
	Node[V]
	val V
}

func newValued[V any](path string, c byte) *Node[V] {
	v := &valued[V]{Node: Node[V]{path: path, c: c, flags: valueNode}}
	return &v.Node
}

// Key returns the key the node holds.
func (n *Node[V]) Key() string { return n.path }

// Value returns a pointer to the node's value. It stays valid (and the value
// stays in place) while the key is present; after Remove or DeletePrefixNodes
// the value is left as it was, for the caller to clear. n must be a node
// returned by Put, Find, Remove or DeletePrefixNodesFrom, or passed to a
// DeletePrefixNodes or WalkPrefixNodesFrom callback.
func (n *Node[V]) Value() *V {
	// Every node handed out holds or held a key, so it heads a valued[V].
	return &(*valued[V])(unsafe.Pointer(n)).val
}

// NodeOf returns the node whose value v is: the inverse of Value, for
// callers that link values to one another (the memory cache queues its
// entries for eviction) and need the node, or its key, back. v must be a
// pointer Value returned.
func NodeOf[V any](v *V) *Node[V] {
	var x valued[V]
	return (*Node[V])(unsafe.Add(unsafe.Pointer(v), -unsafe.Offsetof(x.val)))
}

func (n *Node[V]) has() bool { return n.flags&hasValue != 0 }

// kidList returns the children (nil when there are none).
func (n *Node[V]) kidList() []*Node[V] {
	if n.kids == nil {
		return nil
	}
	return unsafe.Slice(n.kids, int(n.nk)+1)
}

// setKids makes kids[:l] the children; kids has length of at least l and its
// full capacity is usable.
func (n *Node[V]) setKids(kids []*Node[V], l int) {
	if l == 0 {
		n.kids, n.nk, n.kc = nil, 0, 0
		return
	}
	n.kids, n.nk, n.kc = &kids[:1][0], uint8(l-1), uint8(cap(kids)-1)
}

// search returns the index of the child with first byte c, or where it would go.
// linearKids is the longest child array search scans instead of bisecting:
// tile keys branch on decimal digits, so most arrays hold at most 11.
const linearKids = 16

func search[V any](kids []*Node[V], c byte) (int, bool) {
	if len(kids) <= linearKids {
		// Each probe loads a child (its c), likely a cache miss. A linear
		// scan's loads do not depend on one another, so the CPU overlaps
		// them; a binary search's wait for each other in turn.
		for i, k := range kids {
			if k.c >= c {
				return i, k.c == c
			}
		}
		return len(kids), false
	}
	lo, hi := 0, len(kids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if kids[m].c < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(kids) && kids[lo].c == c
}

// child returns the child whose label starts with c.
func (n *Node[V]) child(c byte) *Node[V] {
	kids := n.kidList()
	if i, ok := search(kids, c); ok {
		return kids[i]
	}
	return nil
}

// kidCap is the capacity for a child array that must hold l: a little
// room to grow (an eighth, not append's doubling: child arrays are a large
// part of the tree's memory and most stop growing at ~10 entries, so the
// small ones get none), rounded up to what the allocator's size class holds
// anyway.
func kidCap(l int) int {
	want := (l + l/8) * 8
	for _, size := range sizeClasses {
		if size >= want {
			return min(size/8, 256)
		}
	}
	return 256
}

// sizeClasses are the Go allocator's classes up to 2 KB (256 pointers).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224,
	240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280,
	1408, 1536, 1792, 2048}

// addKid inserts k, whose c is not among n's children.
func (n *Node[V]) addKid(k *Node[V]) {
	kids := n.kidList()
	i, _ := search(kids, k.c)
	l := len(kids)
	if kids == nil || l == int(n.kc)+1 {
		grown := make([]*Node[V], l+1, kidCap(l+1))
		copy(grown, kids[:i])
		grown[i] = k
		copy(grown[i+1:], kids[i:])
		n.setKids(grown, l+1)
		return
	}
	kids = unsafe.Slice(n.kids, int(n.kc)+1)[:l+1]
	copy(kids[i+1:], kids[i:])
	kids[i] = k
	n.nk++
}

func (n *Node[V]) removeKid(c byte) {
	kids := n.kidList()
	if len(kids) == 1 {
		n.setKids(nil, 0)
		return
	}
	i, _ := search(kids, c)
	copy(kids[i:], kids[i+1:])
	kids[len(kids)-1] = nil // let the removed child be collected
	n.nk--
}

func (n *Node[V]) replaceKid(k *Node[V]) {
	kids := n.kidList()
	i, _ := search(kids, k.c)
	kids[i] = k
}

func (n *Node[V]) onlyKid() *Node[V] {
	if n.kids == nil || n.nk != 0 {
		return nil
	}
	return *n.kids
}

// Len returns the number of keys.
func (t *Tree[V]) Len() int {
	if t.root == nil {
		return 0
	}
	return int(t.root.n)
}

// Find returns the node holding key, or nil.
func (t *Tree[V]) Find(key string) *Node[V] {
	n := t.root
	for n != nil {
		d := len(n.path)
		if d == len(key) {
			if n.has() {
				return n
			}
			return nil
		}
		n = n.child(key[d])
		if n == nil || len(n.path) > len(key) || n.path[d:] != key[d:len(n.path)] {
			return nil
		}
	}
	return nil
}

// Get returns the value stored under key.
func (t *Tree[V]) Get(key string) (V, bool) {
	if n := t.Find(key); n != nil {
		return *n.Value(), true
	}
	var zero V
	return zero, false
}

// Put returns the node for key, creating it if the key is absent. A created
// node's value is the zero V, or, if the node was kept as an inner node after
// Remove, whatever the caller left in it.
func (t *Tree[V]) Put(key string) (n *Node[V], created bool) {
	if t.root == nil {
		if key == "" {
			t.root = newValued[V]("", 0)
		} else {
			t.root = &Node[V]{}
		}
	}
	// One descent: the nodes passed are remembered, and gain a key only
	// once it is known to be new. Tile keys are a dozen levels deep; the
	// array keeps that off the heap.
	var buf [32]*Node[V]
	stack := buf[:0]
	var parent *Node[V]
	n = t.root
	for {
		d := len(n.path)
		if d == len(key) {
			if n.has() {
				return n, false
			}
			if n.flags&valueNode == 0 {
				// An inner node becomes a key: it needs room for a value. It
				// was no caller's handle, so it may be replaced.
				v := newValued[V](n.path, n.c)
				v.kids, v.n, v.nk, v.kc = n.kids, n.n, n.nk, n.kc
				if parent == nil {
					t.root = v
				} else {
					parent.replaceKid(v)
				}
				n = v
			}
			n.flags |= hasValue
			n.n++
			break
		}
		c := key[d]
		k := n.child(c)
		if k == nil {
			leaf := newValued[V](key, c)
			leaf.n, leaf.flags = 1, valueNode|hasValue
			n.addKid(leaf)
			n.n++
			n = leaf
			break
		}
		l := d + commonPrefix(k.path[d:], key[d:])
		if l < len(k.path) {
			// The key leaves k's edge part-way, so it is new: split the
			// edge with a new node. k keeps its path, so it (and its value)
			// does not move.
			var mid *Node[V]
			if l == len(key) {
				mid = newValued[V](key, c) // the split point is the key itself
			} else {
				mid = &Node[V]{path: key[:l], c: c}
			}
			mid.n = k.n
			n.replaceKid(mid)
			k.c = k.path[l]
			mid.addKid(k)
			k = mid
		}
		stack = append(stack, n)
		parent, n = n, k
	}
	for _, a := range stack {
		a.n++
	}
	return n, true
}

// Insert stores v under key and returns the value it replaced, if any.
func (t *Tree[V]) Insert(key string, v V) (old V, replaced bool) {
	n, created := t.Put(key)
	if !created {
		old, replaced = *n.Value(), true
	}
	*n.Value() = v
	return old, replaced
}

// Remove deletes key and returns its node, or nil if the key was absent. The
// node's value is left untouched (a concurrent reader of an intrusive value
// may still look at it); the caller clears what it must.
func (t *Tree[V]) Remove(key string) *Node[V] {
	// The path from the root, for the count updates and the merge below.
	// Tile keys are a dozen levels deep; the array keeps that off the heap.
	var buf [32]*Node[V]
	stack := buf[:0]
	n := t.root
	for n != nil {
		stack = append(stack, n)
		d := len(n.path)
		if d == len(key) {
			break
		}
		n = n.child(key[d])
		if n == nil || len(n.path) > len(key) || n.path[d:] != key[d:len(n.path)] {
			return nil
		}
	}
	if n == nil || !n.has() {
		return nil
	}
	for _, a := range stack {
		a.n--
	}
	n.flags &^= hasValue
	if len(stack) == 1 { // the root stays, as an inner node
		if n.n == 0 {
			t.root = nil
		}
		return n
	}
	parent := stack[len(stack)-2]
	switch {
	case n.kids == nil:
		parent.removeKid(n.c)
		t.collapse(stack[:len(stack)-1])
	case n.nk == 0:
		// An inner node with one child is redundant: the child takes its
		// place. Labels are derived from paths, so only c is rewritten.
		k := *n.kids
		k.c = n.c
		parent.replaceKid(k)
	}
	return n
}

// collapse restores the invariant that every node but the root holds a value
// or has at least two children, after the last node of stack lost a child.
func (t *Tree[V]) collapse(stack []*Node[V]) {
	n := stack[len(stack)-1]
	if len(stack) == 1 {
		if n.n == 0 {
			t.root = nil
		}
		return
	}
	if n.has() {
		return
	}
	if k := n.onlyKid(); k != nil {
		k.c = n.c
		stack[len(stack)-2].replaceKid(k)
	}
}

// Delete removes key and returns its value.
func (t *Tree[V]) Delete(key string) (old V, ok bool) {
	n := t.Remove(key)
	if n == nil {
		return old, false
	}
	v := n.Value()
	old = *v
	var zero V
	*v = zero // the value API owns its values: do not pin them
	return old, true
}

// cover returns the nodes from the root to the highest node whose path starts
// with prefix (every key under prefix lives in that node's subtree), or nil
// if no key starts with prefix.
func (t *Tree[V]) cover(prefix string, buf []*Node[V]) []*Node[V] {
	stack := buf[:0]
	n := t.root
	for n != nil {
		stack = append(stack, n)
		d := len(n.path)
		if d >= len(prefix) {
			return stack
		}
		n = n.child(prefix[d])
		if n == nil {
			return nil
		}
		end := min(len(n.path), len(prefix))
		if n.path[d:end] != prefix[d:end] {
			return nil
		}
	}
	return nil
}

// CountPrefix returns the number of keys that start with prefix, in time
// proportional to the depth of the tree.
func (t *Tree[V]) CountPrefix(prefix string) int {
	var buf [32]*Node[V]
	stack := t.cover(prefix, buf[:])
	if stack == nil {
		return 0
	}
	return int(stack[len(stack)-1].n)
}

// DeletePrefixNodes removes every key that starts with prefix ("" removes
// all) by detaching one subtree, then calls fn (if not nil) for each removed
// node in ascending key order. It returns the number of keys removed. Values
// are left untouched, as with Remove.
func (t *Tree[V]) DeletePrefixNodes(prefix string, fn func(n *Node[V])) int {
	var buf [32]*Node[V]
	stack := t.cover(prefix, buf[:])
	if stack == nil {
		return 0
	}
	top := stack[len(stack)-1]
	removed := int(top.n)
	if removed == 0 {
		return 0
	}
	if len(stack) == 1 {
		t.root = nil
	} else {
		for _, a := range stack[:len(stack)-1] {
			a.n -= top.n
		}
		stack[len(stack)-2].removeKid(top.c)
		t.collapse(stack[:len(stack)-1])
	}
	if fn != nil {
		walk(top, "", func(n *Node[V]) bool { fn(n); return true })
	}
	return removed
}

// DeletePrefixNodesFrom removes, in ascending key order, up to limit keys
// (limit <= 0: no limit) that start with prefix and sort at or after from
// ("" means from the start), and appends their nodes to dst in that order.
// Fewer than limit appended means no such key is left. Whole subtrees that
// fit in what is left of limit are detached at once, so the cost is the
// depth of the tree plus the number of keys removed, as with
// DeletePrefixNodes; a purge can thus be done in bounded steps, each
// resuming from the successor of the last key removed. Values are left
// untouched, as with Remove.
func (t *Tree[V]) DeletePrefixNodesFrom(dst []*Node[V], prefix, from string, limit int) []*Node[V] {
	var buf [32]*Node[V]
	stack := t.cover(prefix, buf[:])
	if stack == nil {
		return dst
	}
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	p := pruner[V]{from: from, left: limit, out: dst}
	top := stack[len(stack)-1]
	if p.before(top) {
		return dst
	}
	removed, gone := p.prune(top)
	if removed == 0 {
		return p.out
	}
	if len(stack) == 1 {
		if gone {
			t.root = nil
		}
		return p.out
	}
	for _, a := range stack[:len(stack)-1] {
		a.n -= removed
	}
	parent := stack[len(stack)-2]
	switch {
	case gone:
		parent.removeKid(top.c)
		t.collapse(stack[:len(stack)-1])
	case !top.has():
		if k := top.onlyKid(); k != nil {
			k.c = top.c
			parent.replaceKid(k)
		}
	}
	return p.out
}

// pruner is the state of one DeletePrefixNodesFrom.
type pruner[V any] struct {
	from string
	left int        // keys it may still remove
	out  []*Node[V] // the removed nodes
}

// before reports whether every key under x sorts before p.from.
func (p *pruner[V]) before(x *Node[V]) bool {
	return x.path < p.from && !strings.HasPrefix(p.from, x.path)
}

// prune removes keys at or after p.from from x's subtree, smallest first,
// while p.left lasts. It returns how many it removed and whether x has left
// the tree's shape (it was detached whole, or holds no key and no child any
// more): the caller then drops x from its parent; otherwise the caller merges
// x into its only child if x is an inner node with just one.
func (p *pruner[V]) prune(x *Node[V]) (removed int32, gone bool) {
	if (p.from == "" || x.path >= p.from) && int(x.n) <= p.left {
		// All of x's subtree goes: detach it, collect its keys.
		p.out = appendKeys(p.out, x)
		p.left -= int(x.n)
		return x.n, true
	}
	if x.has() && x.path >= p.from && p.left > 0 {
		// x's own key, which sorts before its children's.
		x.flags &^= hasValue
		p.out = append(p.out, x)
		p.left--
		removed++
	}
	if kids := x.kidList(); kids != nil {
		w := 0
		for _, k := range kids {
			if p.left > 0 && !p.before(k) {
				r, g := p.prune(k)
				removed += r
				if g {
					continue
				}
				if !k.has() {
					if kk := k.onlyKid(); kk != nil {
						kk.c = k.c
						k = kk
					}
				}
			}
			kids[w] = k
			w++
		}
		clear(kids[w:]) // let removed children be collected
		if w == 0 {
			x.setKids(nil, 0)
		} else {
			x.nk = uint8(w - 1)
		}
	}
	x.n -= removed
	return removed, x.n == 0
}

// appendKeys appends the nodes of x's subtree that hold keys, in order.
func appendKeys[V any](dst []*Node[V], x *Node[V]) []*Node[V] {
	if x.has() {
		dst = append(dst, x)
	}
	kids := x.kidList()
	// Read every child before descending into any: the loads are
	// independent, so their cache misses (a detached subtree's nodes are
	// scattered over the heap) overlap instead of queueing one behind the
	// other through the recursion.
	n := 0
	for _, k := range kids {
		n += int(k.n)
	}
	dst = slices.Grow(dst, n)
	for _, k := range kids {
		if k.kids == nil {
			dst = append(dst, k) // a leaf: it holds a key
		} else {
			dst = appendKeys(dst, k)
		}
	}
	return dst
}

// DeletePrefix removes every key that starts with prefix ("" removes all) and
// calls fn (if not nil) for each removed pair in ascending key order. It
// returns the number removed. The cost follows the number removed: the
// subtree is detached in O(depth) and only visited to call fn.
func (t *Tree[V]) DeletePrefix(prefix string, fn func(key string, v V)) int {
	if fn == nil {
		return t.DeletePrefixNodes(prefix, nil)
	}
	return t.DeletePrefixNodes(prefix, func(n *Node[V]) { fn(n.path, *n.Value()) })
}

// WalkPrefixNodesFrom calls fn for each node whose key starts with prefix
// and sorts strictly after after ("" means from the start), in ascending
// byte order, until fn returns false. fn must not change the tree.
func (t *Tree[V]) WalkPrefixNodesFrom(prefix, after string, fn func(n *Node[V]) bool) {
	var buf [32]*Node[V]
	stack := t.cover(prefix, buf[:])
	if stack == nil {
		return
	}
	walk(stack[len(stack)-1], after, fn)
}

// WalkPrefixFrom is WalkPrefix starting strictly after the key after, for
// scans that are resumed chunk by chunk; after == "" means from the start.
func (t *Tree[V]) WalkPrefixFrom(prefix, after string, fn func(key string, v V) bool) {
	t.WalkPrefixNodesFrom(prefix, after, func(n *Node[V]) bool { return fn(n.path, *n.Value()) })
}

// WalkPrefix calls fn for each key that starts with prefix, in ascending
// byte order, until fn returns false. fn must not change the tree.
func (t *Tree[V]) WalkPrefix(prefix string, fn func(key string, v V) bool) {
	t.WalkPrefixFrom(prefix, "", fn)
}

// walk visits the value nodes of n's subtree whose keys sort after after
// ("" for all), in order, and reports whether fn wants more.
func walk[V any](n *Node[V], after string, fn func(*Node[V]) bool) bool {
	if after != "" && !strings.HasPrefix(after, n.path) {
		if n.path < after {
			return true // n.path differs from after with a smaller byte: all of it sorts before
		}
		after = "" // all of the subtree sorts after
	}
	if after == "" {
		if n.has() && !fn(n) {
			return false
		}
		return walkKids(n, "", fn)
	}
	// after extends n.path, so n's own key is not after it.
	return walkKids(n, after, fn)
}

// walkKids walks n's children in order; with after set (an extension of
// n.path) it skips those that sort wholly before after.
func walkKids[V any](n *Node[V], after string, fn func(*Node[V]) bool) bool {
	if n.kids == nil {
		return true
	}
	var from byte
	if len(after) == len(n.path) {
		after = "" // after is n itself: every child is after it
	} else if after != "" {
		from = after[len(n.path)]
	}
	for _, k := range n.kidList() {
		if after != "" {
			if k.c < from {
				continue
			}
			if k.c > from {
				after = ""
			}
		}
		if !walk(k, after, fn) {
			return false
		}
	}
	return true
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
