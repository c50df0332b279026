// Package emptytile makes the answers for missing tiles of sparse tilesets
// (MISSING_TILE=empty): a blank tile of the format the key's extension
// names.
package emptytile

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
)

// Tile is a blank tile and its content type.
type Tile struct {
	Body        []byte
	ContentType string
}

const emptyTileSize = 256

// Make encodes the blank tiles, by extension (".png").
func Make() map[string]Tile {
	var pngBuf, jpgBuf bytes.Buffer
	// A fully transparent PNG compresses to a few hundred bytes.
	transparent := image.NewNRGBA(image.Rect(0, 0, emptyTileSize, emptyTileSize))
	_ = png.Encode(&pngBuf, transparent) // cannot fail on an in-memory image
	white := image.NewGray(image.Rect(0, 0, emptyTileSize, emptyTileSize))
	for i := range white.Pix {
		white.Pix[i] = 0xff
	}
	_ = jpeg.Encode(&jpgBuf, white, &jpeg.Options{Quality: 75})
	return map[string]Tile{
		".png":  {pngBuf.Bytes(), "image/png"},
		".jpg":  {jpgBuf.Bytes(), "image/jpeg"},
		".jpeg": {jpgBuf.Bytes(), "image/jpeg"},
		// An empty vector tile is zero bytes: a tile with no layers.
		".pbf":  {nil, contentTypeMVT},
		".mvt":  {nil, contentTypeMVT},
		".json": {[]byte("{}"), "application/json"},
	}
}

const contentTypeMVT = "application/vnd.mapbox-vector-tile"
