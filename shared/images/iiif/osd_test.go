package iiif_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// osdSource computes tile URLs from an info.json as OpenSeadragon's IIIF
// tile source does (src/iiiftilesource.js, getTileUrl and its constructor;
// Mirador draws with it too): levels 0..maxLevel at scale 2^(level-maxLevel),
// level sizes from "sizes" when there is one per scale factor and each
// matches it, else ceil(width·scale).
type osdSource struct {
	version       int
	id            string
	width, height int
	tileW, tileH  int
	perFactor     map[int][2]int
	scaleFactors  []int
	maxLevel      int
	levelSizes    [][2]int
	// legacyV2 sends 2.x sizes as "w,", as OpenSeadragon 2.x and
	// Mirador 2 do; the current one sends "w,h".
	legacyV2 bool
}

type osdInfo struct {
	Context string `json:"@context"`
	ID      string `json:"id"`
	AtID    string `json:"@id"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Tiles   []struct {
		Width, Height int
		ScaleFactors  []int `json:"scaleFactors"`
	} `json:"tiles"`
	Sizes []struct{ Width, Height int } `json:"sizes"`
}

func newOSD(t *testing.T, info []byte, legacyV2 bool) osdSource {
	t.Helper()
	var in osdInfo
	if err := json.Unmarshal(info, &in); err != nil {
		t.Fatal(err)
	}
	o := osdSource{id: in.ID + in.AtID, width: in.Width, height: in.Height, perFactor: map[int][2]int{}, legacyV2: legacyV2}
	o.version = 3
	if strings.Contains(in.Context, "/image/2/") {
		o.version = 2
	}
	switch {
	case len(in.Tiles) == 1:
		o.tileW, o.tileH = in.Tiles[0].Width, cmpOr(in.Tiles[0].Height, in.Tiles[0].Width)
		o.scaleFactors = in.Tiles[0].ScaleFactors
	case len(in.Tiles) > 1:
		for _, tl := range in.Tiles {
			for _, sf := range tl.ScaleFactors {
				o.scaleFactors = append(o.scaleFactors, sf)
				o.perFactor[sf] = [2]int{tl.Width, cmpOr(tl.Height, tl.Width)}
			}
		}
	default:
		t.Fatal("info.json has no tiles")
	}
	o.maxLevel = int(math.Round(math.Log2(float64(slices.Max(o.scaleFactors)))))
	o.levelSizes = o.sizesAsLevels(in)
	return o
}

// sizesAsLevels is the constructor's use of "sizes": sorted by width, the
// full size appended if missing, used only with one size per level each
// matching its scale factor.
func (o osdSource) sizesAsLevels(in osdInfo) [][2]int {
	if len(in.Sizes) == 0 {
		return nil
	}
	var sizes [][2]int
	for _, s := range in.Sizes {
		sizes = append(sizes, [2]int{s.Width, s.Height})
	}
	slices.SortStableFunc(sizes, func(a, b [2]int) int { return a[0] - b[0] })
	if last := sizes[len(sizes)-1]; last[0] < o.width && last[1] < o.height {
		sizes = append(sizes, [2]int{o.width, o.height})
	}
	if len(sizes) != o.maxLevel+1 {
		return nil
	}
	if len(o.scaleFactors) == len(sizes) {
		for i, s := range sizes {
			f := o.scaleFactors[len(sizes)-i-1]
			if jsRound(float64(o.width)/float64(s[0])) != f || jsRound(float64(o.height)/float64(s[1])) != f {
				return nil
			}
		}
	}
	return sizes
}

func jsRound(f float64) int { return int(math.Floor(f + 0.5)) }

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func (o osdSource) tileSize(level int) (int, int) {
	if s, ok := o.perFactor[1<<(o.maxLevel-level)]; ok {
		return s[0], s[1]
	}
	return o.tileW, o.tileH
}

func (o osdSource) levelSize(level int) (int, int) {
	if o.levelSizes != nil {
		return o.levelSizes[level][0], o.levelSizes[level][1]
	}
	scale := math.Pow(0.5, float64(o.maxLevel-level))
	return int(math.Ceil(float64(o.width) * scale)), int(math.Ceil(float64(o.height) * scale))
}

func (o osdSource) numTiles(level int) (int, int) {
	tw, th := o.tileSize(level)
	if o.levelSizes != nil {
		lw, lh := o.levelSize(level)
		return ceilInt(lw, tw), ceilInt(lh, th)
	}
	scale := math.Pow(0.5, float64(o.maxLevel-level))
	return int(math.Ceil(scale * float64(o.width) / float64(tw))), int(math.Ceil(scale * float64(o.height) / float64(th)))
}

func ceilInt(a, b int) int { return (a + b - 1) / b }

// tileURL is the URL of tile (x, y) of OpenSeadragon level level, without
// the id: "region/size/0/default.jpg".
func (o osdSource) tileURL(level, x, y int) string {
	scale := math.Pow(0.5, float64(o.maxLevel-level))
	lw, lh := o.levelSize(level)
	tw, th := o.tileSize(level)
	rw, rh := int(math.Round(float64(tw)/scale)), int(math.Round(float64(th)/scale))
	var region, size string
	if lw < tw && lh < th {
		region = "full"
		switch {
		case o.version == 2 && lw == o.width:
			size = "full"
		case o.version == 3 && lw == o.width && lh == o.height:
			size = "max"
		case o.version == 3:
			size = fmt.Sprintf("%d,%d", lw, lh)
		default:
			size = strconv.Itoa(lw) + ","
		}
	} else {
		rx, ry := x*rw, y*rh
		w, h := min(rw, o.width-rx), min(rh, o.height-ry)
		if x == 0 && y == 0 && w == o.width && h == o.height {
			region = "full"
		} else {
			region = fmt.Sprintf("%d,%d,%d,%d", rx, ry, w, h)
		}
		sw, sh := min(tw, lw-x*tw), min(th, lh-y*th)
		switch {
		case o.version == 2 && sw == o.width:
			size = "full"
		case o.version == 3 && sw == o.width && sh == o.height:
			size = "max"
		case o.version == 2 && o.legacyV2:
			size = strconv.Itoa(sw) + ","
		default:
			size = fmt.Sprintf("%d,%d", sw, sh)
		}
	}
	return region + "/" + size + "/0/default.jpg"
}

// osdTile is one tile URL and where the viewer puts it.
type osdTile struct {
	factor, x, y int
	url          string
}

// tiles lists every tile URL of every level.
func (o osdSource) tiles() []osdTile {
	var out []osdTile
	for level := 0; level <= o.maxLevel; level++ {
		nx, ny := o.numTiles(level)
		for y := range ny {
			for x := range nx {
				out = append(out, osdTile{factor: 1 << (o.maxLevel - level), x: x, y: y, url: o.tileURL(level, x, y)})
			}
		}
	}
	return out
}
