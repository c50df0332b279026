package tile

import (
	"mime"
	"path"
	"strings"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
)

// Content types the key rules decide.
const (
	ContentTypeMVT   = "application/vnd.mapbox-vector-tile"
	ContentTypeGlyph = "application/x-protobuf"
)

// ContentTypeFor is the content type of the object at key whose stored type
// is stored: the stored type unless it is missing or generic, else the one
// the key's extension names. A glyph range (glyphs.ParseKey:
// fonts/{fontstack}/{start}-{end}.pbf) is a protobuf, not a vector tile,
// even when it was stored as one, as every .pbf is by extension.
func ContentTypeFor(key, stored string) string {
	ext := strings.ToLower(path.Ext(key))
	if ext == ".pbf" && (stored == "" || stored == ContentTypeMVT || generic(stored)) && glyphs.IsKey(key) {
		return ContentTypeGlyph
	}
	if stored != "" && !generic(stored) {
		return stored
	}
	if t := ContentTypeOfExt(strings.TrimPrefix(ext, ".")); t != "" {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	if stored != "" {
		return stored
	}
	return "application/octet-stream"
}

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

func generic(t string) bool { return t == "binary/octet-stream" || t == "application/octet-stream" }
