package demotiles

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"unicode"

	glyphpbf "github.com/tilesieve/tilesieve/shared/docs/glyphs"
)

// The demo's MapLibre style assets: glyph ranges drawn from the tiles'
// bitmap font, and a one-icon sprite, so a style over the demo tileset can
// be rendered with nothing from the internet.

// glyphScale is the pixels of one font cell in a glyph range: MapLibre
// lays glyphs out for a 24 px em.
const glyphScale = 3

// sdfBuffer and sdfRadius are fontnik's layout of a glyph bitmap: a 3 px
// border around the glyph, distances up to 8 px, the edge at 192.
const (
	sdfBuffer = 3
	sdfRadius = 8.0
	sdfCutoff = 0.25
)

// GlyphRange is the glyph range 0-255 of the font name, as MapLibre reads
// it (a signed distance field per glyph, laid out as fontnik writes them):
// the characters of the tiles' bitmap font that keep accepts.
func GlyphRange(name string, keep func(rune) bool) []byte {
	s := glyphpbf.Stack{Name: name, Range: "0-255"}
	for r := rune(0); r < 256; r++ {
		g, ok := glyphs[r]
		if !ok || !keep(r) {
			continue
		}
		w, h := glyphW*glyphScale, glyphH*glyphScale
		gl := glyphpbf.Glyph{ID: uint32(r), Width: uint32(w), Height: uint32(h), Left: 1, Top: -6, Advance: uint32(w + glyphScale)}
		if r != ' ' {
			gl.Bitmap = sdf(g, w, h)
		} else {
			gl.Width, gl.Height = 0, 0
		}
		s.Glyphs = append(s.Glyphs, gl)
	}
	return glyphpbf.Encode([]glyphpbf.Stack{s})
}

// sdf is the distance field of bitmap g drawn at glyphScale, with the
// border: 255·(1 − cutoff − d/radius) clamped, d the signed distance to the
// shape's edge (negative inside).
func sdf(g [7]string, w, h int) []byte {
	lit := func(x, y int) bool {
		if x < 0 || y < 0 || x >= w || y >= h {
			return false
		}
		return g[y/glyphScale][x/glyphScale] == '#'
	}
	bw, bh := w+2*sdfBuffer, h+2*sdfBuffer
	out := make([]byte, bw*bh)
	reach := int(sdfRadius) + 1
	for y := range bh {
		for x := range bw {
			px, py := x-sdfBuffer, y-sdfBuffer
			in := lit(px, py)
			d := sdfRadius
			for dy := -reach; dy <= reach; dy++ {
				for dx := -reach; dx <= reach; dx++ {
					if lit(px+dx, py+dy) != in {
						d = min(d, math.Hypot(float64(dx), float64(dy))-0.5)
					}
				}
			}
			if in {
				d = -d
			}
			v := 255 * (1 - sdfCutoff - d/sdfRadius)
			out[y*bw+x] = byte(max(0, min(255, math.Round(v))))
		}
	}
	return out
}

// IsDigit and IsLetter split the bitmap font in two: a style that asks for
// both as one font stack needs the server to compose it.
func IsDigit(r rune) bool  { return unicode.IsDigit(r) || r == ' ' }
func IsLetter(r rune) bool { return !unicode.IsDigit(r) }

// MarkerColor is the fill of the sprite's one icon, "marker".
var MarkerColor = color.RGBA{0xE4, 0x00, 0x7C, 0xFF}

// Sprite is a MapLibre sprite of one icon, "marker" (a filled circle in
// MarkerColor), at pixel ratio ratio (1 or 2): its index JSON and image.
func Sprite(ratio int) (index, img []byte, err error) {
	size := 24 * ratio
	m := image.NewRGBA(image.Rect(0, 0, size, size))
	c := float64(size) / 2
	for y := range size {
		for x := range size {
			if math.Hypot(float64(x)+0.5-c, float64(y)+0.5-c) <= c-float64(ratio) {
				m.SetRGBA(x, y, MarkerColor)
			}
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		return nil, nil, fmt.Errorf("demotiles: sprite: %w", err)
	}
	index, err = json.Marshal(map[string]any{
		"marker": map[string]int{"x": 0, "y": 0, "width": size, "height": size, "pixelRatio": ratio},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("demotiles: sprite: %w", err)
	}
	return index, b.Bytes(), nil
}
