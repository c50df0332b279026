package viewer

import (
	"fmt"
	"slices"
)

// Phase is requests a viewer makes together at a concurrency; the next
// phase starts once every one of them is answered (a user waits for a view
// before moving on).
type Phase struct {
	Name        string
	Paths       []string // below the image's id
	Concurrency int
}

// Session is a viewer's requests of one image, phase by phase.
type Session struct {
	Name   string
	Phases []Phase
	Tiles  []Tile // the tiles among the requests, in order
}

// Paths is every request of s in order.
func (s Session) Paths() []string {
	var out []string
	for _, p := range s.Phases {
		out = append(out, p.Paths...)
	}
	return out
}

// InfoPath and Thumbnail are a viewer's first two requests of an image:
// its info.json and a thumbnail that fits 200×200.
const (
	InfoPath  = "info.json"
	Thumbnail = "full/!200,200/0/default.jpg"
)

// Cantaloupe is the Cantaloupe report's load: 91 tiles at scale factor 4
// (the first 91 in row order) at concurrency 10.
func Cantaloupe(in Info) (Session, error) {
	tiles := in.Level(4)
	if len(tiles) < 91 {
		return Session{}, fmt.Errorf("viewer: %d tiles at scale factor 4, the Cantaloupe load needs 91", len(tiles))
	}
	tiles = tiles[:91]
	return Session{Name: "cantaloupe-91", Tiles: tiles, Phases: []Phase{{Name: "91 tiles", Paths: paths(tiles), Concurrency: 10}}}, nil
}

// Mirador is the report's Mirador session: opening the image (info.json
// and a thumbnail at concurrency 2), the first view (the first 28 tiles at
// scale factor 8, at 6), a zoom (a block of 10×5 tiles at scale factor 2 in
// the middle of the image, at 6) and three users panning at once (a block
// of 4×2 tiles each at scale factor 1, in three places, at 18). No tile is
// asked twice.
func Mirador(in Info) (Session, error) {
	view := in.Level(8)
	if len(view) < 28 {
		return Session{}, fmt.Errorf("viewer: %d tiles at scale factor 8, the Mirador session needs 28", len(view))
	}
	view = view[:28]
	c2, r2 := in.Grid(2)
	zoom := in.Block(2, (c2-10)/2, (r2-5)/2, 10, 5)
	c1, r1 := in.Grid(1)
	var pan []Tile
	for u := range 3 {
		pan = append(pan, in.Block(1, (u+1)*c1/4-2, (u+1)*r1/4-1, 4, 2)...)
	}
	if len(zoom) != 50 || len(pan) != 24 {
		return Session{}, fmt.Errorf("viewer: the image is too small for the Mirador session (%d zoom tiles, %d panning tiles)", len(zoom), len(pan))
	}
	s := Session{Name: "mirador", Tiles: slices.Concat(view, zoom, pan), Phases: []Phase{
		{Name: "1 info+thumbnail", Paths: []string{InfoPath, Thumbnail}, Concurrency: 2},
		{Name: "2 first view", Paths: paths(view), Concurrency: 6},
		{Name: "3 zoom", Paths: paths(zoom), Concurrency: 6},
		{Name: "4 three users", Paths: paths(pan), Concurrency: 18},
	}}
	return s, nil
}

func paths(ts []Tile) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Path()
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
