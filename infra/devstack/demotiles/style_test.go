package demotiles_test

import (
	"bytes"
	"encoding/json"
	"image/png"
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
)

// TestGlyphRange: a range decodes as one stack of the font's kept
// characters, each lit glyph an SDF with fontnik's 3 px border, inside
// above the edge value and the border's corners outside it.
func TestGlyphRange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		keep  func(rune) bool
		has   []rune
		hasnt []rune
	}{
		{"Demo Digits", demotiles.IsDigit, []rune("0 9"), []rune("AZ")},
		{"Demo Letters", demotiles.IsLetter, []rune("AZ /"), []rune("09")},
	} {
		t.Run(c.name, func(t *testing.T) {
			stacks, err := glyphs.Decode(demotiles.GlyphRange(c.name, c.keep))
			if err != nil {
				t.Fatal(err)
			}
			if len(stacks) != 1 || stacks[0].Name != c.name || stacks[0].Range != "0-255" {
				t.Fatalf("stacks: got %d, want one named %v", len(stacks), c.name)
			}
			ids := map[rune]glyphs.Glyph{}
			for _, g := range stacks[0].Glyphs {
				ids[rune(g.ID)] = g
			}
			for _, r := range c.has {
				if _, ok := ids[r]; !ok {
					t.Errorf("%q: missing", r)
				}
			}
			for _, r := range c.hasnt {
				if _, ok := ids[r]; ok {
					t.Errorf("%q: present, want it in the other font", r)
				}
			}
			for r, g := range ids {
				if r == ' ' {
					continue
				}
				w, h := int(g.Width)+6, int(g.Height)+6
				if len(g.Bitmap) != w*h {
					t.Fatalf("%q: bitmap %d bytes, want %d", r, len(g.Bitmap), w*h)
				}
				if corner := g.Bitmap[0]; corner >= 192 {
					t.Errorf("%q: border corner %d, want outside (< 192)", r, corner)
				}
				if top := slices.Max(g.Bitmap); top <= 192 {
					t.Errorf("%q: no pixel inside the glyph (max %d)", r, top)
				}
			}
		})
	}
}

// TestSprite: the index names one icon of the image's size at its ratio.
func TestSprite(t *testing.T) {
	t.Parallel()
	for _, ratio := range []int{1, 2} {
		index, img, err := demotiles.Sprite(ratio)
		if err != nil {
			t.Fatal(err)
		}
		var idx map[string]struct{ X, Y, Width, Height, PixelRatio int }
		if err := json.Unmarshal(index, &idx); err != nil {
			t.Fatal(err)
		}
		m, err := png.Decode(bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		mk := idx["marker"]
		if len(idx) != 1 || mk.Width != 24*ratio || mk.Height != 24*ratio || mk.PixelRatio != ratio || m.Bounds().Dx() != mk.Width || m.Bounds().Dy() != mk.Height {
			t.Errorf("ratio %d: got index %s and a %v image, want one %d px marker", ratio, index, m.Bounds(), 24*ratio)
		}
	}
}
