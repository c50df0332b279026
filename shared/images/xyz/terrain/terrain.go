// Package terrain encodes elevations (an xyz.FloatImage in metres) as the
// PNG-ready pixels of the two elevation tile formats web maps decode: Mapbox
// terrain-RGB and Terrarium. No data (NaN or ±Inf) is transparent, and its
// colour is the encoding of 0 m, so a client that ignores alpha sees sea
// level rather than a pit 10 km deep. Heights outside an encoding's range
// are clamped to it.
package terrain

import (
	"image"
	"math"

	"github.com/tilesieve/tilesieve/shared/images/xyz"
)

// Mapbox terrain-RGB: h = −10000 + (R·65536 + G·256 + B) · 0.1.
const (
	RGBMin = -10000.0
	RGBMax = RGBMin + (1<<24-1)*0.1
)

// Terrarium: h = R·256 + G + B/256 − 32768.
const (
	TerrariumMin = -32768.0
	TerrariumMax = 32767.0 + 255.0/256
)

// RGB encodes heights as Mapbox terrain-RGB: v = round((h + 10000) · 10),
// R = v/65536, G = v/256 mod 256, B = v mod 256.
func RGB(f *xyz.FloatImage) *image.NRGBA {
	return encode(f, terrainRGB)
}

// Terrarium encodes heights as Terrarium: v = h + 32768, R = ⌊v/256⌋,
// G = ⌊v⌋ mod 256, B = ⌊frac(v) · 256⌋.
func Terrarium(f *xyz.FloatImage) *image.NRGBA {
	return encode(f, terrarium)
}

func encode(f *xyz.FloatImage, enc func(float64) (r, g, b uint8)) *image.NRGBA {
	out := image.NewNRGBA(image.Rect(0, 0, f.Rect.Dx(), f.Rect.Dy()))
	zr, zg, zb := enc(0)
	fast := f.Stride >= f.Rect.Dx() && len(f.Pix) >= (f.Rect.Dy()-1)*f.Stride+f.Rect.Dx()
	for y := range f.Rect.Dy() {
		dst := out.Pix[y*out.Stride:][:4*f.Rect.Dx()]
		for i := range f.Rect.Dx() {
			var h float64
			if fast {
				h = float64(f.Pix[y*f.Stride+i])
			} else {
				h = float64(f.At(f.Rect.Min.X+i, f.Rect.Min.Y+y))
			}
			d := dst[4*i:][:4]
			if math.IsNaN(h) || math.IsInf(h, 0) {
				d[0], d[1], d[2], d[3] = zr, zg, zb, 0
				continue
			}
			d[0], d[1], d[2] = enc(h)
			d[3] = 0xff
		}
	}
	return out
}

func terrainRGB(h float64) (r, g, b uint8) {
	v := uint32(math.Round((max(RGBMin, min(RGBMax, h)) - RGBMin) * 10))
	return uint8(v >> 16), uint8(v >> 8), uint8(v)
}

func terrarium(h float64) (r, g, b uint8) {
	v := max(TerrariumMin, min(TerrariumMax, h)) - TerrariumMin
	i := math.Floor(v)
	return uint8(int(i) >> 8), uint8(int(i)), uint8(math.Floor((v - i) * 256))
}

// DecodeRGB is the height of a terrain-RGB pixel.
func DecodeRGB(r, g, b uint8) float64 {
	return RGBMin + float64(uint32(r)<<16|uint32(g)<<8|uint32(b))*0.1
}

// DecodeTerrarium is the height of a Terrarium pixel.
func DecodeTerrarium(r, g, b uint8) float64 {
	return float64(r)*256 + float64(g) + float64(b)/256 + TerrariumMin
}
