package viewer

import (
	"slices"
	"testing"
)

// big is the benchmark image: 25167×12483 in 512-px tiles.
var big = Info{Version: 3, Width: 25167, Height: 12483, TileWidth: 512, TileHeight: 512, ScaleFactors: []int{1, 2, 4, 8, 16, 32, 64}}

func TestParseInfo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, json string
		want       Info
	}{
		{"3.0", `{"@context":"http://iiif.io/api/image/3/context.json","width":25167,"height":12483,"tiles":[{"width":512,"height":512,"scaleFactors":[64,1,2,4,8,16,32]}]}`, big},
		{"2.1 without a tile height", `{"@context":"http://iiif.io/api/image/2/context.json","width":25167,"height":12483,"tiles":[{"width":512,"scaleFactors":[1,2,4,8,16,32,64]}]}`,
			Info{Version: 2, Width: 25167, Height: 12483, TileWidth: 512, TileHeight: 512, ScaleFactors: big.ScaleFactors}},
	} {
		got, err := ParseInfo([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Version != c.want.Version || got.Width != c.want.Width || got.Height != c.want.Height ||
			got.TileWidth != c.want.TileWidth || got.TileHeight != c.want.TileHeight || !slices.Equal(got.ScaleFactors, c.want.ScaleFactors) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
	if _, err := ParseInfo([]byte(`{"width":10,"height":10}`)); err == nil {
		t.Error("an info.json without tiles: no error")
	}
}

// TestTile: the URLs OpenSeadragon's getTileUrl makes for this image
// (levels rounded up, regions clipped to the image).
func TestTile(t *testing.T) {
	t.Parallel()
	v2 := big
	v2.Version = 2
	legacy := v2
	legacy.Legacy = true
	for _, c := range []struct {
		in      Info
		f, x, y int
		want    string
	}{
		{big, 1, 0, 0, "0,0,512,512/512,512/0/default.jpg"},
		{big, 4, 3, 2, "6144,4096,2048,2048/512,512/0/default.jpg"},
		{big, 4, 12, 6, "24576,12288,591,195/148,49/0/default.jpg"}, // the last tile: 6292×3121 at 1/4
		{big, 8, 6, 3, "24576,12288,591,195/74,25/0/default.jpg"},
		{big, 64, 0, 0, "full/394,196/0/default.jpg"}, // one tile holds the level
		{v2, 2, 1, 1, "1024,1024,1024,1024/512,512/0/default.jpg"},
		{legacy, 2, 1, 1, "1024,1024,1024,1024/512,/0/default.jpg"},
	} {
		if got := c.in.Tile(c.f, c.x, c.y).Path(); got != c.want {
			t.Errorf("v%d tile %d/%d,%d: got %s, want %s", c.in.Version, c.f, c.x, c.y, got, c.want)
		}
	}
	for _, c := range []struct{ f, cols, rows int }{{1, 50, 25}, {2, 25, 13}, {4, 13, 7}, {8, 7, 4}, {64, 1, 1}} {
		if cols, rows := big.Grid(c.f); cols != c.cols || rows != c.rows {
			t.Errorf("grid at %d: got %dx%d, want %dx%d", c.f, cols, rows, c.cols, c.rows)
		}
	}
}

// TestSessions: the counts of the Cantaloupe report's loads, every tile
// asked once, at the scale factors they name.
func TestSessions(t *testing.T) {
	t.Parallel()
	c, err := Cantaloupe(big)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Mirador(big)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		s        Session
		requests int
		factors  map[int]int
	}{
		{c, 91, map[int]int{4: 91}},
		{m, 104, map[int]int{8: 28, 2: 50, 1: 24}},
	} {
		ps := s.s.Paths()
		if len(ps) != s.requests {
			t.Errorf("%s: %d requests, want %d", s.s.Name, len(ps), s.requests)
		}
		if d := len(slices.Compact(slices.Sorted(slices.Values(ps)))); d != len(ps) {
			t.Errorf("%s: %d distinct requests of %d", s.s.Name, d, len(ps))
		}
		got := map[int]int{}
		for _, tl := range s.s.Tiles {
			got[tl.Factor]++
		}
		for f, n := range s.factors {
			if got[f] != n {
				t.Errorf("%s: %d tiles at scale factor %d, want %d", s.s.Name, got[f], f, n)
			}
		}
	}
	if m.Phases[0].Paths[0] != InfoPath || m.Phases[3].Concurrency != 18 {
		t.Errorf("mirador phases: %+v", m.Phases)
	}
	small := Info{Version: 3, Width: 2000, Height: 1000, TileWidth: 512, TileHeight: 512, ScaleFactors: []int{1, 2, 4}}
	if _, err := Mirador(small); err == nil {
		t.Error("a small image: no error")
	}
}
