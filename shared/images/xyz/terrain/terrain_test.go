package terrain_test

import (
	"fmt"
	"image"
	"math"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/xyz"
	"github.com/tilesieve/tilesieve/shared/images/xyz/terrain"
)

func TestElevationEncodings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		h              float32
		rgb, terrarium [3]uint8
		backRGB        float64 // what terrain-RGB decodes to
	}{
		{0, [3]uint8{1, 134, 160}, [3]uint8{128, 0, 0}, 0},
		{8848.86, [3]uint8{2, 224, 73}, [3]uint8{162, 144, 220}, 8848.9},
		{-10.05, [3]uint8{1, 134, 59}, [3]uint8{127, 245, 243}, -10.1},
		{-10000, [3]uint8{0, 0, 0}, [3]uint8{88, 240, 0}, -10000},
		{-20000, [3]uint8{0, 0, 0}, [3]uint8{49, 224, 0}, -10000},               // below terrain-RGB: clamped
		{1e9, [3]uint8{255, 255, 255}, [3]uint8{255, 255, 255}, terrain.RGBMax}, // above both
		{-1e9, [3]uint8{0, 0, 0}, [3]uint8{0, 0, 0}, -10000},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.h), func(t *testing.T) {
			t.Parallel()
			f := xyz.NewFloatImage(image.Rect(0, 0, 1, 1))
			f.Set(0, 0, tt.h)
			px := terrain.RGB(f).Pix[:4]
			if got := [3]uint8{px[0], px[1], px[2]}; got != tt.rgb || px[3] != 255 {
				t.Errorf("terrain-RGB: got %v alpha %d, want %v", got, px[3], tt.rgb)
			}
			if got := terrain.DecodeRGB(px[0], px[1], px[2]); math.Abs(got-tt.backRGB) > 1e-6 {
				t.Errorf("terrain-RGB decodes to %v, want %v", got, tt.backRGB)
			}
			px = terrain.Terrarium(f).Pix[:4]
			if got := [3]uint8{px[0], px[1], px[2]}; got != tt.terrarium {
				t.Errorf("Terrarium: got %v, want %v", got, tt.terrarium)
			}
			if back := terrain.DecodeTerrarium(px[0], px[1], px[2]); tt.h > -30000 && tt.h < 30000 && math.Abs(back-float64(tt.h)) > 1.0/256+1e-3 {
				t.Errorf("Terrarium decodes to %v, want %v within 1/256", back, tt.h)
			}
		})
	}
	for _, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		f := xyz.NewFloatImage(image.Rect(0, 0, 1, 1))
		f.Set(0, 0, v)
		if px := terrain.RGB(f).Pix[:4]; px[3] != 0 || terrain.DecodeRGB(px[0], px[1], px[2]) != 0 {
			t.Errorf("terrain-RGB of %v: got %v, want transparent 0 m", v, px)
		}
		if px := terrain.Terrarium(f).Pix[:4]; px[3] != 0 || terrain.DecodeTerrarium(px[0], px[1], px[2]) != 0 {
			t.Errorf("Terrarium of %v: got %v, want transparent 0 m", v, px)
		}
	}
	short := &xyz.FloatImage{Pix: make([]float32, 3), Stride: 2, Rect: image.Rect(0, 0, 2, 2)}
	if px := terrain.RGB(short).Pix; px[15] != 0 || px[3] != 255 {
		t.Errorf("a FloatImage with a short Pix: got %v, want the missing pixel transparent", px)
	}
}
