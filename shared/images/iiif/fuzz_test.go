package iiif_test

import (
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// FuzzParse feeds both versions arbitrary parameters. Whatever Parse
// accepts, Resolve and NewPlan must handle without panicking; whatever
// resolves stays within the image and the limits, and its canonical form
// parses and resolves to itself.
func FuzzParse(f *testing.F) {
	for _, c := range v3Cases {
		p := strings.SplitN(c.path, "/", 4)
		if len(p) == 4 {
			f.Add(uint8(3), p[0], p[1], p[2], p[3])
		}
	}
	for _, c := range v2Cases {
		p := strings.SplitN(c.path, "/", 4)
		if len(p) == 4 {
			f.Add(uint8(2), p[0], p[1], p[2], p[3])
		}
	}
	img := pyramid(1001, 701, 256, 256, false)
	f.Fuzz(func(t *testing.T, version uint8, region, size, rotation, qf string) {
		v := iiif.V3
		if version%2 == 0 {
			v = iiif.V2
		}
		req, err := iiif.Parse(v, region, size, rotation, qf)
		if err != nil {
			if s := iiif.StatusOf(err); s != 400 && s != 501 {
				t.Fatalf("parse: status %d for %v", s, err)
			}
			return
		}
		res, err := iiif.Resolve(req, img, specLimits)
		if err != nil {
			if s := iiif.StatusOf(err); s != 400 && s != 404 && s != 501 {
				t.Fatalf("resolve: status %d for %v", s, err)
			}
			return
		}
		if !res.Region.In(imageRect(img)) || res.Region.Empty() {
			t.Fatalf("region %v is not inside the image", res.Region)
		}
		if res.Width < 1 || res.Height < 1 || res.Width > 360 || res.Height > 360 || res.Width*res.Height > 360*360 {
			t.Fatalf("size %dx%d is outside the limits", res.Width, res.Height)
		}
		again, err := resolvePath(v, res.Canonical, img, specLimits)
		if err != nil || again.Canonical != res.Canonical || again.Region != res.Region || again.Width != res.Width || again.Height != res.Height {
			t.Fatalf("canonical %q resolves to %q (%v)", res.Canonical, again.Canonical, err)
		}
		plan, err := iiif.NewPlan(res, img)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		lv := img.Levels[plan.Level]
		if plan.Source.Empty() || !plan.Source.In(imageRect(iiif.Image{Levels: []iiif.Level{lv}})) || plan.DecodedPixels < 1 {
			t.Fatalf("plan %+v is outside level %d", plan, plan.Level)
		}
	})
}
