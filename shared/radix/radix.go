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
// at the same address, for as long as the key is present.
package radix

import "strings"

// Tree is a compressed radix tree. See the package doc.
type Tree[V any] struct {
	root *Node[V] // path ""; nil until the first insert
}

// Node is the slot of one key in a Tree. Nodes never move: splitting or
// merging edges rewires parents and leaves the node holding a value where it
// is, so a handle from Put or Find stays valid until its key is deleted.
type Node[V any] struct {
	// path is the whole key from the root to the end of this node's edge.
	// The edge label is path[len(parent.path):]; storing the full path instead
	// of the label means the node of a key needs no separate key field, and a
	// merge never rewrites a label.
	path string
	// kids are the children sorted by c. A pointer keeps leaves (most
	// nodes) 16 bytes lighter than an inline slice would.
	kids *[]*Node[V]
	n    int32 // keys in this subtree, this node included
	has  bool  // this node holds a value (is a key)
	c    byte  // first byte of the edge label, so a search need not load path
	val  V
}

// Key returns the key the node holds.
func (n *Node[V]) Key() string { return n.path }

// Value returns a pointer to the node's value. It stays valid (and the value
// stays in place) while the key is present; after Remove or DeletePrefixNodes
// the value is left as it was, for the caller to clear.
func (n *Node[V]) Value() *V { return &n.val }

// find returns the index of the child with first byte c, or where it would go.
func (n *Node[V]) find(c byte) (int, bool) {
	if n.kids == nil {
		return 0, false
	}
	kids := *n.kids
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
	if i, ok := n.find(c); ok {
		return (*n.kids)[i]
	}
	return nil
}

// addKid inserts k, whose c is not among n's children.
func (n *Node[V]) addKid(k *Node[V]) {
	if n.kids == nil {
		n.kids = &[]*Node[V]{k}
		return
	}
	i, _ := n.find(k.c)
	kids := *n.kids
	if len(kids) == cap(kids) {
		// Grow by an eighth, not append's doubling: child arrays are a large
		// part of the tree's memory and most stop growing at ~10 entries.
		grown := make([]*Node[V], len(kids), len(kids)+len(kids)/8+1)
		copy(grown, kids)
		kids = grown
	}
	kids = append(kids, nil)
	copy(kids[i+1:], kids[i:])
	kids[i] = k
	*n.kids = kids
}

func (n *Node[V]) removeKid(c byte) {
	kids := *n.kids
	if len(kids) == 1 {
		n.kids = nil
		return
	}
	i, _ := n.find(c)
	copy(kids[i:], kids[i+1:])
	kids[len(kids)-1] = nil // let the removed child be collected
	*n.kids = kids[:len(kids)-1]
}

func (n *Node[V]) replaceKid(k *Node[V]) {
	i, _ := n.find(k.c)
	(*n.kids)[i] = k
}

func (n *Node[V]) onlyKid() *Node[V] {
	if n.kids == nil || len(*n.kids) != 1 {
		return nil
	}
	return (*n.kids)[0]
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
			if n.has {
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
		return n.val, true
	}
	var zero V
	return zero, false
}

// Put returns the node for key, creating it if the key is absent. A created
// node's value is the zero V, or, if the node was kept as an inner node after
// Remove, whatever the caller left in it.
func (t *Tree[V]) Put(key string) (n *Node[V], created bool) {
	if n := t.Find(key); n != nil {
		return n, false
	}
	// The key is new: every node on its way gains one key.
	if t.root == nil {
		t.root = &Node[V]{}
	}
	n = t.root
	for {
		n.n++
		d := len(n.path)
		if d == len(key) {
			n.has = true
			return n, true
		}
		c := key[d]
		k := n.child(c)
		if k == nil {
			leaf := &Node[V]{path: key, n: 1, has: true, c: c}
			n.addKid(leaf)
			return leaf, true
		}
		l := d + commonPrefix(k.path[d:], key[d:])
		if l < len(k.path) {
			// The key leaves k's edge part-way: split the edge with an inner
			// node. k keeps its path, so it (and its value) does not move.
			mid := &Node[V]{path: key[:l], n: k.n, c: c}
			n.replaceKid(mid)
			k.c = k.path[l]
			mid.addKid(k)
			k = mid
		}
		n = k
	}
}

// Insert stores v under key and returns the value it replaced, if any.
func (t *Tree[V]) Insert(key string, v V) (old V, replaced bool) {
	n, created := t.Put(key)
	if !created {
		old, replaced = n.val, true
	}
	n.val = v
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
	if n == nil || !n.has {
		return nil
	}
	for _, a := range stack {
		a.n--
	}
	n.has = false
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
	case len(*n.kids) == 1:
		// An inner node with one child is redundant: the child takes its
		// place. Labels are derived from paths, so only c is rewritten.
		k := (*n.kids)[0]
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
	if n.has {
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
	old = n.val
	var zero V
	n.val = zero // the value API owns its values: do not pin them
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

// DeletePrefix removes every key that starts with prefix ("" removes all) and
// calls fn (if not nil) for each removed pair in ascending key order. It
// returns the number removed. The cost follows the number removed: the
// subtree is detached in O(depth) and only visited to call fn.
func (t *Tree[V]) DeletePrefix(prefix string, fn func(key string, v V)) int {
	if fn == nil {
		return t.DeletePrefixNodes(prefix, nil)
	}
	return t.DeletePrefixNodes(prefix, func(n *Node[V]) { fn(n.path, n.val) })
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
	t.WalkPrefixNodesFrom(prefix, after, func(n *Node[V]) bool { return fn(n.path, n.val) })
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
		if n.has && !fn(n) {
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
	for _, k := range *n.kids {
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
