package glyphs_test

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
)

// A stack of two fonts, composed from the range of each.
func ExampleCompose() {
	req, err := glyphs.ParseKey("fonts/Noto Sans Bold,Noto Sans Regular/0-255.pbf")
	if err != nil {
		panic(err)
	}
	bold := glyphs.Encode([]glyphs.Stack{{Name: "Noto Sans Bold", Range: "0-255", Glyphs: []glyphs.Glyph{{ID: 65, Advance: 8}}}})
	regular := glyphs.Encode([]glyphs.Stack{{Name: "Noto Sans Regular", Range: "0-255", Glyphs: []glyphs.Glyph{{ID: 65, Advance: 7}, {ID: 66, Advance: 7}}}})
	fmt.Println(req.FontKey(0))
	fmt.Println(req.FontKey(1))
	out, err := glyphs.Compose(req, [][]byte{bold, regular})
	if err != nil {
		panic(err)
	}
	stacks, _ := glyphs.Decode(out)
	for _, g := range stacks[0].Glyphs {
		fmt.Println(stacks[0].Name, g.ID, g.Advance)
	}
	// Output:
	// fonts/Noto Sans Bold/0-255.pbf
	// fonts/Noto Sans Regular/0-255.pbf
	// Noto Sans Bold,Noto Sans Regular 65 8
	// Noto Sans Bold,Noto Sans Regular 66 7
}
