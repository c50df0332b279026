package iiif_test

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// BenchmarkResolve parses, resolves and canonicalises requests as viewers
// send them: a tile, a confined thumbnail, a percent region turned.
func BenchmarkResolve(b *testing.B) {
	img := pyramid(40000, 30000, 256, 256, false)
	lim := iiif.Limits{MaxWidth: 4096, MaxHeight: 4096, MaxArea: 1 << 24}
	for _, c := range []struct{ name, region, size, rotation, qf string }{
		{"tile", "8192,4096,2048,2048", "256,256", "0", "default.jpg"},
		{"thumbnail", "full", "!200,200", "0", "default.jpg"},
		{"pct", "pct:10.5,20,30,40", "pct:10", "!90", "gray.png"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req, err := iiif.Parse(iiif.V3, c.region, c.size, c.rotation, c.qf)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := iiif.Resolve(req, img, lim); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlan plans a tile request against a deep pyramid.
func BenchmarkPlan(b *testing.B) {
	img := pyramid(40000, 30000, 256, 256, false)
	lim := iiif.Limits{MaxWidth: 4096, MaxHeight: 4096, MaxArea: 1 << 24}
	req, err := iiif.Parse(iiif.V3, "8192,4096,2048,2048", "256,256", "0", "default.jpg")
	if err != nil {
		b.Fatal(err)
	}
	res, err := iiif.Resolve(req, img, lim)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iiif.NewPlan(res, img); err != nil {
			b.Fatal(err)
		}
	}
}
