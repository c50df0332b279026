package bilinear_test

import (
	"fmt"
	"image"
	"math"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/xyz/internal/bilinear"
)

// mosaic2 is a 2 × 2 mosaic at (10, 20) with grey levels 0, 100, 200, 240
// and the given alphas.
func mosaic2(alpha [4]uint8) *bilinear.RGBA {
	m := &bilinear.RGBA{Rect: image.Rect(10, 20, 12, 22), Pix: make([]uint8, 16), Stride: 8}
	for k, v := range []uint8{0, 100, 200, 240} {
		m.Pix[4*k], m.Pix[4*k+1], m.Pix[4*k+2], m.Pix[4*k+3] = v, v, v, alpha[k]
	}
	return m
}

func TestRGBA(t *testing.T) {
	t.Parallel()
	opaque := [4]uint8{255, 255, 255, 255}
	tests := []struct {
		name  string
		alpha [4]uint8
		u, v  float64
		want  [4]uint8 // dst starts as 1, 2, 3, 4: untouched is no data
	}{
		{"a pixel centre", opaque, 10.5, 20.5, [4]uint8{0, 0, 0, 255}},
		{"between four", opaque, 11, 21, [4]uint8{135, 135, 135, 255}},
		{"at the edge, the outside left out", opaque, 11.9, 21.9, [4]uint8{240, 240, 240, 255}},
		{"a quarter across", opaque, 10.75, 20.5, [4]uint8{25, 25, 25, 255}},
		{"outside", opaque, 9.99, 20.5, [4]uint8{1, 2, 3, 4}},
		{"NaN", opaque, math.NaN(), 20.5, [4]uint8{1, 2, 3, 4}},
		{"no data under the centre", [4]uint8{0, 255, 255, 255}, 10.9, 20.9, [4]uint8{1, 2, 3, 4}},
		// The no-data neighbour (grey 0) does not darken the mean of the others.
		{"a no-data neighbour", [4]uint8{0, 255, 255, 255}, 11.1, 21, [4]uint8{178, 178, 178, 255}},
		{"translucent neighbours", [4]uint8{255, 255, 51, 51}, 11, 20.5, [4]uint8{50, 50, 50, 255}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dst := []uint8{1, 2, 3, 4}
			found := mosaic2(tt.alpha).SampleRow([]float64{tt.u}, []float64{tt.v}, dst)
			if got := [4]uint8(dst); got != tt.want || found != (tt.want != [4]uint8{1, 2, 3, 4}) {
				t.Errorf("got %v (found %v), want %v", got, found, tt.want)
			}
		})
	}
}

func TestFloat(t *testing.T) {
	t.Parallel()
	nan := float32(math.NaN())
	m := &bilinear.Float{Rect: image.Rect(0, 0, 2, 2), Pix: []float32{10, 20, nan, 40}, Stride: 2}
	tests := []struct {
		u, v float64
		want float32 // −1: untouched
	}{
		{0.5, 0.5, 10},
		{1, 0.5, 15},
		{1.5, 1.5, 40},
		{0.5, 1.5, -1}, // NaN under the centre
		{1.2, 1.2, (0.3*20*0.7 + 0.7*40*0.7 + 0.3*10*0.3) / (0.3*0.7 + 0.7*0.7 + 0.3*0.3)},
		{2, 0.5, -1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.u, tt.v), func(t *testing.T) {
			t.Parallel()
			dst := []float32{-1}
			m.SampleRow([]float64{tt.u}, []float64{tt.v}, dst)
			if math.Abs(float64(dst[0]-tt.want)) > 1e-4 {
				t.Errorf("got %v, want %v", dst[0], tt.want)
			}
		})
	}
}

// BenchmarkSampleRow samples a 256-pixel row at a slant across a 512 × 512
// mosaic with data everywhere: the common case.
func BenchmarkSampleRow(b *testing.B) {
	const n = 512
	us, vs := make([]float64, 256), make([]float64, 256)
	for i := range us {
		us[i], vs[i] = 3.3+float64(i)*1.37, 100.2+float64(i)*0.11
	}
	b.Run("RGBA", func(b *testing.B) {
		m := &bilinear.RGBA{Rect: image.Rect(0, 0, n, n), Pix: make([]uint8, 4*n*n), Stride: 4 * n}
		for i := range m.Pix {
			m.Pix[i] = uint8(i) | 3
		}
		dst := make([]uint8, 4*256)
		b.ReportAllocs()
		for b.Loop() {
			m.SampleRow(us, vs, dst)
		}
	})
	b.Run("Float", func(b *testing.B) {
		m := &bilinear.Float{Rect: image.Rect(0, 0, n, n), Pix: make([]float32, n*n), Stride: n}
		for i := range m.Pix {
			m.Pix[i] = float32(i % 1000)
		}
		dst := make([]float32, 256)
		b.ReportAllocs()
		for b.Loop() {
			m.SampleRow(us, vs, dst)
		}
	})
}
