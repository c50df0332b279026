package tile

import (
	"strings"
)

// Content types the key rules decide.
const (
	ContentTypeMVT   = "application/vnd.mapbox-vector-tile"
	ContentTypeGlyph = "application/x-protobuf"
)

// ContentTypeOfExt is the content type of the tile and document formats
// tilesieve serves, by extension (without the dot, any case); "" for another.
func ContentTypeOfExt(ext string) string {
	switch strings.ToLower(ext) {
	case "pbf", "mvt":
		return ContentTypeMVT
	case "png": // sprite.png and sprite@2x.png too
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	case "avif":
		return "image/avif"
	case "json": // style.json, sprite.json, TileJSON
		return "application/json"
	}
	return ""
}
