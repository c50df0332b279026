package guard

import (
	"strconv"
	"testing"
)

// TestOvertaken: a fill is overtaken by a purge since its epoch that covers
// its key, and by nothing else; past the window every fill is.
func TestOvertaken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		purges  []string // applied after the fill began
		key     string
		want    bool
		inserts bool
	}{
		{"no purge", nil, "a/1/2/3.png", false, true},
		{"other prefix", []string{"b/"}, "a/1/2/3.png", false, true},
		{"covering prefix", []string{"b/", "a/1/"}, "a/1/2/3.png", true, false},
		{"the key itself", []string{"a/1/2/3.png"}, "a/1/2/3.png", true, false},
		{"everything", []string{""}, "a/1/2/3.png", true, false},
		{"sibling", []string{"a/10/"}, "a/1/2/3.png", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var g Guard
			g.Purge("a/", func() {}) // before the fill: never counts
			epoch := g.Begin()
			for _, p := range tt.purges {
				g.Purge(p, func() {})
			}
			if got := g.Overtaken(tt.key, epoch); got != tt.want {
				t.Errorf("Overtaken: got %v, want %v", got, tt.want)
			}
			ran := false
			if got := g.Insert(tt.key, epoch, func() { ran = true }); got != tt.inserts || ran != tt.inserts {
				t.Errorf("Insert: got %v (ran %v), want %v", got, ran, tt.inserts)
			}
		})
	}
}

// TestWindow: once more purges than the window keeps have run since a fill
// began, the fill counts as overtaken whatever they covered.
func TestWindow(t *testing.T) {
	t.Parallel()
	for _, n := range []int{Window - 1, Window, Window + 1} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			var g Guard
			epoch := g.Begin()
			for i := range n {
				g.Purge("other/"+strconv.Itoa(i)+"/", func() {})
			}
			want := n >= Window
			if got := g.Overtaken("a/1/2/3.png", epoch); got != want {
				t.Errorf("after %d unrelated purges: got %v, want %v", n, got, want)
			}
		})
	}
}

// TestPurgeExcludesInsert: a purge's removal runs with no insert running,
// and an insert that waited for it sees it.
func TestPurgeExcludesInsert(t *testing.T) {
	t.Parallel()
	var g Guard
	epoch := g.Begin()
	inPurge := make(chan struct{})
	release := make(chan struct{})
	done := make(chan bool)
	go g.Purge("a/", func() {
		close(inPurge)
		<-release
	})
	<-inPurge
	go func() { done <- g.Insert("a/1", epoch, func() {}) }()
	close(release)
	if got := <-done; got {
		t.Errorf("insert after a covering purge: got %v, want false", got)
	}
}
