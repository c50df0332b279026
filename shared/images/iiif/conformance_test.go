package iiif_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// specImage is the 300×200 image of the specifications' examples (region
// 125,15,200,200 "returns 175,185 px"; size !225,100 "returns 150,100"),
// stored as a three-level pyramid.
var specImage = iiif.Image{Levels: []iiif.Level{
	{Width: 300, Height: 200, TileWidth: 256, TileHeight: 256},
	{Width: 150, Height: 100, TileWidth: 256, TileHeight: 256},
	{Width: 75, Height: 50, TileWidth: 256, TileHeight: 256},
}, JPEGTiles: true}

// specLimits allow the 3.0 examples' upscaled sizes (^360,360; ^!360,360
// returns 360,240) and nothing larger.
var specLimits = iiif.Limits{MaxWidth: 360, MaxHeight: 360, MaxArea: 360 * 360}

// conformanceCase is one image request: its four parameters, the status it
// gets, and for a 200 its canonical form and the answer's size after
// rotation.
type conformanceCase struct {
	path      string // region/size/rotation/quality.format
	status    int
	canonical string
	w, h      int
}

// v3Cases walks every parameter form of Image API 3.0 at level 2, from the
// specification's sections 4.1 to 4.8 and its compliance tables.
var v3Cases = []conformanceCase{
	// 4.1 Region: the examples, then forms that mean the full image.
	{"full/max/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"square/max/0/default.jpg", 200, "50,0,200,200/max/0/default.jpg", 200, 200},
	{"125,15,120,140/max/0/default.jpg", 200, "125,15,120,140/max/0/default.jpg", 120, 140},
	{"pct:41.6,7.5,40,70/max/0/default.jpg", 200, "125,15,120,140/max/0/default.jpg", 120, 140},
	{"125,15,200,200/max/0/default.jpg", 200, "125,15,175,185/max/0/default.jpg", 175, 185},
	{"pct:41.6,7.5,66.6,100/max/0/default.jpg", 200, "125,15,175,185/max/0/default.jpg", 175, 185},
	{"0,0,300,200/max/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"0,0,9999,9999/max/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"pct:0,0,100,100/max/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"pct:0,0,200,200/max/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"0125,015,0120,0140/max/0/default.jpg", 200, "125,15,120,140/max/0/default.jpg", 120, 140},
	{"pct:.5,0,50.,50/max/0/default.jpg", 200, "2,0,150,100/max/0/default.jpg", 150, 100},
	{"299,199,1,1/max/0/default.jpg", 200, "299,199,1,1/max/0/default.jpg", 1, 1},
	// A region wholly outside, or of zero size, is 400.
	{"300,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"0,200,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"0,0,0,10/max/0/default.jpg", 400, "", 0, 0},
	{"0,0,10,0/max/0/default.jpg", 400, "", 0, 0},
	{"pct:100,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"pct:0,0,0,10/max/0/default.jpg", 400, "", 0, 0},
	{"pct:0,0,0.1,0.1/max/0/default.jpg", 400, "", 0, 0},
	// Region syntax: no signs, spaces, exponents, missing or extra parts.
	{"1,2,3/max/0/default.jpg", 400, "", 0, 0},
	{"1,2,3,4,5/max/0/default.jpg", 400, "", 0, 0},
	{"-1,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"+1,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{" 1,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"1e2,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"1.5,0,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"1,,10,10/max/0/default.jpg", 400, "", 0, 0},
	{"pct:1,2,3/max/0/default.jpg", 400, "", 0, 0},
	{"pct:-1,0,1,1/max/0/default.jpg", 400, "", 0, 0},
	{"pct:1e1,0,1,1/max/0/default.jpg", 400, "", 0, 0},
	{"pct:nan,0,1,1/max/0/default.jpg", 400, "", 0, 0},
	{"pct:1..2,0,1,1/max/0/default.jpg", 400, "", 0, 0},
	{"pct:.,0,1,1/max/0/default.jpg", 400, "", 0, 0},
	{"PCT:0,0,1,1/max/0/default.jpg", 400, "", 0, 0},
	{"Full/max/0/default.jpg", 400, "", 0, 0},
	{"squares/max/0/default.jpg", 400, "", 0, 0},
	{"/max/0/default.jpg", 400, "", 0, 0},

	// 4.2 Size: the examples (full region of 300×200; limits 360×360).
	{"full/max/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/^max/0/default.jpg", 200, "full/^max/0/default.jpg", 360, 240},
	{"full/150,/0/default.jpg", 200, "full/150,100/0/default.jpg", 150, 100},
	{"full/^360,/0/default.jpg", 200, "full/^max/0/default.jpg", 360, 240},
	{"full/^340,/0/default.jpg", 200, "full/^340,227/0/default.jpg", 340, 227},
	{"full/,150/0/default.jpg", 200, "full/225,150/0/default.jpg", 225, 150},
	{"full/^,240/0/default.jpg", 200, "full/^max/0/default.jpg", 360, 240},
	{"full/pct:50/0/default.jpg", 200, "full/150,100/0/default.jpg", 150, 100},
	{"full/^pct:110/0/default.jpg", 200, "full/^330,220/0/default.jpg", 330, 220},
	{"full/225,100/0/default.jpg", 200, "full/225,100/0/default.jpg", 225, 100},
	{"full/^360,360/0/default.jpg", 200, "full/^360,360/0/default.jpg", 360, 360},
	{"full/!225,100/0/default.jpg", 200, "full/150,100/0/default.jpg", 150, 100},
	{"full/^!360,360/0/default.jpg", 200, "full/^max/0/default.jpg", 360, 240},
	// Forms that give the max size are canonically max; ^ that does not
	// upscale is dropped.
	{"full/300,/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/,200/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/300,200/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/pct:100/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/^150,/0/default.jpg", 200, "full/150,100/0/default.jpg", 150, 100},
	{"full/^pct:50/0/default.jpg", 200, "full/150,100/0/default.jpg", 150, 100},
	{"full/^300,300/0/default.jpg", 200, "full/^300,300/0/default.jpg", 300, 300},
	{"full/1,/0/default.jpg", 200, "full/1,1/0/default.jpg", 1, 1},
	// !w,h is "as large as possible but not larger than the extracted
	// region, w or h": a box larger than the region gives the region.
	{"full/!2000,3000/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/^!2000,3000/0/default.jpg", 200, "full/^max/0/default.jpg", 360, 240},
	{"full/^!2000,200/0/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"125,15,120,140/!60,60/0/default.jpg", 200, "125,15,120,140/51,60/0/default.jpg", 51, 60},
	// Without ^, a size larger than the region is 400 (4.2).
	{"full/360,/0/default.jpg", 400, "", 0, 0},
	{"full/,240/0/default.jpg", 400, "", 0, 0},
	{"full/pct:120/0/default.jpg", 400, "", 0, 0},
	{"full/301,200/0/default.jpg", 400, "", 0, 0},
	{"full/300,201/0/default.jpg", 400, "", 0, 0},
	{"125,15,120,140/121,/0/default.jpg", 400, "", 0, 0},
	// Beyond maxWidth, maxHeight or maxArea is 400, even with ^.
	{"full/^361,/0/default.jpg", 400, "", 0, 0},
	{"full/^,361/0/default.jpg", 400, "", 0, 0},
	{"full/^361,1/0/default.jpg", 400, "", 0, 0},
	{"full/^pct:200/0/default.jpg", 400, "", 0, 0},
	// Less than one pixel is 400.
	{"0,0,300,1/100,/0/default.jpg", 400, "", 0, 0},
	{"full/pct:0.1/0/default.jpg", 400, "", 0, 0},
	// Size syntax: 2.1's full is not 3.0 syntax; zeros; missing sides.
	{"full/full/0/default.jpg", 400, "", 0, 0},
	{"full/^full/0/default.jpg", 400, "", 0, 0},
	{"full/0,/0/default.jpg", 400, "", 0, 0},
	{"full/,0/0/default.jpg", 400, "", 0, 0},
	{"full/0,0/0/default.jpg", 400, "", 0, 0},
	{"full/!0,100/0/default.jpg", 400, "", 0, 0},
	{"full/!100,0/0/default.jpg", 400, "", 0, 0},
	{"full/!100,/0/default.jpg", 400, "", 0, 0},
	{"full/!,100/0/default.jpg", 400, "", 0, 0},
	{"full/pct:0/0/default.jpg", 400, "", 0, 0},
	{"full/pct:/0/default.jpg", 400, "", 0, 0},
	{"full/,/0/default.jpg", 400, "", 0, 0},
	{"full/^/0/default.jpg", 400, "", 0, 0},
	{"full/^^max/0/default.jpg", 400, "", 0, 0},
	{"full/!^100,100/0/default.jpg", 400, "", 0, 0},
	{"full/max,/0/default.jpg", 400, "", 0, 0},
	{"full/1,2,3/0/default.jpg", 400, "", 0, 0},
	{"full/-1,/0/default.jpg", 400, "", 0, 0},
	{"full/+1,/0/default.jpg", 400, "", 0, 0},
	{"full/1.5,/0/default.jpg", 400, "", 0, 0},
	{"full/pct:-5/0/default.jpg", 400, "", 0, 0},
	{"full/pct:5e1/0/default.jpg", 400, "", 0, 0},
	{"full/,^240/0/default.jpg", 400, "", 0, 0}, // the 3.0 example's misprint (IIIF/api#2070)
	{"full/Max/0/default.jpg", 400, "", 0, 0},

	// 4.3 Rotation: multiples of 90 (level 2) and mirroring; 360 is 0.
	{"full/max/90/default.jpg", 200, "full/max/90/default.jpg", 200, 300},
	{"full/max/180/default.jpg", 200, "full/max/180/default.jpg", 300, 200},
	{"full/max/270/default.jpg", 200, "full/max/270/default.jpg", 200, 300},
	{"full/max/360/default.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/max/!0/default.jpg", 200, "full/max/!0/default.jpg", 300, 200},
	{"full/max/!180/default.jpg", 200, "full/max/!180/default.jpg", 300, 200},
	{"full/max/!90/default.jpg", 200, "full/max/!90/default.jpg", 200, 300},
	{"full/max/!360/default.jpg", 200, "full/max/!0/default.jpg", 300, 200},
	{"full/max/90.0/default.jpg", 200, "full/max/90/default.jpg", 200, 300},
	{"full/max/090/default.jpg", 200, "full/max/90/default.jpg", 200, 300},
	{"125,15,120,140/90,/!345/gray.jpg", 501, "", 0, 0}, // 4.6's example: arbitrary angles are not implemented
	{"full/max/22.5/default.png", 501, "", 0, 0},
	{"full/max/0.5/default.jpg", 501, "", 0, 0},
	{"full/max/!45/default.jpg", 501, "", 0, 0},
	{"full/max/361/default.jpg", 400, "", 0, 0},
	{"full/max/360.5/default.jpg", 400, "", 0, 0},
	{"full/max/-90/default.jpg", 400, "", 0, 0},
	{"full/max/+90/default.jpg", 400, "", 0, 0},
	{"full/max/1e2/default.jpg", 400, "", 0, 0},
	{"full/max/nan/default.jpg", 400, "", 0, 0},
	{"full/max/inf/default.jpg", 400, "", 0, 0},
	{"full/max/!/default.jpg", 400, "", 0, 0},
	{"full/max/!!90/default.jpg", 400, "", 0, 0},
	{"full/max/ 90/default.jpg", 400, "", 0, 0},
	{"full/max//default.jpg", 400, "", 0, 0},

	// 4.4 Quality: color is the default of a color image.
	{"full/max/0/color.jpg", 200, "full/max/0/default.jpg", 300, 200},
	{"full/max/0/gray.jpg", 200, "full/max/0/gray.jpg", 300, 200},
	{"full/max/0/bitonal.jpg", 200, "full/max/0/bitonal.jpg", 300, 200},
	{"full/max/0/grey.jpg", 400, "", 0, 0},
	{"full/max/0/native.jpg", 400, "", 0, 0},
	{"full/max/0/Default.jpg", 400, "", 0, 0},
	{"full/max/0/.jpg", 400, "", 0, 0},

	// 4.5 Format: jpg and png; others are unsupported (400).
	{"full/max/0/default.png", 200, "full/max/0/default.png", 300, 200},
	{"full/max/0/gray.png", 200, "full/max/0/gray.png", 300, 200},
	{"full/max/0/default.tif", 400, "", 0, 0},
	{"full/max/0/default.gif", 400, "", 0, 0},
	{"full/max/0/default.jp2", 400, "", 0, 0},
	{"full/max/0/default.pdf", 400, "", 0, 0},
	{"full/max/0/default.webp", 400, "", 0, 0},
	{"full/max/0/default.xyz", 400, "", 0, 0},
	{"full/max/0/default.JPG", 400, "", 0, 0},
	{"full/max/0/default.jpeg", 400, "", 0, 0},
	{"full/max/0/default", 400, "", 0, 0},
	{"full/max/0/default.", 400, "", 0, 0},
	{"full/max/0/default.jpg.png", 400, "", 0, 0},

	// 4.8 Canonical form of a tile request as viewers send them.
	{"256,0,44,200/44,200/0/default.jpg", 200, "256,0,44,200/max/0/default.jpg", 44, 200},
	{"0,0,256,200/128,100/0/default.jpg", 200, "0,0,256,200/128,100/0/default.jpg", 128, 100},
}

// v2Cases walks every parameter form of Image API 2.1 at level 2.
var v2Cases = []conformanceCase{
	// 4.1 Region, as in 3.0 (square is optional at level 2 and served).
	{"full/full/0/default.jpg", 200, "full/full/0/default.jpg", 300, 200},
	{"square/full/0/default.jpg", 200, "50,0,200,200/full/0/default.jpg", 200, 200},
	{"125,15,120,140/full/0/default.jpg", 200, "125,15,120,140/full/0/default.jpg", 120, 140},
	{"pct:41.6,7.5,40,70/full/0/default.jpg", 200, "125,15,120,140/full/0/default.jpg", 120, 140},
	{"125,15,200,200/full/0/default.jpg", 200, "125,15,175,185/full/0/default.jpg", 175, 185},
	{"pct:41.6,7.5,66.6,100/full/0/default.jpg", 200, "125,15,175,185/full/0/default.jpg", 175, 185},
	{"0,0,300,200/full/0/default.jpg", 200, "full/full/0/default.jpg", 300, 200},
	{"300,0,10,10/full/0/default.jpg", 400, "", 0, 0},
	{"0,0,0,10/full/0/default.jpg", 400, "", 0, 0},

	// 4.2 Size: full, max, w, ,h pct:n w,h !w,h; upscaling allowed
	// (sizeAboveFull) within the limits. Canonical: full, w, or w,h.
	{"full/max/0/default.jpg", 200, "full/full/0/default.jpg", 300, 200},
	{"full/150,/0/default.jpg", 200, "full/150,/0/default.jpg", 150, 100},
	{"full/,150/0/default.jpg", 200, "full/225,/0/default.jpg", 225, 150},
	{"full/pct:50/0/default.jpg", 200, "full/150,/0/default.jpg", 150, 100},
	{"full/225,100/0/default.jpg", 200, "full/225,100/0/default.jpg", 225, 100},
	{"full/150,100/0/default.jpg", 200, "full/150,/0/default.jpg", 150, 100},
	{"full/300,200/0/default.jpg", 200, "full/full/0/default.jpg", 300, 200},
	{"full/!225,100/0/default.jpg", 200, "full/150,/0/default.jpg", 150, 100},
	{"full/360,/0/default.jpg", 200, "full/360,/0/default.jpg", 360, 240},
	{"full/pct:120/0/default.jpg", 200, "full/360,/0/default.jpg", 360, 240},
	{"full/!2000,3000/0/default.jpg", 200, "full/360,/0/default.jpg", 360, 240},
	{"full/360,360/0/default.jpg", 200, "full/360,360/0/default.jpg", 360, 360},
	// Beyond the limits is 404 in 2.1 (section 7.2).
	{"full/361,/0/default.jpg", 404, "", 0, 0},
	{"full/pct:200/0/default.jpg", 404, "", 0, 0},
	{"full/0,/0/default.jpg", 400, "", 0, 0},
	{"full/!0,10/0/default.jpg", 400, "", 0, 0},
	// 3.0 syntax is not 2.1 syntax.
	{"full/^max/0/default.jpg", 400, "", 0, 0},
	{"full/^150,/0/default.jpg", 400, "", 0, 0},
	{"full/^!360,360/0/default.jpg", 400, "", 0, 0},

	// 4.3 Rotation, 4.4 Quality, 4.5 Format.
	{"full/full/90/default.jpg", 200, "full/full/90/default.jpg", 200, 300},
	{"full/full/!270/default.jpg", 200, "full/full/!270/default.jpg", 200, 300},
	{"full/full/22.5/default.png", 501, "", 0, 0},
	{"full/full/0/color.jpg", 200, "full/full/0/default.jpg", 300, 200},
	{"full/full/0/gray.jpg", 200, "full/full/0/gray.jpg", 300, 200},
	{"full/full/0/bitonal.png", 200, "full/full/0/bitonal.png", 300, 200},
	{"full/full/0/native.jpg", 400, "", 0, 0},
	{"full/full/0/default.tif", 400, "", 0, 0},
	{"full/full/0/default.webp", 400, "", 0, 0},

	// 4.7 Canonical: the 2.1 example Link header's full/400,/0/default.jpg
	// names a w, size; tile requests in w,h form that keep the aspect
	// ratio are canonically w, (as 2.x viewers send them).
	{"256,0,44,200/44,200/0/default.jpg", 200, "256,0,44,200/full/0/default.jpg", 44, 200},
	{"0,0,256,200/128,100/0/default.jpg", 200, "0,0,256,200/128,/0/default.jpg", 128, 100},
	{"0,0,256,200/128,/0/default.jpg", 200, "0,0,256,200/128,/0/default.jpg", 128, 100},
}

func TestConformanceV3(t *testing.T) {
	t.Parallel()
	runConformance(t, iiif.V3, specImage, specLimits, v3Cases)
}

func TestConformanceV2(t *testing.T) {
	t.Parallel()
	runConformance(t, iiif.V2, specImage, specLimits, v2Cases)
}

// TestConformanceLimits checks max against maxWidth, as in the 3.0 size
// example ("assuming that the image has a maxWidth of 200px"), and the 2.1
// deprecation note: the w, form is canonical for a max that is not full.
func TestConformanceLimits(t *testing.T) {
	t.Parallel()
	lim := iiif.Limits{MaxWidth: 200, MaxHeight: 200, MaxArea: 200 * 200}
	runConformance(t, iiif.V3, specImage, lim, []conformanceCase{
		{"full/max/0/default.jpg", 200, "full/max/0/default.jpg", 200, 133},
		{"full/^max/0/default.jpg", 200, "full/max/0/default.jpg", 200, 133},
		{"full/200,133/0/default.jpg", 200, "full/max/0/default.jpg", 200, 133},
		{"full/200,/0/default.jpg", 200, "full/max/0/default.jpg", 200, 133},
		{"full/!1000,1000/0/default.jpg", 200, "full/max/0/default.jpg", 200, 133},
		{"0,0,100,100/^max/0/default.jpg", 200, "0,0,100,100/^max/0/default.jpg", 200, 200},
		{"0,0,100,100/max/0/default.jpg", 200, "0,0,100,100/max/0/default.jpg", 100, 100},
		{"full/201,/0/default.jpg", 400, "", 0, 0},
		{"full/pct:100/0/default.jpg", 400, "", 0, 0},
	})
	runConformance(t, iiif.V2, specImage, lim, []conformanceCase{
		{"full/max/0/default.jpg", 200, "full/200,/0/default.jpg", 200, 133},
		{"full/200,/0/default.jpg", 200, "full/200,/0/default.jpg", 200, 133},
		{"full/full/0/default.jpg", 404, "", 0, 0},
		{"0,0,100,100/full/0/default.jpg", 200, "0,0,100,100/full/0/default.jpg", 100, 100},
	})
	area := iiif.Limits{MaxWidth: 1000, MaxHeight: 1000, MaxArea: 10000}
	runConformance(t, iiif.V3, specImage, area, []conformanceCase{
		{"full/max/0/default.jpg", 200, "full/max/0/default.jpg", 122, 81},
		{"full/^max/0/default.jpg", 200, "full/max/0/default.jpg", 122, 81},
		{"full/100,100/0/default.jpg", 200, "full/100,100/0/default.jpg", 100, 100},
		{"full/101,100/0/default.jpg", 400, "", 0, 0},
	})
}

// TestConformanceGrayImage checks the qualities of a gray image: color
// "MUST NOT result in an error" and gives the gray default.
func TestConformanceGrayImage(t *testing.T) {
	t.Parallel()
	img := specImage
	img.Gray = true
	for _, v := range []iiif.Version{iiif.V2, iiif.V3} {
		size := "max"
		if v == iiif.V2 {
			size = "full"
		}
		runConformance(t, v, img, specLimits, []conformanceCase{
			{"full/max/0/default.jpg", 200, "full/" + size + "/0/default.jpg", 300, 200},
			{"full/max/0/color.jpg", 200, "full/" + size + "/0/default.jpg", 300, 200},
			{"full/max/0/gray.jpg", 200, "full/" + size + "/0/default.jpg", 300, 200},
			{"full/max/0/bitonal.jpg", 200, "full/" + size + "/0/bitonal.jpg", 300, 200},
		})
	}
}

func runConformance(t *testing.T, v iiif.Version, img iiif.Image, lim iiif.Limits, cases []conformanceCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(fmt.Sprintf("v%d/%s", v, c.path), func(t *testing.T) {
			res, err := resolvePath(v, c.path, img, lim)
			if got := status(err); got != c.status {
				t.Fatalf("status: got %d (%v), want %d", got, err, c.status)
			}
			if err != nil {
				var e *iiif.Error
				if !errors.As(err, &e) || e.Message() == "" {
					t.Fatalf("got %v, want an *iiif.Error with a message", err)
				}
				return
			}
			if res.Canonical != c.canonical {
				t.Errorf("canonical: got %q, want %q", res.Canonical, c.canonical)
			}
			if w, h := res.OutputSize(); w != c.w || h != c.h {
				t.Errorf("size: got %dx%d, want %dx%d", w, h, c.w, c.h)
			}
			// The canonical form is a fixed point: it resolves to itself.
			again, err := resolvePath(v, res.Canonical, img, lim)
			if err != nil || again.Canonical != res.Canonical || again.Region != res.Region ||
				again.Width != res.Width || again.Height != res.Height {
				t.Errorf("canonical %q resolves to %q %v %dx%d (%v), want itself", res.Canonical,
					again.Canonical, again.Region, again.Width, again.Height, err)
			}
		})
	}
}

// resolvePath parses and resolves "region/size/rotation/quality.format".
func resolvePath(v iiif.Version, path string, img iiif.Image, lim iiif.Limits) (iiif.Resolved, error) {
	p := strings.SplitN(path, "/", 4)
	for len(p) < 4 {
		p = append(p, "")
	}
	req, err := iiif.Parse(v, p[0], p[1], p[2], p[3])
	if err != nil {
		return iiif.Resolved{}, err
	}
	return iiif.Resolve(req, img, lim)
}

func status(err error) int {
	if err == nil {
		return 200
	}
	return iiif.StatusOf(err)
}
