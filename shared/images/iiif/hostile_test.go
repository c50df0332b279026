package iiif_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// TestHostile sends what an attacker might: numbers past int64, huge
// percentages and sizes, zeros after !, very long parameters. Each gets a
// 400 (404 for 2.1 sizes past the limits) with a short message.
func TestHostile(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", 1<<20)
	cases := []struct {
		v      iiif.Version
		path   string
		status int
	}{
		{iiif.V3, "9223372036854775807,0,1,1/max/0/default.jpg", 400},
		{iiif.V3, "0,0,9223372036854775808,1/max/0/default.jpg", 400},
		{iiif.V3, "0,0,99999999999999999999999,1/max/0/default.jpg", 400},
		{iiif.V3, "999999999999999,0,1,1/max/0/default.jpg", 400},
		{iiif.V3, "0,0,999999999999999,999999999999999/max/0/default.jpg", 200},
		{iiif.V3, "0000000000000000000000000000000000000000001,0,1,1/max/0/default.jpg", 200},
		{iiif.V3, "pct:99999999999999999999999999999,0,1,1/max/0/default.jpg", 400},
		{iiif.V3, "pct:0,0,99999999999999999999999999999,1/max/0/default.jpg", 200},
		{iiif.V3, "pct:0,0,999999999999999999999999999999999,1/max/0/default.jpg", 400},
		{iiif.V3, "pct:0.0000000000000000000000000001,0,1,1/max/0/default.jpg", 200},
		{iiif.V3, "full/99999999999999,/0/default.jpg", 400},
		{iiif.V3, "full/^99999999999999,/0/default.jpg", 400},
		{iiif.V3, "full/^,99999999999999/0/default.jpg", 400},
		{iiif.V3, "full/^999999999999999,999999999999999/0/default.jpg", 400},
		{iiif.V3, "full/9999999999999999,/0/default.jpg", 400},
		{iiif.V3, "full/^pct:99999999999999999999999999999/0/default.jpg", 400},
		{iiif.V3, "full/^pct:0.0000000000000000000001/0/default.jpg", 400},
		{iiif.V3, "full/!999999999999999,999999999999999/0/default.jpg", 200},
		{iiif.V3, "full/^!999999999999999,999999999999999/0/default.jpg", 200},
		{iiif.V3, "full/!0,0/0/default.jpg", 400},
		{iiif.V3, "full/^!0,1/0/default.jpg", 400},
		{iiif.V3, "full/!1,1/0/default.jpg", 200},
		{iiif.V3, "full/max/99999999999999999999999999999/default.jpg", 400},
		{iiif.V3, "full/max/0.000000000000000000000000000001/default.jpg", 501},
		{iiif.V2, "full/99999999999999,/0/default.jpg", 404},
		{iiif.V2, "full/pct:99999999999999999999999999999/0/default.jpg", 404},
		{iiif.V2, "full/!999999999999999,999999999999999/0/default.jpg", 200},
		{iiif.V2, "full/9999999999999999,/0/default.jpg", 400},
		{iiif.V3, long + "/max/0/default.jpg", 400},
		{iiif.V3, "full/" + long + "/0/default.jpg", 400},
		{iiif.V3, "full/max/" + long + "/default.jpg", 400},
		{iiif.V3, "full/max/0/default." + long, 400},
		{iiif.V3, "full/max/0/" + strings.Repeat(".", 1<<20), 400},
		{iiif.V3, "full/max/0/default.jpg\x00", 400},
		{iiif.V3, "full\x00/max/0/default.jpg", 400},
		{iiif.V3, "\xff\xfe/max/0/default.jpg", 400},
	}
	for _, c := range cases {
		name := c.path
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := resolvePath(c.v, c.path, specImage, specLimits)
			if got := status(err); got != c.status {
				t.Fatalf("got %d (%v), want %d", got, err, c.status)
			}
			var e *iiif.Error
			if err != nil && (!errors.As(err, &e) || len(e.Message()) > 200) {
				t.Errorf("got %v, want an *iiif.Error with a short message", err)
			}
			if err == nil && (res.Width > 360 || res.Height > 360) {
				t.Errorf("got %dx%d, beyond the limits", res.Width, res.Height)
			}
		})
	}
}

// TestParseDoesNotAllocateByInput checks a megabyte parameter costs no more
// allocations than a short bad one: it is refused by its length first.
func TestParseDoesNotAllocateByInput(t *testing.T) {
	long := strings.Repeat("1", 1<<20)
	short := testing.AllocsPerRun(20, func() { _, _ = iiif.Parse(iiif.V3, "x", "max", "0", "default.jpg") })
	huge := testing.AllocsPerRun(20, func() { _, _ = iiif.Parse(iiif.V3, long, "max", "0", "default.jpg") })
	if huge > short {
		t.Errorf("allocations: %v for a megabyte region, %v for a short one", huge, short)
	}
	ok := testing.AllocsPerRun(20, func() { _, _ = iiif.Parse(iiif.V3, "pct:1.5,2,30,40", "^!300,200", "!90", "gray.png") })
	if ok != 0 {
		t.Errorf("a valid request allocates %v times, want 0", ok)
	}
}

// TestHostileImages checks descriptions a broken reader could make are
// refused as errors, not panics.
func TestHostileImages(t *testing.T) {
	t.Parallel()
	req, err := iiif.Parse(iiif.V3, "full", "max", "0", "default.jpg")
	if err != nil {
		t.Fatal(err)
	}
	for name, img := range map[string]iiif.Image{
		"no levels":       {},
		"zero size":       {Levels: []iiif.Level{{Width: 0, Height: 10, TileWidth: 256, TileHeight: 256}}},
		"huge":            {Levels: []iiif.Level{{Width: 1 << 40, Height: 10, TileWidth: 256, TileHeight: 256}}},
		"zero tiles":      {Levels: []iiif.Level{{Width: 10, Height: 10}}},
		"growing levels":  {Levels: []iiif.Level{{Width: 10, Height: 10, TileWidth: 8, TileHeight: 8}, {Width: 20, Height: 20, TileWidth: 8, TileHeight: 8}}},
		"negative":        {Levels: []iiif.Level{{Width: -1, Height: -1, TileWidth: -1, TileHeight: -1}}},
		"too many levels": {Levels: make([]iiif.Level, 100)},
	} {
		if _, err := iiif.Resolve(req, img, specLimits); err == nil || iiif.StatusOf(err) != 500 {
			t.Errorf("%s: got %v, want an error that is not the client's", name, err)
		}
	}
	for name, lim := range map[string]iiif.Limits{
		"zero":     {},
		"negative": {MaxWidth: -1, MaxHeight: 10, MaxArea: 10},
		"huge":     {MaxWidth: 1 << 40, MaxHeight: 1 << 40, MaxArea: 1 << 62},
	} {
		if _, err := iiif.Resolve(req, specImage, lim); err == nil {
			t.Errorf("limits %s: got no error", name)
		}
	}
}
