package pixels

import (
	"encoding/binary"
	"image"
	"image/color"
	"math"
	"testing"
)

func TestImage8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		buf           []byte
		bands         int
		premultiplied bool
		minIsWhite    bool
		want          color.Color
	}{
		{"gray", []byte{10, 20}, 1, false, false, color.Gray{20}},
		{"min is white", []byte{10, 20}, 1, false, true, color.Gray{235}},
		{"gray alpha", []byte{10, 1, 20, 2}, 2, false, false, color.NRGBA{20, 20, 20, 2}},
		{"gray alpha premultiplied", []byte{1, 10, 2, 20}, 2, true, false, color.RGBA{2, 2, 2, 20}},
		{"rgb", []byte{1, 2, 3, 4, 5, 6}, 3, false, false, color.RGBA{4, 5, 6, 255}},
		{"rgba", []byte{1, 2, 3, 4, 5, 6, 7, 8}, 4, false, false, color.NRGBA{5, 6, 7, 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img := Image8(tc.buf, 2, 1, tc.bands, tc.premultiplied, tc.minIsWhite)
			if got := img.At(1, 0); got != tc.want {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestFloat32(t *testing.T) {
	t.Parallel()
	be := binary.BigEndian
	if got := Float32(be.AppendUint16(nil, 0xFFFE), 1, 16, true, be); got[0] != -2 {
		t.Errorf("got %v, want -2", got[0])
	}
	if got := Float32(be.AppendUint16(nil, 0xFFFE), 1, 16, false, be); got[0] != 65534 {
		t.Errorf("got %v, want 65534", got[0])
	}
	le := binary.LittleEndian
	if got := Float32(le.AppendUint32(nil, math.Float32bits(-1.5)), 1, 32, false, le); got[0] != -1.5 {
		t.Errorf("got %v, want -1.5", got[0])
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	// 10 pixels a row: two bytes, the second padded.
	m := Mask([]byte{0b10000001, 0b01000000, 0, 0}, 10, 2, 1)
	for x, want := range []uint8{255, 0, 0, 0, 0, 0, 0, 255, 0, 255} {
		if got := m.AlphaAt(x, 0).A; got != want {
			t.Errorf("pixel %d: got %d, want %d", x, got, want)
		}
	}
	if got := Mask(nil, 4, 4, 1).AlphaAt(3, 3).A; got != 0 {
		t.Errorf("got %d for a missing mask, want 0", got)
	}
}

func TestFromLimitedYCbCr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		y, cb, cr uint8
		want      color.RGBA
	}{
		{16, 128, 128, color.RGBA{0, 0, 0, 255}},
		{235, 128, 128, color.RGBA{255, 255, 255, 255}},
		{126, 128, 128, color.RGBA{128, 128, 128, 255}},
		{81, 90, 240, color.RGBA{255, 0, 0, 255}}, // BT.601 red
	}
	for _, tc := range tests {
		m := image.NewYCbCr(image.Rect(0, 0, 1, 1), image.YCbCrSubsampleRatio444)
		m.Y[0], m.Cb[0], m.Cr[0] = tc.y, tc.cb, tc.cr
		got := FromLimitedYCbCr(m).(*image.RGBA).RGBAAt(0, 0)
		if diff(got.R, tc.want.R) > 2 || diff(got.G, tc.want.G) > 2 || diff(got.B, tc.want.B) > 2 || got.A != 255 {
			t.Errorf("YCbCr %d,%d,%d: got %v, want %v", tc.y, tc.cb, tc.cr, got, tc.want)
		}
	}
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}
