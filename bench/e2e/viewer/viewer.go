// Package viewer computes what an IIIF image viewer asks an image service
// for: the tile URLs OpenSeadragon derives from info.json (Mirador draws
// with OpenSeadragon, so they are Mirador's too), and the viewer sessions
// of the end-to-end benchmarks built from them. It knows nothing of any
// server: every URL is relative to the image's id.
package viewer

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Info is what a viewer reads from an image's info.json (Image API 2.1 or
// 3.0).
type Info struct {
	Version       int // 2 or 3
	Width, Height int
	TileWidth     int
	TileHeight    int
	ScaleFactors  []int // ascending
	// Legacy sends 2.x sizes as "w,", as OpenSeadragon before 3 (and
	// Mirador 2) did; later versions send "w,h" in both versions.
	Legacy bool
}

// ParseInfo reads an info.json. It takes the first entry of tiles, as
// every service here has one.
func ParseInfo(b []byte) (Info, error) {
	var in struct {
		Context any `json:"@context"`
		Width   int `json:"width"`
		Height  int `json:"height"`
		Tiles   []struct {
			Width        int   `json:"width"`
			Height       int   `json:"height"`
			ScaleFactors []int `json:"scaleFactors"`
		} `json:"tiles"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return Info{}, fmt.Errorf("viewer: info.json: %w", err)
	}
	if len(in.Tiles) == 0 || in.Tiles[0].Width < 1 || len(in.Tiles[0].ScaleFactors) == 0 || in.Width < 1 || in.Height < 1 {
		return Info{}, errors.New("viewer: info.json has no size or no tiles")
	}
	info := Info{Version: 3, Width: in.Width, Height: in.Height, TileWidth: in.Tiles[0].Width, TileHeight: in.Tiles[0].Height}
	if info.TileHeight == 0 {
		info.TileHeight = info.TileWidth
	}
	if strings.Contains(fmt.Sprint(in.Context), "/image/2/") {
		info.Version = 2
	}
	info.ScaleFactors = slices.Sorted(slices.Values(in.Tiles[0].ScaleFactors))
	return info, nil
}

// Tile is one tile a viewer requests.
type Tile struct {
	Factor, X, Y int    // scale factor, column and row at it
	Region, Size string // the request's region and size
}

// Path is the tile's request below the image's id.
func (t Tile) Path() string { return t.Region + "/" + t.Size + "/0/default.jpg" }

// LevelSize is the size OpenSeadragon gives the level of scale factor f:
// the full size divided by f, rounded up (it uses info.json's sizes only
// when they list every level, which neither service here does).
func (in Info) LevelSize(f int) (w, h int) {
	return ceilDiv(in.Width, f), ceilDiv(in.Height, f)
}

// Grid is the number of tile columns and rows at scale factor f.
func (in Info) Grid(f int) (cols, rows int) {
	w, h := in.LevelSize(f)
	return ceilDiv(w, in.TileWidth), ceilDiv(h, in.TileHeight)
}

// Tile is tile (x, y) at scale factor f as OpenSeadragon's IIIF tile
// source requests it (getTileUrl): the region in full-resolution pixels,
// clipped to the image, "full" when it is the whole image; the size the
// tile's pixels at that level, "w,h" in both versions (OpenSeadragon 3 and
// later; "max" or "full" when it is the full size).
func (in Info) Tile(f, x, y int) Tile {
	lw, lh := in.LevelSize(f)
	tw, th := in.TileWidth, in.TileHeight
	t := Tile{Factor: f, X: x, Y: y}
	var sw, sh int
	if lw < tw && lh < th {
		t.Region, sw, sh = "full", lw, lh
	} else {
		rw, rh := tw*f, th*f
		rx, ry := x*rw, y*rh
		w, h := min(rw, in.Width-rx), min(rh, in.Height-ry)
		if x == 0 && y == 0 && w == in.Width && h == in.Height {
			t.Region = "full"
		} else {
			t.Region = fmt.Sprintf("%d,%d,%d,%d", rx, ry, w, h)
		}
		sw, sh = min(tw, lw-x*tw), min(th, lh-y*th)
	}
	switch {
	case in.Version == 2 && sw == in.Width:
		t.Size = "full"
	case in.Version == 3 && sw == in.Width && sh == in.Height:
		t.Size = "max"
	case in.Version == 2 && in.Legacy:
		t.Size = fmt.Sprintf("%d,", sw)
	default:
		t.Size = fmt.Sprintf("%d,%d", sw, sh)
	}
	return t
}

// Block is the tiles of columns x0..x0+cols-1 and rows y0..y0+rows-1 at
// scale factor f, row by row, clipped to the level's grid.
func (in Info) Block(f, x0, y0, cols, rows int) []Tile {
	gc, gr := in.Grid(f)
	var out []Tile
	for y := y0; y < min(y0+rows, gr); y++ {
		for x := x0; x < min(x0+cols, gc); x++ {
			out = append(out, in.Tile(f, x, y))
		}
	}
	return out
}

// Level is every tile at scale factor f, row by row.
func (in Info) Level(f int) []Tile {
	c, r := in.Grid(f)
	return in.Block(f, 0, 0, c, r)
}
