package memory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// unitCache returns a cache that holds exactly n entries with one-byte keys
// and empty tiles.
func unitCache(t *testing.T, n int) *Cache {
	t.Helper()
	c, err := New(Config{MaxBytes: int64(n) * weight("k", empty), MaxEntryFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var empty = &tile.Tile{}

func mustCheck(t *testing.T, c *Cache) {
	t.Helper()
	if err := c.check(); err != nil {
		t.Fatal(err)
	}
}

func wantQueue(t *testing.T, c *Cache, keys string, hand string) {
	t.Helper()
	got, _, gotHand, _ := c.queue()
	if strings.Join(got, "") != keys || gotHand != hand {
		t.Fatalf("queue (tail→head) %q hand %q, want %q hand %q", strings.Join(got, ""), gotHand, keys, hand)
	}
	mustCheck(t, c)
}

func setAll(t *testing.T, c *Cache, keys string) {
	t.Helper()
	for _, k := range keys {
		if !c.Set(string(k), empty) {
			t.Fatalf("Set(%q) refused", k)
		}
	}
}

func getAll(t *testing.T, c *Cache, keys string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := c.Get(string(k)); !ok {
			t.Fatalf("Get(%q) missed", k)
		}
	}
}

// TestSieveTrace replays a trace in the spirit of the paper's Figure 2: seven
// slots, some entries visited, then misses that move the hand, clear bits,
// wrap around, and never move survivors.
func TestSieveTrace(t *testing.T) {
	t.Parallel()
	c := unitCache(t, 7)
	setAll(t, c, "ABCDEFG")
	getAll(t, c, "ABG")
	wantQueue(t, c, "ABCDEFG", "")

	setAll(t, c, "H") // hand from the tail: A, B visited (cleared), C evicted
	wantQueue(t, c, "ABDEFGH", "D")
	getAll(t, c, "AD")

	setAll(t, c, "I") // D cleared, E evicted
	wantQueue(t, c, "ABDFGHI", "F")
	setAll(t, c, "J") // F unvisited: evicted at once
	wantQueue(t, c, "ABDGHIJ", "G")

	getAll(t, c, "HIJ")
	// G H I J cleared, the hand passes the head and wraps: A cleared, B evicted.
	setAll(t, c, "K")
	wantQueue(t, c, "ADGHIJK", "D")
	_, visited, _, _ := c.queue()
	if slices.Contains(visited, true) {
		t.Fatalf("visited bits %v, want all cleared", visited)
	}
	if st := c.Stats(); st.Evictions != 4 || st.Entries != 7 {
		t.Fatalf("stats %+v, want 4 evictions, 7 entries", st)
	}
	for _, k := range "CEFB" {
		if _, ok := c.Get(string(k)); ok {
			t.Fatalf("evicted %q still served", k)
		}
	}
}

// TestHandOnDelete removes the entry under the hand: the hand must move to
// the next entry toward the head, which is then the next victim.
func TestHandOnDelete(t *testing.T) {
	t.Parallel()
	c := unitCache(t, 4)
	setAll(t, c, "ABCD")
	getAll(t, c, "AB")
	setAll(t, c, "E") // A, B cleared, C evicted
	wantQueue(t, c, "ABDE", "D")

	if !c.Delete("D") {
		t.Fatal("Delete(D) = false")
	}
	wantQueue(t, c, "ABE", "E")
	setAll(t, c, "FG") // F fills the free slot; G evicts E (under the hand), not A
	wantQueue(t, c, "ABFG", "F")

	// The hand on the head: deleting it leaves the hand unset (wrap to tail).
	c.Delete("F")
	c.Delete("G")
	wantQueue(t, c, "AB", "")
}

func TestHandOnDeletePrefix(t *testing.T) {
	t.Parallel()
	unit := weight("a/1", empty)
	c, err := New(Config{MaxBytes: 6 * unit, MaxEntryFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/1", "b/1", "p/1", "p/2", "p/3", "c/1"} {
		c.Set(k, empty)
	}
	c.Get("a/1")
	c.Get("b/1")
	c.Set("d/1", empty) // a/1, b/1 cleared, p/1 evicted, hand on p/2
	wantKeys := func(want []string, hand string) {
		t.Helper()
		got, _, gotHand, _ := c.queue()
		if !slices.Equal(got, want) || gotHand != hand {
			t.Fatalf("queue %q hand %q, want %q hand %q", got, gotHand, want, hand)
		}
		mustCheck(t, c)
	}
	wantKeys([]string{"a/1", "b/1", "p/2", "p/3", "c/1", "d/1"}, "p/2")
	// The hand and its newer neighbour go: the hand lands on c/1.
	if n, b := c.DeletePrefix("p/"); n != 2 || b != 2*unit {
		t.Fatalf("DeletePrefix(p/) = %d, %d, want 2, %d", n, b, 2*unit)
	}
	wantKeys([]string{"a/1", "b/1", "c/1", "d/1"}, "c/1")
	c.Set("e/1", empty)
	c.Set("f/1", empty)
	c.Set("g/1", empty) // evicts c/1 under the hand, not a/1
	wantKeys([]string{"a/1", "b/1", "d/1", "e/1", "f/1", "g/1"}, "d/1")

	// Replacing the entry under the hand by a tile of the same weight swaps
	// it in place: nothing moves, and the entry counts as hit.
	v2 := &tile.Tile{StoredAt: time.Unix(2, 0)}
	c.Set("d/1", v2)
	wantKeys([]string{"a/1", "b/1", "d/1", "e/1", "f/1", "g/1"}, "d/1")
	if got, _ := c.peek("d/1"); got != v2 {
		t.Fatalf("d/1 holds %+v, want v2", got)
	}
	// Replacing it by a heavier tile moves the hand off it to e/1, which
	// is then evicted to make room; the new version enters at the head.
	c.Set("d/1", &tile.Tile{Body: []byte("v3"), ETag: "v3"})
	wantKeys([]string{"a/1", "b/1", "f/1", "g/1", "d/1"}, "f/1")
	mustCheck(t, c)
}

// TestReplacement: a tile of the same weight is swapped in place and marks
// the entry visited; one of another weight re-enters at the head unvisited.
func TestReplacement(t *testing.T) {
	t.Parallel()
	c, err := New(Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	setAll(t, c, "ABCD")
	same := &tile.Tile{StoredAt: time.Unix(1, 0)} // revalidated: same weight
	if !c.Set("B", same) {
		t.Fatal("same-weight replacement refused")
	}
	wantQueue(t, c, "ABCD", "")
	if _, visited, _, _ := c.queue(); !slices.Equal(visited, []bool{false, true, false, false}) {
		t.Fatalf("visited %v, want only B", visited)
	}
	heavier := &tile.Tile{Body: []byte("xyz")}
	if !c.Set("C", heavier) {
		t.Fatal("heavier replacement refused")
	}
	wantQueue(t, c, "ABDC", "")
	if _, visited, _, _ := c.queue(); !slices.Equal(visited, []bool{false, true, false, false}) {
		t.Fatalf("visited %v, want only B", visited)
	}
	for k, want := range map[string]*tile.Tile{"B": same, "C": heavier} {
		if got, ok := c.Get(k); !ok || got != want {
			t.Fatalf("Get(%s) = %+v, want the replacement", k, got)
		}
	}
	if st := c.Stats(); st.Sets != 6 || st.Entries != 4 || c.Bytes() != 3*weight("A", empty)+weight("C", heavier) {
		t.Fatalf("stats %+v, bytes %d", st, c.Bytes())
	}
	mustCheck(t, c)
}

func TestGetHitAllocatesNothing(t *testing.T) {
	c := unitCache(t, 10)
	c.Set("k", empty)
	if allocs := testing.AllocsPerRun(1000, func() {
		if _, ok := c.Get("k"); !ok {
			t.Fatal("miss")
		}
	}); allocs != 0 {
		t.Fatalf("Get hit allocates %v times, want 0", allocs)
	}
}

func TestAdmission(t *testing.T) {
	t.Parallel()
	c, err := New(Config{MaxBytes: 8000})
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(8000 / 8) // the default fraction
	// The largest body whose entry weighs no more than the limit.
	n := 0
	for weight("k", &tile.Tile{Body: make([]byte, n+1)}) <= limit {
		n++
	}
	fits := &tile.Tile{Body: make([]byte, n)}
	tooBig := &tile.Tile{Body: make([]byte, n+1)}
	if !c.Set("k", fits) {
		t.Fatal("Set of an entry at the limit refused")
	}
	if c.Set("k", tooBig) {
		t.Fatal("Set of an entry over the limit admitted")
	}
	if _, ok := c.Get("k"); ok {
		t.Fatal("refused replacement left the old version in place")
	}
	if c.Set("k", nil) {
		t.Fatal("Set of a nil tile admitted")
	}
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Fatalf("Len %d Bytes %d, want 0, 0", c.Len(), c.Bytes())
	}
	mustCheck(t, c)
}

func TestReplacementAdjustsBytes(t *testing.T) {
	t.Parallel()
	c := unitCache(t, 100)
	c.Set("key", &tile.Tile{Body: make([]byte, 10)})
	c.Set("key", &tile.Tile{Body: make([]byte, 3), ETag: "v2"})
	if got, want := c.Bytes(), weight("key", &tile.Tile{Body: make([]byte, 3), ETag: "v2"}); got != want {
		t.Fatalf("Bytes() = %d, want %d", got, want)
	}
	if got, _ := c.Get("key"); got.ETag != "v2" {
		t.Fatalf("Get returned version %q, want v2", got.ETag)
	}
	if c.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", c.Len())
	}
	mustCheck(t, c)
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		cfg    Config
		nerrs  int
		substr string
	}{
		{Config{MaxBytes: 1}, 0, ""},
		{Config{MaxBytes: 0}, 1, "MaxBytes"},
		{Config{MaxBytes: 10, MaxEntryFraction: 1.5}, 1, "MaxEntryFraction"},
		{Config{MaxBytes: -1, MaxEntryFraction: -1}, 2, "MaxEntryFraction"},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if tc.nerrs == 0 {
			if err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", tc.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.substr) || strings.Count(err.Error(), "cache:") != tc.nerrs {
			t.Errorf("Validate(%+v) = %v, want %d problems mentioning %s", tc.cfg, err, tc.nerrs, tc.substr)
		}
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("New(%+v) succeeded", tc.cfg)
		}
	}
}

func TestDeletePrefixShapes(t *testing.T) {
	t.Parallel()
	keys := []string{"osm/1/0/0.mvt", "osm/12/1/2.mvt", "osm/12/1/3.mvt", "osm/2/1/1.mvt", "osmx/1", "iiif/a/0", "o"}
	cases := []struct {
		prefix string
		want   []string // the keys removed
	}{
		{"osm/", []string{"osm/1/0/0.mvt", "osm/12/1/2.mvt", "osm/12/1/3.mvt", "osm/2/1/1.mvt"}},
		{"osm/1", []string{"osm/1/0/0.mvt", "osm/12/1/2.mvt", "osm/12/1/3.mvt"}},
		{"osm/1/", []string{"osm/1/0/0.mvt"}},
		{"osm/12/1/2.mvt", []string{"osm/12/1/2.mvt"}},
		{"osm/12/1/2.mvt/", nil},
		{"osm", []string{"osm/1/0/0.mvt", "osm/12/1/2.mvt", "osm/12/1/3.mvt", "osm/2/1/1.mvt", "osmx/1"}},
		{"o", []string{"osm/1/0/0.mvt", "osm/12/1/2.mvt", "osm/12/1/3.mvt", "osm/2/1/1.mvt", "osmx/1", "o"}},
		{"p", nil},
		{"", keys},
	}
	for _, tc := range cases {
		t.Run(tc.prefix, func(t *testing.T) {
			t.Parallel()
			c := unitCache(t, 100)
			var wantBytes int64
			for i, k := range keys {
				tl := &tile.Tile{Body: make([]byte, i)}
				c.Set(k, tl)
				if slices.Contains(tc.want, k) {
					wantBytes += weight(k, tl)
				}
			}
			n, b := c.DeletePrefix(tc.prefix)
			if n != len(tc.want) || b != wantBytes {
				t.Fatalf("DeletePrefix(%q) = %d, %d, want %d, %d", tc.prefix, n, b, len(tc.want), wantBytes)
			}
			for _, k := range keys {
				_, ok := c.Get(k)
				if ok == slices.Contains(tc.want, k) {
					t.Errorf("after DeletePrefix(%q): Get(%q) hit = %v", tc.prefix, k, ok)
				}
			}
			mustCheck(t, c)
		})
	}
}

// TestDeletePrefixBatches purges more keys than one batch while another
// goroutine reads and writes, and checks everything under the prefix is gone.
func TestDeletePrefixBatches(t *testing.T) {
	t.Parallel()
	c, _ := New(Config{MaxBytes: 1 << 30})
	const n = 3*purgeBatch + 17
	for i := range n {
		c.Set(fmt.Sprintf("big/%05d", i), empty)
	}
	c.Set("other", empty)
	c.Set("", empty)
	entries, bytes := c.DeletePrefix("big/")
	if w := n * weight("big/00000", empty); entries != n || bytes != w {
		t.Fatalf("DeletePrefix = %d, %d, want %d, %d", entries, bytes, n, w)
	}
	if c.Len() != 2 {
		t.Fatalf("Len() = %d, want 2", c.Len())
	}
	mustCheck(t, c)
	if entries, _ := c.DeletePrefix(""); entries != 2 || c.Len() != 0 {
		t.Fatalf("DeletePrefix(\"\") = %d (Len %d), want 2 (0)", entries, c.Len())
	}
	mustCheck(t, c)
}

func TestScan(t *testing.T) {
	t.Parallel()
	c, _ := New(Config{MaxBytes: 1 << 30})
	var want []string
	for i := range 3*scanChunk + 5 {
		k := fmt.Sprintf("s/%04d", i)
		want = append(want, k)
		c.Set(k, &tile.Tile{Body: make([]byte, i%7), ETag: k})
	}
	c.Set("t/1", empty)
	c.Set("", empty)
	collect := func(prefix string, limit, stop int) []string {
		var got []string
		c.Scan(prefix, limit, func(it Item) bool {
			if it.ETag != it.Key && it.Key != "t/1" && it.Key != "" {
				t.Fatalf("item %+v carries the wrong ETag", it)
			}
			got = append(got, it.Key)
			return stop <= 0 || len(got) < stop
		})
		return got
	}
	if got := collect("s/", 0, 0); !slices.Equal(got, want) {
		t.Fatalf("Scan(s/) returned %d keys, want %d in order", len(got), len(want))
	}
	if got := collect("s/", 100, 0); !slices.Equal(got, want[:100]) {
		t.Fatalf("Scan(s/, limit 100) returned %d keys, want the first 100", len(got))
	}
	if got := collect("s/", 0, 70); !slices.Equal(got, want[:70]) {
		t.Fatalf("Scan stopped by fn returned %d keys, want 70", len(got))
	}
	if got := collect("", 2, 0); !slices.Equal(got, []string{"", "s/0000"}) {
		t.Fatalf("Scan(\"\", 2) = %q", got)
	}
	if got := collect("", 0, 0); len(got) != len(want)+2 || got[0] != "" || got[len(got)-1] != "t/1" {
		t.Fatalf("Scan(\"\") returned %d keys, want %d from \"\" to t/1", len(got), len(want)+2)
	}
	// fn may call the cache: the lock is not held while delivering.
	c.Scan("s/", 10, func(it Item) bool { c.Delete(it.Key); return true })
	if got := collect("s/", 0, 0); !slices.Equal(got, want[10:]) {
		t.Fatalf("after deleting from fn Scan returned %d keys, want %d", len(got), len(want)-10)
	}
}

// model is the reference: which keys are present and with which tile. It
// cannot know which key eviction picks, so checks allow keys to vanish.
type model struct {
	t        *testing.T
	c        *Cache
	present  map[string]*tile.Tile
	universe []string
	exact    bool // the cache never evicts: demand exact agreement
}

// apply runs one operation on the cache and the model.
func (m *model) apply(op, ki, arg byte) {
	k := m.universe[int(ki)%len(m.universe)]
	switch op % 6 {
	case 0, 1:
		tl := &tile.Tile{Body: make([]byte, int(arg)%64), ETag: fmt.Sprint(arg)}
		if m.c.Set(k, tl) {
			m.present[k] = tl
		} else {
			delete(m.present, k)
		}
	case 2:
		got, ok := m.c.Get(k)
		want, wok := m.present[k]
		if ok && got != want {
			m.t.Fatalf("Get(%q) = %+v, want %+v", k, got, want)
		}
		if ok && !wok {
			m.t.Fatalf("Get(%q) hit a key the model deleted", k)
		}
		if m.exact && !ok && wok {
			m.t.Fatalf("Get(%q) missed a present key", k)
		}
		if !ok {
			delete(m.present, k) // evicted
		}
	case 3:
		ok := m.c.Delete(k)
		_, wok := m.present[k]
		if ok && !wok {
			m.t.Fatalf("Delete(%q) found a key the model does not have", k)
		}
		if m.exact && ok != wok {
			m.t.Fatalf("Delete(%q) = %v, want %v", k, ok, wok)
		}
		delete(m.present, k)
	case 4:
		prefix := k[:int(arg)%(len(k)+1)]
		m.sync()
		var want []string
		var wantBytes int64
		for key, tl := range m.present {
			if strings.HasPrefix(key, prefix) {
				want = append(want, key)
				wantBytes += weight(key, tl)
			}
		}
		n, b := m.c.DeletePrefix(prefix)
		if n != len(want) || b != wantBytes {
			m.t.Fatalf("DeletePrefix(%q) = %d, %d, want %d, %d", prefix, n, b, len(want), wantBytes)
		}
		for _, key := range want {
			delete(m.present, key)
		}
	case 5:
		prefix := k[:int(arg)%(len(k)+1)]
		limit := int(arg % 5)
		var got []Item
		m.c.Scan(prefix, limit, func(it Item) bool { got = append(got, it); return true })
		var actual []string // what the cache holds under prefix
		for _, key := range m.universe {
			if _, ok := m.c.peek(key); ok && strings.HasPrefix(key, prefix) {
				actual = append(actual, key)
			}
		}
		if limit > 0 && len(actual) > limit {
			actual = actual[:limit]
		}
		keys := make([]string, len(got))
		for i, it := range got {
			keys[i] = it.Key
			tl, ok := m.present[it.Key]
			if !ok || it.Size != tl.Size() || it.ETag != tl.ETag {
				m.t.Fatalf("Scan(%q) item %+v not in the model (%v)", prefix, it, ok)
			}
		}
		if !slices.Equal(keys, actual) {
			m.t.Fatalf("Scan(%q, %d) = %q, want %q", prefix, limit, keys, actual)
		}
	}
	m.verify()
}

// sync forgets model keys the cache has evicted.
func (m *model) sync() {
	for k := range m.present {
		if _, ok := m.c.peek(k); !ok {
			if m.exact {
				m.t.Fatalf("present key %q missing without eviction", k)
			}
			delete(m.present, k)
		}
	}
}

// verify checks the cache against the model and its own invariants.
func (m *model) verify() {
	m.t.Helper()
	if err := m.c.check(); err != nil {
		m.t.Fatal(err)
	}
	m.sync()
	var sum int64
	for _, k := range m.universe {
		got, ok := m.c.peek(k)
		want, wok := m.present[k]
		if ok != wok || got != want {
			m.t.Fatalf("key %q: cache has %v (%p), model %v (%p)", k, ok, got, wok, want)
		}
		if ok {
			sum += weight(k, got)
		}
	}
	if m.c.Bytes() != sum || m.c.Len() != len(m.present) {
		m.t.Fatalf("Bytes %d Len %d, want %d, %d", m.c.Bytes(), m.c.Len(), sum, len(m.present))
	}
	if m.exact && m.c.Stats().Evictions != 0 {
		m.t.Fatal("evicted in a cache sized never to evict")
	}
}

func testUniverse() []string {
	var u []string
	for _, top := range []string{"", "a", "a/", "a/1", "a/1/", "a/12", "b"} {
		for _, leaf := range []string{"", "0", "1", "10", "2"} {
			u = append(u, top+leaf)
		}
	}
	slices.Sort(u)
	return slices.Compact(u)
}

// heaviestModelEntry is the weight of the heaviest entry model.apply sets.
var heaviestModelEntry = weight("a/12/10", &tile.Tile{Body: make([]byte, 63), ETag: "255"})

func newModel(t *testing.T, maxBytes int64, exact bool) *model {
	c, err := New(Config{MaxBytes: maxBytes, MaxEntryFraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	return &model{t: t, c: c, present: map[string]*tile.Tile{}, universe: testUniverse(), exact: exact}
}

func TestAgainstModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxBytes int64
		exact    bool
	}{
		{"evicting", 6 * weight("a/1", &tile.Tile{Body: make([]byte, 24)}), false},
		{"tight", 2 * heaviestModelEntry, false},
		{"roomy", 1 << 30, true},
	} {
		for seed := range uint64(8) {
			t.Run(fmt.Sprint(tc.name, seed), func(t *testing.T) {
				t.Parallel()
				m := newModel(t, tc.maxBytes, tc.exact)
				r := rand.New(rand.NewPCG(seed, 7))
				for range 1500 {
					m.apply(byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)))
				}
			})
		}
	}
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 10, 0, 2, 20, 2, 1, 0, 4, 3, 1, 5, 0, 0})
	f.Add([]byte{0, 0, 63, 0, 5, 63, 0, 9, 63, 0, 12, 63, 2, 5, 0, 3, 9, 0, 5, 0, 2})
	f.Add([]byte{1, 7, 1, 1, 8, 2, 1, 9, 3, 4, 7, 1, 4, 0, 0, 5, 8, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		// The first byte picks the size, so small caches (evicting) and big
		// ones (exact) both get explored.
		if len(data) == 0 {
			return
		}
		exact := data[0]&1 == 1
		maxBytes := int64(data[0]>>1)*16 + heaviestModelEntry
		if exact {
			maxBytes = 1 << 30
		}
		m := newModel(t, maxBytes, exact)
		for ops := data[1:]; len(ops) >= 3; ops = ops[3:] {
			m.apply(ops[0], ops[1], ops[2])
		}
	})
}

// TestConcurrentStress runs every operation from many goroutines on a small
// cache (so evictions race with everything else), then checks invariants.
func TestConcurrentStress(t *testing.T) {
	t.Parallel()
	bound := 50 * weight("t/0/0/00", &tile.Tile{Body: make([]byte, 16), ETag: "4000"})
	c, _ := New(Config{MaxBytes: bound})
	const workers, ops = 8, 4000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range ops {
				k := fmt.Sprintf("t/%d/%d/%d", r.IntN(3), r.IntN(10), r.IntN(20))
				switch p := r.IntN(100); {
				case p < 55:
					if tl, ok := c.Get(k); ok && tl.ETag == "" {
						t.Error("Get returned a tile without its ETag")
					}
				case p < 85:
					// Four sizes, so that a quarter of replacements take
					// the lock-free same-weight path.
					c.Set(k, &tile.Tile{Body: make([]byte, 8*r.IntN(4)), ETag: fmt.Sprint(i)})
				case p < 93:
					c.Delete(k)
				case p < 95:
					// Mostly directory-sized purges, now and then all of t/.
					c.DeletePrefix(k[:max(2, len(k)-r.IntN(5))])
				default:
					last := ""
					c.Scan(k[:r.IntN(5)], r.IntN(100), func(it Item) bool {
						if it.Key <= last && last != "" {
							t.Errorf("Scan out of order: %q after %q", it.Key, last)
						}
						last = it.Key
						return true
					})
				}
				if c.Bytes() > bound {
					t.Errorf("Bytes() = %d over the bound", c.Bytes())
				}
			}
		})
	}
	wg.Wait()
	mustCheck(t, c)
	st := c.Stats()
	if st.Hits+st.Misses == 0 || st.Evictions == 0 || st.Entries != int64(c.Len()) {
		t.Fatalf("stats %+v do not reflect the run", st)
	}
}

// TestProbation: a new entry heavier than the mean of new entries, whose key
// is not in the ghost, enters where the hand looks next, so it is the next
// victim unless a Get hits it first; evicted, its key is in the ghost, and
// its next Set enters at the head.
func TestProbation(t *testing.T) {
	t.Parallel()
	heavy := &tile.Tile{Body: make([]byte, 200)}
	light := weight("k", empty)
	for _, tc := range []struct {
		name      string
		hit       bool   // Get H before the next eviction
		afterG    string // queue after G evicts
		handG     string
		evicted   string // what G evicted
		last      string // the key Set last: H again, or a light I
		afterLast string
		handLast  string
	}{
		{"not hit: evicted next, then back at the head", false, "ABCDEFG", "A", "H", "H", "BCDEFGH", "B"},
		{"hit: survives the hand like any entry", true, "HBCDEFG", "B", "A", "I", "HCDEFGI", "C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{MaxBytes: 6*light + weight("H", heavy), MaxEntryFraction: 1})
			if err != nil {
				t.Fatal(err)
			}
			setAll(t, c, "ABCDEF")
			if !c.Set("H", heavy) {
				t.Fatal("Set(H) refused")
			}
			wantQueue(t, c, "HABCDEF", "H")
			if tc.hit {
				getAll(t, c, "H")
			}
			setAll(t, c, "G")
			wantQueue(t, c, tc.afterG, tc.handG)
			if _, ok := c.Get(tc.evicted); ok {
				t.Fatalf("got a hit on %q, want it evicted", tc.evicted)
			}
			tl := empty
			if tc.last == "H" {
				tl = heavy
			}
			if !c.Set(tc.last, tl) {
				t.Fatalf("Set(%q) refused", tc.last)
			}
			wantQueue(t, c, tc.afterLast, tc.handLast)
		})
	}
}

// TestGhostBytes measures the heap the ghost holds per remembered hash, full
// and churning: at a quarter as many hashes as entries, it must fit in what
// EntryOverhead charges beyond the measured bookkeeping (TestBookkeepingBytes:
// at most 101.5 of 112 bytes per entry).
func TestGhostBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("heap measurement")
	}
	for _, n := range []int{1 << 14, 1 << 17} { // smaller ones drown in the heap's noise
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(n), 1))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			g := new(ghost)
			for range 3 * n { // fill, then turn the ring over twice
				g.add(r.Uint32()&^visitedBit, n)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
			runtime.KeepAlive(g)
			t.Logf("ghost: %.1f bytes per remembered hash, %.1f per entry at 1/%d", per, per/ghostFrac, ghostFrac)
			if per/ghostFrac > 112-101.5 {
				t.Errorf("got %.1f bytes per entry, want ≤ %.1f", per/ghostFrac, 112-101.5)
			}
		})
	}
}

// TestWriterWaitsForHolder: a Set that meets a holder of the writer mutex,
// however long it is held (a purge batch, a table rebuild), neither goes
// ahead of it nor gives up; it stores once the holder lets go. The holder
// keeps the mutex through many more yields than lock makes before it
// blocks, so the writer normally ends up blocked in Lock; what is asserted
// holds either way.
func TestWriterWaitsForHolder(t *testing.T) {
	t.Parallel()
	c, err := New(Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	done := make(chan bool)
	go func() { done <- c.Set("k", empty) }()
	for range 20 * lockSpins {
		runtime.Gosched()
		if _, ok := c.peek("k"); ok {
			c.mu.Unlock()
			t.Fatal("Set stored its entry while another goroutine held the writer mutex")
		}
	}
	select {
	case <-done:
		c.mu.Unlock()
		t.Fatal("Set returned while another goroutine held the writer mutex")
	default:
	}
	c.mu.Unlock()
	if !<-done {
		t.Fatal("Set refused the entry")
	}
	if got, ok := c.Get("k"); !ok || got != empty {
		t.Fatalf("Get(k) = %v, %v after the holder let go", got, ok)
	}
	mustCheck(t, c)
}
