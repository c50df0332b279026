package radix

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// check verifies the structural invariants: paths extend their parent's,
// children are sorted and indexed by their first label byte, counts are
// exact, and every node but the root holds a value or has two children.
func check[V any](t *testing.T, tr *Tree[V]) {
	t.Helper()
	if tr.root == nil {
		return
	}
	var rec func(n, parent *Node[V]) int32
	rec = func(n, parent *Node[V]) int32 {
		var cnt int32
		if n.has() {
			cnt = 1
			if n.flags&valueNode == 0 {
				t.Fatalf("node %q holds a key but has no room for a value", n.path)
			}
		}
		if parent != nil {
			if len(n.path) <= len(parent.path) || !strings.HasPrefix(n.path, parent.path) {
				t.Fatalf("node %q under %q: path does not extend its parent", n.path, parent.path)
			}
			if !n.has() && n.kids == nil {
				t.Fatalf("node %q: inner node with fewer than two children", n.path)
			}
		}
		if n.kids != nil {
			kids := n.kidList()
			if n.kc < n.nk || (parent != nil && !n.has() && len(kids) < 2) {
				t.Fatalf("node %q: bad child array", n.path)
			}
			for i, k := range kids {
				if i > 0 && kids[i-1].c >= k.c {
					t.Fatalf("node %q: children not sorted", n.path)
				}
				if k.path[len(n.path)] != k.c {
					t.Fatalf("node %q: child %q has first byte %q", n.path, k.path, k.c)
				}
				cnt += rec(k, n)
			}
		}
		if cnt != n.n {
			t.Fatalf("node %q: count %d, want %d", n.path, n.n, cnt)
		}
		return cnt
	}
	rec(tr.root, nil)
}

func keysOf[V any](tr *Tree[V], prefix string) []string {
	var got []string
	tr.WalkPrefix(prefix, func(k string, _ V) bool { got = append(got, k); return true })
	return got
}

func TestTreeBasics(t *testing.T) {
	t.Parallel()
	var tr Tree[int]
	keys := []string{"osm/12/2048/1365.mvt", "osm/12/2048/1366.mvt", "osm/1/0/0.mvt", "osm/12/2049/1.mvt", "", "o", "osm", "iiif/a/full/0/default.jpg"}
	for i, k := range keys {
		if _, replaced := tr.Insert(k, i); replaced {
			t.Fatalf("Insert(%q) replaced on first insert", k)
		}
		check(t, &tr)
	}
	if got, want := tr.Len(), len(keys); got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	for i, k := range keys {
		if v, ok := tr.Get(k); !ok || v != i {
			t.Fatalf("Get(%q) = %d, %v, want %d, true", k, v, ok, i)
		}
	}
	for _, k := range []string{"os", "osm/", "osm/12/2048/1365", "osm/12/2048/1365.mvtx", "x"} {
		if _, ok := tr.Get(k); ok {
			t.Fatalf("Get(%q) hit, want miss", k)
		}
	}
	if old, replaced := tr.Insert("osm", 100); !replaced || old != 6 {
		t.Fatalf("Insert(osm) = %d, %v, want 6, true", old, replaced)
	}

	counts := []struct {
		prefix string
		want   int
	}{
		{"", 8}, {"o", 6}, {"osm", 5}, {"osm/", 4}, {"osm/1", 4}, {"osm/12", 3}, {"osm/12/", 3},
		{"osm/12/2048/136", 2}, {"osm/12/2048/1365.mvt", 1}, {"osm/12/2048/1365.mvtx", 0}, {"osm/2", 0}, {"p", 0}, {"iiif/", 1},
	}
	for _, c := range counts {
		t.Run("count/"+c.prefix, func(t *testing.T) {
			if got := tr.CountPrefix(c.prefix); got != c.want {
				t.Errorf("CountPrefix(%q) = %d, want %d", c.prefix, got, c.want)
			}
			if got := len(keysOf(&tr, c.prefix)); got != c.want {
				t.Errorf("WalkPrefix(%q) visited %d, want %d", c.prefix, got, c.want)
			}
		})
	}

	want := slices.Clone(keys)
	slices.Sort(want)
	if got := keysOf(&tr, ""); !slices.Equal(got, want) {
		t.Fatalf("WalkPrefix(\"\") = %q, want %q", got, want)
	}

	if old, ok := tr.Delete("osm"); !ok || old != 100 {
		t.Fatalf("Delete(osm) = %d, %v, want 100, true", old, ok)
	}
	if _, ok := tr.Delete("osm"); ok {
		t.Fatal("second Delete(osm) reported ok")
	}
	check(t, &tr)
	var purged []string
	if n := tr.DeletePrefix("osm/1", func(k string, _ int) { purged = append(purged, k) }); n != 4 {
		t.Fatalf("DeletePrefix(osm/1) = %d, want 4", n)
	}
	check(t, &tr)
	if !slices.IsSorted(purged) || len(purged) != 4 {
		t.Fatalf("DeletePrefix visited %q, want 4 sorted keys", purged)
	}
	if got, want := keysOf(&tr, ""), []string{"", "iiif/a/full/0/default.jpg", "o"}; !slices.Equal(got, want) {
		t.Fatalf("after purge keys = %q, want %q", got, want)
	}
	if n := tr.DeletePrefix("", nil); n != 3 || tr.Len() != 0 {
		t.Fatalf("DeletePrefix(\"\") = %d, Len %d, want 3, 0", n, tr.Len())
	}
	tr.Insert("again", 1)
	if v, ok := tr.Get("again"); !ok || v != 1 {
		t.Fatal("tree not usable after clearing")
	}
}

func TestWalkPrefixFrom(t *testing.T) {
	t.Parallel()
	var tr Tree[int]
	keys := []string{"a", "a/1", "a/10", "a/2", "a/20/x", "a/3", "b", "ba"}
	for i, k := range keys {
		tr.Insert(k, i)
	}
	cases := []struct {
		prefix, after string
		want          []string
	}{
		{"", "", keys},
		{"a/", "", []string{"a/1", "a/10", "a/2", "a/20/x", "a/3"}},
		{"a/", "a/1", []string{"a/10", "a/2", "a/20/x", "a/3"}},
		{"a/", "a/10", []string{"a/2", "a/20/x", "a/3"}},
		{"a/", "a/15", []string{"a/2", "a/20/x", "a/3"}},
		{"a/", "a/2", []string{"a/20/x", "a/3"}},
		{"a/", "a/20", []string{"a/20/x", "a/3"}},
		{"a/", "a/20/x", []string{"a/3"}},
		{"a/", "a/3", nil},
		{"a/", "0", []string{"a/1", "a/10", "a/2", "a/20/x", "a/3"}},
		{"a/", "z", nil},
		{"", "a", []string{"a/1", "a/10", "a/2", "a/20/x", "a/3", "b", "ba"}},
		{"", "a/3", []string{"b", "ba"}},
		{"", "b", []string{"ba"}},
	}
	for _, c := range cases {
		t.Run(c.prefix+"|"+c.after, func(t *testing.T) {
			var got []string
			tr.WalkPrefixFrom(c.prefix, c.after, func(k string, _ int) bool { got = append(got, k); return true })
			if !slices.Equal(got, c.want) {
				t.Errorf("WalkPrefixFrom(%q, %q) = %q, want %q", c.prefix, c.after, got, c.want)
			}
		})
	}
	var got []string
	tr.WalkPrefix("", func(k string, _ int) bool { got = append(got, k); return len(got) < 3 })
	if len(got) != 3 {
		t.Fatalf("walk did not stop: visited %d, want 3", len(got))
	}
}

func TestNodesStayPut(t *testing.T) {
	t.Parallel()
	var tr Tree[int]
	n, created := tr.Put("osm/12/1.mvt")
	if !created {
		t.Fatal("Put of a new key reported not created")
	}
	*n.Value() = 7
	// Splits above and below, and merges after deletes, must not move it.
	for _, k := range []string{"osm/12/10.mvt", "osm/1", "osm/12/1.mvt/x", "osm/12/1", "osm/13"} {
		tr.Insert(k, 0)
	}
	for _, k := range []string{"osm/12/10.mvt", "osm/12/1", "osm/1"} {
		tr.Delete(k)
	}
	check(t, &tr)
	if got := tr.Find("osm/12/1.mvt"); got != n || *got.Value() != 7 || got.Key() != "osm/12/1.mvt" {
		t.Fatalf("Find returned %p (value %d), want the original node %p", got, *got.Value(), n)
	}
	if again, created := tr.Put("osm/12/1.mvt"); again != n || created {
		t.Fatal("Put of a present key did not return its node")
	}
	if got := tr.Remove("osm/12/1.mvt"); got != n || *got.Value() != 7 {
		t.Fatal("Remove did not return the node with its value intact")
	}
	if tr.Find("osm/12/1.mvt") != nil {
		t.Fatal("Find after Remove found the key")
	}
	check(t, &tr)
}

// TestNodeOf: NodeOf leads from a value back to its node, for values of
// any size and alignment, including nodes made by a split (the key is the
// split point) and inner nodes that became keys.
func TestNodeOf(t *testing.T) {
	t.Parallel()
	keys := []string{"osm/12/1.mvt", "osm/12/10.mvt", "osm/12/1", "osm/", ""}
	testNodeOf[byte](t, keys)
	testNodeOf[int](t, keys)
	testNodeOf[struct {
		p    *int
		a, b uint32
		s    string
	}](t, keys)
}

func testNodeOf[V any](t *testing.T, keys []string) {
	t.Helper()
	var tr Tree[V]
	for _, k := range keys {
		tr.Put(k)
	}
	for _, k := range keys {
		if n := tr.Find(k); NodeOf(n.Value()) != n || NodeOf(n.Value()).Key() != k {
			t.Fatalf("%T: NodeOf(Find(%q).Value()) is not that node", *new(V), k)
		}
	}
}

// TestAgainstModel runs seeded random operations against a map and checks
// every answer and the structure after each step.
func TestAgainstModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runModel(t, rand.New(rand.NewPCG(seed, 99)), 3000)
		})
	}
}

func randKey(r *rand.Rand) string {
	const alphabet = "ab/1"
	b := make([]byte, r.IntN(7))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func modelKeys(m map[string]int, prefix, after string) []string {
	var ks []string
	for k := range m {
		if strings.HasPrefix(k, prefix) && (after == "" || k > after) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

func runModel(t *testing.T, r *rand.Rand, steps int) {
	var tr Tree[int]
	model := map[string]int{}
	for step := range steps {
		k := randKey(r)
		switch op := r.IntN(11); op {
		case 0, 1, 2, 3:
			old, replaced := tr.Insert(k, step)
			mold, mok := model[k]
			if replaced != mok || old != mold {
				t.Fatalf("step %d: Insert(%q) = %d, %v, want %d, %v", step, k, old, replaced, mold, mok)
			}
			model[k] = step
		case 4, 5:
			old, ok := tr.Delete(k)
			mold, mok := model[k]
			if ok != mok || old != mold {
				t.Fatalf("step %d: Delete(%q) = %d, %v, want %d, %v", step, k, old, ok, mold, mok)
			}
			delete(model, k)
		case 6:
			if r.IntN(4) != 0 {
				continue // purges are rarer than point writes
			}
			want := modelKeys(model, k, "")
			var got []string
			n := tr.DeletePrefix(k, func(key string, v int) {
				if v != model[key] {
					t.Fatalf("step %d: DeletePrefix(%q) passed %q=%d, want %d", step, k, key, v, model[key])
				}
				got = append(got, key)
			})
			if n != len(want) || !slices.Equal(got, want) {
				t.Fatalf("step %d: DeletePrefix(%q) = %d %q, want %q", step, k, n, got, want)
			}
			for _, key := range want {
				delete(model, key)
			}
		case 7:
			after := ""
			if r.IntN(2) == 0 {
				after = randKey(r)
			}
			want := modelKeys(model, k, after)
			var got []string
			tr.WalkPrefixFrom(k, after, func(key string, v int) bool {
				got = append(got, key)
				return true
			})
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: WalkPrefixFrom(%q, %q) = %q, want %q", step, k, after, got, want)
			}
		case 8:
			if got, want := tr.CountPrefix(k), len(modelKeys(model, k, "")); got != want {
				t.Fatalf("step %d: CountPrefix(%q) = %d, want %d", step, k, got, want)
			}
		case 10:
			// A bounded purge step from a cursor, as the cache's batched
			// DeletePrefix takes them.
			from := ""
			if r.IntN(2) == 0 {
				from = randKey(r)
			}
			limit := r.IntN(5)
			var want []string
			for _, key := range modelKeys(model, k, "") {
				if key >= from {
					want = append(want, key)
				}
			}
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			var got []string
			for _, nd := range tr.DeletePrefixNodesFrom(nil, k, from, limit) {
				if *nd.Value() != model[nd.Key()] {
					t.Fatalf("step %d: DeletePrefixNodesFrom(%q, %q) returned %q=%d, want %d", step, k, from, nd.Key(), *nd.Value(), model[nd.Key()])
				}
				got = append(got, nd.Key())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: DeletePrefixNodesFrom(%q, %q, %d) = %q, want %q", step, k, from, limit, got, want)
			}
			for _, key := range want {
				delete(model, key)
			}
		case 9:
			v, ok := tr.Get(k)
			mv, mok := model[k]
			if ok != mok || v != mv {
				t.Fatalf("step %d: Get(%q) = %d, %v, want %d, %v", step, k, v, ok, mv, mok)
			}
		}
		if tr.Len() != len(model) {
			t.Fatalf("step %d: Len() = %d, want %d", step, tr.Len(), len(model))
		}
		check(t, &tr)
	}
}

// tileKeys returns n distinct keys shaped like XYZ tile paths.
func tileKeys(n int) []string {
	keys := make([]string, 0, n)
	for i := 0; len(keys) < n; i++ {
		x, y := i/1000, i%1000
		keys = append(keys, fmt.Sprintf("osm/14/%d/%d.mvt", 8000+x, 5000+y))
	}
	return keys
}

func BenchmarkGet(b *testing.B) {
	keys := tileKeys(100_000)
	var tr Tree[int]
	for i, k := range keys {
		tr.Insert(k, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := tr.Get(keys[i%len(keys)]); !ok {
			b.Fatal("miss")
		}
	}
}

func BenchmarkInsert(b *testing.B) {
	keys := tileKeys(100_000)
	var tr Tree[int]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%len(keys) == 0 {
			tr = Tree[int]{}
		}
		tr.Insert(keys[i%len(keys)], i)
	}
}

// BenchmarkDeletePrefix100 purges one 100-key directory from a 100k-key
// tree per op, visiting each removed pair; the tree is refilled, untimed,
// once every directory is gone.
func BenchmarkDeletePrefix100(b *testing.B) {
	keys := make([]string, 0, 100_000)
	for x := range 1000 {
		for y := range 100 {
			keys = append(keys, fmt.Sprintf("osm/14/%d/%d.mvt", 8000+x, 5000+y))
		}
	}
	var tr Tree[int]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		x := i % 1000
		if x == 0 {
			b.StopTimer()
			for j, k := range keys {
				tr.Insert(k, j)
			}
			b.StartTimer()
		}
		removed := 0
		n := tr.DeletePrefix("osm/14/"+strconv.Itoa(8000+x)+"/", func(string, int) { removed++ })
		if n != 100 || removed != 100 {
			b.Fatalf("DeletePrefix removed %d (visited %d), want 100", n, removed)
		}
	}
}

// TestWideNode fills one node with all 256 possible children, the limit of
// its 8-bit child count and capacity, and empties it again.
func TestWideNode(t *testing.T) {
	t.Parallel()
	var tr Tree[int]
	for i := range 256 {
		tr.Insert("x"+string([]byte{byte(255 - i)}), i)
		check(t, &tr)
	}
	if got := tr.CountPrefix("x"); got != 256 {
		t.Fatalf("CountPrefix(x) = %d, want 256", got)
	}
	for i := range 256 {
		if v, ok := tr.Get("x" + string([]byte{byte(255 - i)})); !ok || v != i {
			t.Fatalf("Get(x%02x) = %d, %v, want %d, true", 255-i, v, ok, i)
		}
	}
	for i := 0; i < 256; i += 2 {
		tr.Delete("x" + string([]byte{byte(i)}))
	}
	check(t, &tr)
	nodes := tr.DeletePrefixNodesFrom(nil, "x", "x\x80", 10)
	if len(nodes) != 10 || nodes[0].Key() != "x\x81" || nodes[9].Key() != "x\x93" {
		t.Fatalf("DeletePrefixNodesFrom removed %d from %q", len(nodes), nodes[0].Key())
	}
	check(t, &tr)
	if n := tr.DeletePrefix("x", nil); n != 118 || tr.Len() != 0 {
		t.Fatalf("DeletePrefix(x) = %d, Len %d, want 118, 0", n, tr.Len())
	}
}

// BenchmarkRemovePutSparse removes and puts back random keys of a tree of
// 300,000 sparse tile keys (random layer, zoom 8-14, x and y), the write
// pattern of an evicting cache: descents through scattered nodes.
func BenchmarkRemovePutSparse(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]string, 300_000)
	for i := range keys {
		z := 8 + r.IntN(7)
		keys[i] = fmt.Sprintf("%s/%d/%d/%d", []string{"osm", "sat", "ter", "tra"}[r.IntN(4)], z, r.IntN(1<<z), r.IntN(1<<z))
	}
	var tr Tree[int]
	for i, k := range keys {
		tr.Insert(k, i)
	}
	perm := r.Perm(len(keys))
	for i := 0; b.Loop(); i++ {
		k := keys[perm[i%len(perm)]]
		tr.Remove(k)
		tr.Put(k)
	}
}
