package iiif_test

import (
	"fmt"
	"image"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/iiifinfo"
)

// pyramid is an image whose levels halve its full size, rounding down
// (libvips' tiffsave, GDAL's overviews) or up (as viewers compute without
// "sizes"), until one tile holds a level.
func pyramid(w, h, tw, th int, roundUp bool) iiif.Image {
	img := iiif.Image{JPEGTiles: true}
	for s := 1; ; s *= 2 {
		lw, lh := w/s, h/s
		if roundUp {
			lw, lh = ceilInt(w, s), ceilInt(h, s)
		}
		if lw < 1 || lh < 1 {
			break
		}
		img.Levels = append(img.Levels, iiif.Level{Width: lw, Height: lh, TileWidth: tw, TileHeight: th})
		if lw <= tw && lh <= th {
			break
		}
	}
	return img
}

var bigLimits = iiif.Limits{MaxWidth: 1 << 20, MaxHeight: 1 << 20, MaxArea: 1 << 40}

// TestPlanMatchesViewerTiles generates every tile URL a viewer asks of a
// few pyramids (odd sizes, edge tiles, floor and ceil levels, non-square
// tiles), for both versions and both 2.x size forms, from the info.json the
// package writes, and checks each is planned as that stored tile.
func TestPlanMatchesViewerTiles(t *testing.T) {
	t.Parallel()
	pyramids := map[string]iiif.Image{
		"1001x701 floor":           pyramid(1001, 701, 256, 256, false),
		"1001x701 ceil":            pyramid(1001, 701, 256, 256, true),
		"1024x768 exact":           pyramid(1024, 768, 256, 256, false),
		"257x257 floor":            pyramid(257, 257, 256, 256, false),
		"257x257 ceil":             pyramid(257, 257, 256, 256, true),
		"3x1000 floor":             pyramid(3, 1000, 256, 256, false),
		"1025x513 tiles 512x256":   pyramid(1025, 513, 512, 256, false),
		"100x80 one tile":          pyramid(100, 80, 256, 256, false),
		"4097x3073 ceil tiles 512": pyramid(4097, 3073, 512, 512, true),
	}
	for name, img := range pyramids {
		for _, v := range []iiif.Version{iiif.V2, iiif.V3} {
			for _, legacy := range []bool{false, true} {
				if legacy && v == iiif.V3 {
					continue
				}
				t.Run(fmt.Sprintf("%s/v%d/legacy=%v", name, v, legacy), func(t *testing.T) {
					t.Parallel()
					info, err := iiifinfo.Info(v, "https://example.org/iiif/img", img, bigLimits, iiifinfo.InfoOptions{})
					if err != nil {
						t.Fatal(err)
					}
					osd := newOSD(t, info, legacy)
					tiles := osd.tiles()
					if len(tiles) == 0 {
						t.Fatal("no tiles")
					}
					for _, tl := range tiles {
						checkTileMatch(t, v, img, bigLimits, osd, tl, osd.levelSizes == nil)
					}
				})
			}
		}
	}
}

// TestPlanViewerTilesWithoutSizes covers an info.json whose sizes leave out
// levels (they are beyond the limits): viewers then compute level sizes
// rounding up. Every tile of a pyramid rounded up is still matched; a
// pyramid rounded down misses only edge tiles, which are answered from a
// larger level instead.
func TestPlanViewerTilesWithoutSizes(t *testing.T) {
	t.Parallel()
	lim := iiif.Limits{MaxWidth: 600, MaxHeight: 600, MaxArea: 600 * 600}
	for _, roundUp := range []bool{true, false} {
		img := pyramid(2001, 1501, 256, 256, roundUp)
		info, err := iiifinfo.Info(iiif.V3, "https://example.org/iiif/img", img, lim, iiifinfo.InfoOptions{})
		if err != nil {
			t.Fatal(err)
		}
		osd := newOSD(t, info, false)
		if osd.levelSizes != nil {
			t.Fatalf("viewer uses sizes %v, want it to compute them", osd.levelSizes)
		}
		for _, tl := range osd.tiles() {
			checkTileMatch(t, iiif.V3, img, lim, osd, tl, !roundUp)
		}
	}
}

func log2(n int) int {
	l := 0
	for n > 1 {
		n, l = n/2, l+1
	}
	return l
}

// checkTileMatch checks that tile tl is planned as its stored tile at scale
// 1. Two kinds of viewer tiles cannot be: with a pyramid rounded down whose
// level sizes the viewer computes rounding up, edge tiles ask for a pixel
// more than the level has (allowEdgeMiss); and a 2.x "w," request whose
// region is so narrow that keeping its aspect ratio gives another height
// than the tile's. The edge tiles are still read from their own level, one
// stored tile decoded and its last pixel stretched; the narrow ones from a
// larger level.
func checkTileMatch(t *testing.T, v iiif.Version, img iiif.Image, lim iiif.Limits, osd osdSource, tl osdTile, allowEdgeMiss bool) {
	t.Helper()
	res, err := resolvePath(v, tl.url, img, lim)
	if err != nil {
		t.Fatalf("%s: %v", tl.url, err)
	}
	plan, err := iiif.NewPlan(res, img)
	if err != nil {
		t.Fatal(err)
	}
	level := log2(tl.factor)
	lv := img.Levels[level]
	cw, ch := min(lv.TileWidth, lv.Width-tl.x*lv.TileWidth), min(lv.TileHeight, lv.Height-tl.y*lv.TileHeight)
	m, ok := plan.Match()
	if !ok {
		nx, ny := osd.numTiles(osd.maxLevel - level)
		edge := tl.x == nx-1 || tl.y == ny-1
		rw, rh := res.Region.Dx(), res.Region.Dy()
		narrow := osd.legacyV2 && max(ch*rw-rh*cw, rh*cw-ch*rw) > rw
		if allowEdgeMiss && edge && !narrow {
			if plan.Level != level || plan.Tiles != image.Rect(tl.x, tl.y, tl.x+1, tl.y+1) {
				t.Fatalf("%s: plan %+v, want level %d tile %d,%d decoded", tl.url, plan, level, tl.x, tl.y)
			}
			return
		}
		if narrow {
			return
		}
		t.Fatalf("%s: no match, want level %d tile %d,%d (plan %+v)", tl.url, level, tl.x, tl.y, plan)
	}
	// A 1×1 corner tile is its region at scale 1: level 0's tile there.
	corner := res.Region.Dx() == 1 && res.Region.Dy() == 1
	if (m.Level != level || m.X != tl.x || m.Y != tl.y) && !(corner && m.Level == 0) {
		t.Fatalf("%s: match %+v, want level %d tile %d,%d (plan %+v)", tl.url, m, level, tl.x, tl.y, plan)
	}
	mv := img.Levels[m.Level]
	wantPadded := (m.X+1)*mv.TileWidth > mv.Width || (m.Y+1)*mv.TileHeight > mv.Height
	if m.Padded != wantPadded {
		t.Errorf("%s: padded %v, want %v", tl.url, m.Padded, wantPadded)
	}
	if plan.Source.Dx() != res.Width || plan.Source.Dy() != res.Height || plan.Tiles.Dx() != 1 || plan.Tiles.Dy() != 1 {
		t.Errorf("%s: plan %+v does not read one tile at scale 1 for %dx%d", tl.url, plan, res.Width, res.Height)
	}
}

func TestPlanLevelChoice(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256, false) // 1001x701, 500x350, 250x175
	cases := []struct {
		path   string
		level  int
		source image.Rectangle
		tiles  image.Rectangle
		match  bool
	}{
		{"full/max/0/default.jpg", 0, image.Rect(0, 0, 1001, 701), image.Rect(0, 0, 4, 3), false},
		{"full/500,350/0/default.jpg", 1, image.Rect(0, 0, 500, 350), image.Rect(0, 0, 2, 2), false},
		// 501 is level 1's size at its nominal scale (500.5, rounded up).
		{"full/501,/0/default.jpg", 1, image.Rect(0, 0, 500, 350), image.Rect(0, 0, 2, 2), false},
		{"full/502,/0/default.jpg", 0, image.Rect(0, 0, 1001, 701), image.Rect(0, 0, 4, 3), false},
		{"full/400,/0/default.jpg", 1, image.Rect(0, 0, 500, 350), image.Rect(0, 0, 2, 2), false},
		{"full/252,/0/default.jpg", 1, image.Rect(0, 0, 500, 350), image.Rect(0, 0, 2, 2), false},
		{"full/251,/0/default.jpg", 2, image.Rect(0, 0, 250, 175), image.Rect(0, 0, 1, 1), false},
		{"full/250,/0/default.jpg", 2, image.Rect(0, 0, 250, 175), image.Rect(0, 0, 1, 1), true},
		{"full/100,/0/default.jpg", 2, image.Rect(0, 0, 250, 175), image.Rect(0, 0, 1, 1), false},
		{"full/1,/0/default.jpg", 2, image.Rect(0, 0, 250, 175), image.Rect(0, 0, 1, 1), false},
		{"512,512,256,189/max/0/default.jpg", 0, image.Rect(512, 512, 768, 701), image.Rect(2, 2, 3, 3), true},
		// Level 1 rounded down has 94 rows there, not 95.
		// Level 1 rounded down has 94 rows there, and 94.5 at its nominal
		// scale: a viewer computing its size rounding up asks for 95, and
		// level 1 answers, its last row stretched by half a pixel.
		{"512,512,256,189/128,95/0/default.jpg", 1, image.Rect(256, 256, 384, 350), image.Rect(1, 1, 2, 2), false},
		{"512,512,256,189/128,96/0/default.jpg", 0, image.Rect(512, 512, 768, 701), image.Rect(2, 2, 3, 3), false},
		{"512,512,256,189/128,94/0/default.jpg", 1, image.Rect(256, 256, 384, 350), image.Rect(1, 1, 2, 2), false},
		{"100,100,300,300/150,/0/default.jpg", 1, image.Rect(50, 50, 200, 200), image.Rect(0, 0, 1, 1), false},
		{"100,100,300,300/151,/0/default.jpg", 0, image.Rect(100, 100, 400, 400), image.Rect(0, 0, 2, 2), false},
		{"101,101,300,300/150,/0/default.jpg", 1, image.Rect(50, 50, 201, 201), image.Rect(0, 0, 1, 1), false},
		{"0,0,1000,700/^max/0/default.jpg", 0, image.Rect(0, 0, 1000, 700), image.Rect(0, 0, 4, 3), false},
		{"0,0,256,256/256,256/90/default.jpg", 0, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), false},
		{"0,0,256,256/256,256/!0/default.jpg", 0, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), false},
		{"0,0,256,256/256,256/0/default.png", 0, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), false},
		{"0,0,256,256/256,256/0/gray.jpg", 0, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), false},
		{"0,0,256,256/256,256/0/color.jpg", 0, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), true},
		{"0,0,512,512/256,256/0/default.jpg", 1, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), true},
		{"0,0,512,512/255,255/0/default.jpg", 1, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), false},
		{"1,0,511,512/255,256/0/default.jpg", 1, image.Rect(0, 0, 256, 256), image.Rect(0, 0, 1, 1), false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			res, err := resolvePath(iiif.V3, c.path, img, iiif.Limits{MaxWidth: 5000, MaxHeight: 5000, MaxArea: 1 << 24})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := iiif.NewPlan(res, img)
			if err != nil {
				t.Fatal(err)
			}
			_, match := plan.Match()
			if plan.Level != c.level || plan.Source != c.source || plan.Tiles != c.tiles || match != c.match {
				t.Errorf("got level %d source %v tiles %v match %v, want %d %v %v %v",
					plan.Level, plan.Source, plan.Tiles, match, c.level, c.source, c.tiles, c.match)
			}
			tw, th := img.Levels[plan.Level].TileWidth, img.Levels[plan.Level].TileHeight
			if want := int64(c.tiles.Dx() * c.tiles.Dy() * tw * th); plan.DecodedPixels != want {
				t.Errorf("decoded pixels: got %d, want %d", plan.DecodedPixels, want)
			}
			list := plan.TileList()
			if len(list) != c.tiles.Dx()*c.tiles.Dy() || list[0] != c.tiles.Min || list[len(list)-1] != c.tiles.Max.Sub(image.Pt(1, 1)) {
				t.Errorf("tile list %v does not walk %v", list, c.tiles)
			}
		})
	}
}

// TestPlanNotJPEG checks that only stored JPEG tiles are matched.
func TestPlanNotJPEG(t *testing.T) {
	t.Parallel()
	img := pyramid(1001, 701, 256, 256, false)
	img.JPEGTiles = false
	res, err := resolvePath(iiif.V3, "0,0,256,256/256,256/0/default.jpg", img, bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := iiif.NewPlan(res, img)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := plan.Match(); ok {
		t.Errorf("got match %+v for PNG-or-raw tiles, want none", m)
	}
}

// TestPlanOddLevels covers levels that are not halvings (a thumbnail of
// another ratio): they are used for derived answers, never advertised.
func TestPlanOddLevels(t *testing.T) {
	t.Parallel()
	img := iiif.Image{Levels: []iiif.Level{
		{Width: 1000, Height: 800, TileWidth: 256, TileHeight: 256},
		{Width: 300, Height: 240, TileWidth: 256, TileHeight: 256},
	}, JPEGTiles: true}
	res, err := resolvePath(iiif.V3, "full/300,/0/default.jpg", img, bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := iiif.NewPlan(res, img)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Level != 1 || plan.Source != image.Rect(0, 0, 300, 240) {
		t.Errorf("got level %d source %v, want 1 (0,0)-(300,240)", plan.Level, plan.Source)
	}
	info, err := iiifinfo.Info(iiif.V3, "https://example.org/i", img, bigLimits, iiifinfo.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(info), `"scaleFactors":[1]`) {
		t.Errorf("info %s: want scaleFactors [1] only", info)
	}
}

func imageRect(img iiif.Image) image.Rectangle {
	return image.Rect(0, 0, img.Levels[0].Width, img.Levels[0].Height)
}
