package origin

import (
	"mime"
	"path"
	"strings"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// ContentTypeFor is the content type of the object at key whose stored type
// is stored: the stored type unless it is missing or generic, else the one
// the key's extension names. A glyph range (glyphs.ParseKey:
// fonts/{fontstack}/{start}-{end}.pbf) is a protobuf, not a vector tile,
// even when it was stored as one, as every .pbf is by extension.
func ContentTypeFor(key, stored string) string {
	ext := strings.ToLower(path.Ext(key))
	if ext == ".pbf" && (stored == "" || stored == tile.ContentTypeMVT || generic(stored)) && glyphs.IsKey(key) {
		return tile.ContentTypeGlyph
	}
	if stored != "" && !generic(stored) {
		return stored
	}
	if t := tile.ContentTypeOfExt(strings.TrimPrefix(ext, ".")); t != "" {
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

func generic(t string) bool { return t == "binary/octet-stream" || t == "application/octet-stream" }
