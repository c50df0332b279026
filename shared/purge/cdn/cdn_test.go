package cdn_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/cdn"
)

func TestPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pathPrefix string
		targets    []string
		want       []string
	}{
		{"", []string{""}, []string{"/*"}},
		{"tiles/", []string{""}, []string{"/tiles/*"}},
		{"/tiles", []string{"osm/"}, []string{"/tiles/osm/*"}},
		// A directory is a wildcard, a single key an exact path.
		{"", []string{"osm/12/2048/", "osm/1/0/0.png"}, []string{"/osm/12/2048/*", "/osm/1/0/0.png"}},
		{"maps", []string{"osm/1/0/0.png"}, []string{"/maps/osm/1/0/0.png"}},
		{"", []string{"city maps/c++/100%/"}, []string{"/city%20maps/c++/100%25/*"}},
		{"", []string{"café/地図/"}, []string{"/caf%C3%A9/%E5%9C%B0%E5%9B%B3/*"}},
		// A * inside a key is escaped; a trailing one marks an open prefix.
		{"", []string{"a*b?c#d\"e<f>{g}|h\\i^j~k[l]m`n"}, []string{"/a%2Ab%3Fc%23d%22e%3Cf%3E%7Bg%7D%7Ch%5Ci%5Ej%7Ek%5Bl%5Dm%60n"}},
		{"/maps", []string{"osm/1*", "osm/1/0/0.png*", "a*b*"}, []string{"/maps/osm/1*", "/maps/osm/1/0/0.png*", "/maps/a%2Ab*"}},
		{"", []string{"iiif/page=7/0,0,512,512/full/0/default.jpg"}, []string{"/iiif/page=7/0,0,512,512/full/0/default.jpg"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.pathPrefix, tt.targets), func(t *testing.T) {
			if got := cdn.Paths(tt.pathPrefix, tt.targets); !slices.Equal(got, tt.want) {
				t.Errorf("Paths(%q, %q): got %q, want %q", tt.pathPrefix, tt.targets, got, tt.want)
			}
		})
	}
}

// TestPathsAgreeWithCoalesce: what purge.Coalesce returns as a directory
// (a covering prefix) is a wildcard, what it returns as a key is exact.
func TestPathsAgreeWithCoalesce(t *testing.T) {
	t.Parallel()
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("osm/12/2048/%d.png", i))
	}
	keys = append(keys, "sat/3/1/1.jpg")
	targets := purge.Coalesce(keys, purge.CoalesceConfig{})
	if want := []string{"osm/12/2048/", "sat/3/1/1.jpg"}; !slices.Equal(targets, want) {
		t.Fatalf("Coalesce: got %q, want %q", targets, want)
	}
	if got, want := cdn.Paths("", targets), []string{"/osm/12/2048/*", "/sat/3/1/1.jpg"}; !slices.Equal(got, want) {
		t.Errorf("Paths: got %q, want %q", got, want)
	}
	if all := purge.Coalesce(keys, purge.CoalesceConfig{Cap: 1}); !slices.Equal(cdn.Paths("", all), []string{"/*"}) {
		t.Errorf("everything: got %q from %q", cdn.Paths("", all), all)
	}
}

func TestCallerReference(t *testing.T) {
	t.Parallel()
	a := cdn.CallerReference("batch-1", []string{"/a*", "/b*"})
	if len(a) != 64 {
		t.Errorf("length %d", len(a))
	}
	if b := cdn.CallerReference("batch-1", []string{"/b*", "/a*"}); b != a {
		t.Errorf("order changed the reference: %s vs %s", a, b)
	}
	if b := cdn.CallerReference("batch-2", []string{"/a*", "/b*"}); b == a {
		t.Error("another batch got the same reference")
	}
	if b := cdn.CallerReference("batch-1", []string{"/a*"}); b == a {
		t.Error("other paths got the same reference")
	}
	// No ambiguity from concatenation.
	if cdn.CallerReference("x", []string{"/ab*"}) == cdn.CallerReference("x/a", []string{"b*"}) {
		t.Error("ambiguous reference")
	}
}

func TestFitWithCoalesce(t *testing.T) {
	t.Parallel()
	dirs := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("osm/%d/", i))
		}
		return out
	}
	tests := []struct {
		name    string
		targets []string
		free    cdn.Usage
		want    []string // nil: the targets unchanged
		ok      bool
	}{
		{"fits as it is", []string{"a/", "b/1.png"}, cdn.Usage{Wildcard: 1, Exact: 1}, []string{"a/", "b/1.png"}, true},
		{"exact keys need no wildcard", []string{"a/1.png", "b/1.png"}, cdn.Usage{Exact: 5}, []string{"a/1.png", "b/1.png"}, true},
		{"climbs to the common directory", dirs(6), cdn.Usage{Wildcard: 1}, []string{"osm/"}, true},
		{"climbs only as far as needed", append(dirs(3), "sat/1/", "sat/2/"), cdn.Usage{Wildcard: 2}, []string{"osm/", "sat/"}, true},
		{"keys become a directory when exact paths are short", []string{"a/1.png", "a/2.png"}, cdn.Usage{Wildcard: 1}, []string{"a/"}, true},
		{"no wildcard left", dirs(2), cdn.Usage{Exact: 100}, nil, false},
		{"one key, nothing left", []string{"a/1.png"}, cdn.Usage{}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cdn.Fit("", tt.targets, tt.free, purge.CoalesceConfig{}.Shrink)
			want := tt.want
			if want == nil {
				want = tt.targets
			}
			if ok != tt.ok || !slices.Equal(got, want) {
				t.Errorf("got %q, %v; want %q, %v", got, ok, want, tt.ok)
			}
		})
	}
}

// TestPathsOfIIIFAnswers: the IIIF directory of an image is the path its
// answers are requested at, the id's escaped slash kept as the viewer sends
// it, not escaped again.
func TestPathsOfIIIFAnswers(t *testing.T) {
	t.Parallel()
	got := cdn.Paths("", []string{"iiif/3/maps%2Fa/", "iiif/2/a%20b/full/max/0/default.jpg", "iiif/3/x"})
	want := []string{"/iiif/3/maps%2Fa/*", "/iiif/2/a%20b/full/max/0/default.jpg", "/iiif/3/x"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
