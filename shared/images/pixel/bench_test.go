package pixel

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"testing"

	"golang.org/x/image/draw"
	"golang.org/x/image/math/f64"
)

// photo is a smooth w×h color image with fine detail, like a scan.
func photo(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x), float64(y)
			i := m.PixOffset(x, y)
			m.Pix[i] = uint8(128 + 100*math.Sin(fx/13+fy/71))
			m.Pix[i+1] = uint8(128 + 100*math.Cos(fx/37-fy/11))
			m.Pix[i+2] = uint8(128 + 100*math.Sin((fx+2*fy)/7))
			m.Pix[i+3] = 0xff
		}
	}
	return m
}

// BenchmarkScale512From1024 scales a 1024×1024 level to 512×512 with each
// kernel, on whole pixels (Scale) and at a fractional offset (Transform,
// as the pipeline samples an area off the level's grid).
func BenchmarkScale512From1024(b *testing.B) {
	src := photo(1025, 1025)
	whole := image.Rect(0, 0, 1024, 1024)
	for _, k := range []struct {
		name string
		k    draw.Interpolator
	}{{"ApproxBiLinear", draw.ApproxBiLinear}, {"BiLinear", draw.BiLinear}, {"CatmullRom", draw.CatmullRom}} {
		b.Run(k.name+"/Scale", func(b *testing.B) {
			dst := image.NewRGBA(image.Rect(0, 0, 512, 512))
			b.ReportAllocs()
			for b.Loop() {
				k.k.Scale(dst, dst.Rect, src, whole, draw.Src, nil)
			}
		})
		b.Run(k.name+"/Transform", func(b *testing.B) {
			dst := image.NewRGBA(image.Rect(0, 0, 512, 512))
			s := 512 / 1024.5
			b.ReportAllocs()
			for b.Loop() {
				k.k.Transform(dst, f64.Aff3{s, 0, -0.25 * s, 0, s, -0.25 * s}, src, src.Rect, draw.Src, nil)
			}
		})
	}
}

// BenchmarkRun512From1024 runs the whole pipeline for a 512×512 JPEG answer
// from a 1024×1024 area of 256×256 tiles: assemble 16 tiles, scale, encode.
func BenchmarkRun512From1024(b *testing.B) {
	p, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	tiles := &tilesOf{src: photo(1024, 1024), tw: 256, th: 256}
	for _, area := range []struct {
		name string
		r    Rect
	}{{"whole", Rect{}}, {"fractional", Rect{0.5, 0.5, 1023.5, 1023.5}}} {
		b.Run(area.name, func(b *testing.B) {
			job := Job{Source: image.Rect(0, 0, 1024, 1024), Area: area.r, TileSize: image.Pt(256, 256), Tile: tiles.tile, Width: 512, Height: 512}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Run(context.Background(), job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncode512 encodes a 512×512 answer in each format, beside the
// standard library's defaults.
func BenchmarkEncode512(b *testing.B) {
	m := photo(512, 512)
	g := gray(m, false)
	var buf bytes.Buffer
	cases := []struct {
		name string
		enc  func() error
	}{
		{"JPEG/q90", func() error { return jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90}) }},
		{"JPEG/q75", func() error { return jpeg.Encode(&buf, m, &jpeg.Options{Quality: 75}) }},
		{"JPEG/gray", func() error { return jpeg.Encode(&buf, g, &jpeg.Options{Quality: 90}) }},
		{"PNG/BestSpeed", func() error { return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, m) }},
		{"PNG/Default", func() error { return png.Encode(&buf, m) }},
		{"PNG/gray", func() error { return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, g) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := c.enc(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buf.Len()), "bytes")
		})
	}
}

// BenchmarkGray512 converts a 512×512 color answer to gray.
func BenchmarkGray512(b *testing.B) {
	m := photo(512, 512)
	b.ReportAllocs()
	for b.Loop() {
		gray(m, false)
	}
}
