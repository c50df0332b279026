package purge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestCoalesce(t *testing.T) {
	t.Parallel()
	seq := func(format string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	tests := []struct {
		name string
		keys []string
		cfg  CoalesceConfig
		want []string
	}{
		{"empty", nil, CoalesceConfig{}, []string{}},
		{"one", []string{"osm/1/0/0.png"}, CoalesceConfig{}, []string{"osm/1/0/0.png"}},
		{"dedup and sort", []string{"b/1.png", "a/1.png", "b/1.png"}, CoalesceConfig{}, []string{"a/1.png", "b/1.png"}},
		{"covered dropped", []string{"osm/12/", "osm/12/1/2.png", "osm/1"}, CoalesceConfig{}, []string{"osm/1"}},
		{"everything", []string{"a/1.png", ""}, CoalesceConfig{}, []string{""}},
		{"at threshold stays", seq("osm/12/2048/%d.png", 8), CoalesceConfig{}, seq("osm/12/2048/%d.png", 8)},
		{"past threshold", seq("osm/12/2048/%d.png", 9), CoalesceConfig{}, []string{"osm/12/2048/"}},
		{"crowded dirs climb", seq("osm/12/%d/0.png", 9), CoalesceConfig{Threshold: 8}, seq("osm/12/%d/0.png", 9)},
		{
			"dir of crowded dirs",
			func() []string {
				var k []string
				for x := range 9 {
					for y := range 9 {
						k = append(k, fmt.Sprintf("osm/12/%d/%d.png", x, y))
					}
				}
				return k
			}(),
			CoalesceConfig{}, []string{"osm/12/"},
		},
		{
			"cap picks deepest common dirs",
			append(seq("osm/12/2048/%d.png", 3), seq("osm/%d/0/0.png", 13)...),
			CoalesceConfig{},
			// 16 entries; the three in osm/12/2048/ are the deepest pair-able
			// ones and become one directory.
			append([]string{"osm/0/0/0.png", "osm/1/0/0.png", "osm/10/0/0.png", "osm/11/0/0.png", "osm/12/0/0.png", "osm/12/2048/"},
				"osm/2/0/0.png", "osm/3/0/0.png", "osm/4/0/0.png", "osm/5/0/0.png", "osm/6/0/0.png", "osm/7/0/0.png", "osm/8/0/0.png", "osm/9/0/0.png"),
		},
		{"cap climbs to common dir", seq("osm/%d/0/0.png", 20), CoalesceConfig{Threshold: 100}, []string{"osm/"}},
		{"cap climbs to root", []string{"a/1", "b/1", "c/1"}, CoalesceConfig{Cap: 2}, []string{""}},
		{"cap of one", []string{"a/b/1", "a/c/1"}, CoalesceConfig{Cap: 1}, []string{"a/"}},
		{"keys at top level", seq("%d.png", 9), CoalesceConfig{}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Coalesce(tt.keys, tt.cfg)
			if got == nil {
				got = []string{}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			checkCover(t, tt.keys, got, tt.cfg.withDefaults().Cap)
		})
	}
}

// checkCover checks the promises of Coalesce.
func checkCover(t *testing.T, keys, got []string, limit int) {
	t.Helper()
	if len(got) > limit {
		t.Fatalf("%d prefixes, cap %d", len(got), limit)
	}
	if !slices.IsSorted(got) {
		t.Fatalf("not sorted: %q", got)
	}
	for i, p := range got {
		for j, q := range got {
			if i != j && strings.HasPrefix(q, p) {
				t.Fatalf("%q covers %q", p, q)
			}
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(k, p) }) {
			t.Fatalf("key %q not covered by %q", k, got)
		}
	}
}

// randomKeys makes keys shaped like tile pyramids: a few tilesets, XYZ paths,
// and now and then a prefix or an odd name.
func randomKeys(r *rand.Rand, n int) []string {
	sets := []string{"osm", "sat", "dem/v2", "iiif/book1", "a b"}
	keys := make([]string, 0, n)
	for range n {
		set := sets[r.IntN(len(sets))]
		z := r.IntN(6)
		switch r.IntN(20) {
		case 0:
			keys = append(keys, fmt.Sprintf("%s/%d/", set, z))
		case 1:
			keys = append(keys, fmt.Sprintf("%s/%d", set, z))
		default:
			x, y := r.IntN(1<<z+1), r.IntN(1<<z+1)
			keys = append(keys, fmt.Sprintf("%s/%d/%d/%d.png", set, z, x, y))
		}
	}
	return keys
}

func TestCoalesceProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		keys := randomKeys(r, 1+r.IntN(200))
		cfg := CoalesceConfig{Threshold: r.IntN(12), Cap: r.IntN(20)}
		got := Coalesce(keys, cfg)
		checkCover(t, keys, got, cfg.withDefaults().Cap)
		if len(got) == 0 {
			t.Fatalf("round %d: no prefixes for %d keys", i, len(keys))
		}
		// Nothing is purged that is not an input or a directory of one.
		for _, p := range got {
			if !slices.ContainsFunc(keys, func(k string) bool {
				return k == p || (strings.HasPrefix(k, p) && (p == "" || strings.HasSuffix(p, "/")))
			}) {
				t.Fatalf("round %d: prefix %q is neither an input nor a directory of one", i, p)
			}
		}
		// A batch already small and uncrowded comes back as it is.
		if m := minimal(keys); len(m) <= cfg.withDefaults().Cap && maxDirect(m) <= cfg.withDefaults().Threshold {
			if !slices.Equal(got, m) {
				t.Fatalf("round %d: got %q, want the input %q", i, got, m)
			}
		}
	}
}

func maxDirect(items []string) int {
	n := map[string]int{}
	best := 0
	for _, it := range items {
		n[parent(it)]++
		best = max(best, n[parent(it)])
	}
	return best
}

// TestCoalesceStorm: 10,000 keys spread over one tileset's pyramid.
func TestCoalesceStorm(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	var keys []string
	for range 10000 {
		z := 10 + r.IntN(9)
		keys = append(keys, fmt.Sprintf("osm/%d/%d/%d.png", z, r.IntN(1<<z), r.IntN(1<<z)))
	}
	got := Coalesce(keys, CoalesceConfig{})
	checkCover(t, keys, got, 15)
	if len(got) == 0 || len(got) > 15 {
		t.Fatalf("got %d prefixes", len(got))
	}
	t.Logf("10,000 keys → %q", got)
}

func TestParent(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a/b/c.png": "a/b/", "a/b/": "a/", "a/": "", "a": "", "a//": "a/", "/": "", "a/b": "a/",
	} {
		if got := parent(in); got != want {
			t.Errorf("parent(%q): got %q, want %q", in, got, want)
		}
	}
}

func BenchmarkCoalesce10000(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := randomKeys(r, 10000)
	b.ReportAllocs()
	for b.Loop() {
		Coalesce(keys, CoalesceConfig{})
	}
}

func TestCoalesceShrink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		targets []string
		limit   int
		want    []string
	}{
		{"within the limit", []string{"a/", "b/1.png"}, 2, []string{"a/", "b/1.png"}},
		{"climbs to the common directory", []string{"osm/1/", "osm/2/", "osm/3/"}, 1, []string{"osm/"}},
		{"climbs only as far as needed", []string{"osm/1/", "osm/2/", "sat/1/", "sat/2/"}, 2, []string{"osm/", "sat/"}},
		{"open prefixes climb too", []string{"osm/1*", "osm/2*"}, 1, []string{"osm/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CoalesceConfig{}.Shrink(tt.targets, tt.limit)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
