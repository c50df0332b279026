// Package tilename is the naming rule of tilesets, spelled once: a tileset
// NAME is served under the tile directory NAME/, described by the TileJSON
// NAME.json, and stored either as tiles under NAME/ (with tippecanoe's
// NAME/metadata.json beside them) or as one object of a format of
// shared/formats (NAME.pmtiles, NAME.mbtiles). Names are tile keys without a
// slash; the functions here are pure and check nothing else.
package tilename

import (
	"net/url"
	"strings"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
	"github.com/tilesieve/tilesieve/shared/formats"
)

// Extensions and file names of the rule.
const (
	TileJSONExt  = ".json"         // NAME.json is the tileset's TileJSON
	MetadataFile = "metadata.json" // NAME/metadata.json describes a tile directory
)

// Dir is the tile directory of the tileset name: "osm/".
func Dir(name string) string { return name + "/" }

// TileJSONKey is the key of the TileJSON of the tileset name: "osm.json".
func TileJSONKey(name string) string { return name + TileJSONExt }

// MetadataKey is the key of a tile directory's metadata:
// "osm/metadata.json".
func MetadataKey(name string) string { return Dir(name) + MetadataFile }

// SingleFileExts are the extensions of the tilesets stored as one object,
// one per format (formats.Table): NAME.pmtiles and NAME.mbtiles are each
// the tileset NAME/.
var SingleFileExts = formats.Exts()

// singleFileName reports the tileset a top-level key NAME.pmtiles or
// NAME.mbtiles holds.
func singleFileName(key string) (name string, ok bool) {
	for _, ext := range SingleFileExts {
		if name, ok := strings.CutSuffix(key, ext); ok && isName(name) {
			return name, true
		}
	}
	return "", false
}

// TileJSONName reports the tileset a top-level key "NAME.json" is the
// TileJSON of.
func TileJSONName(key string) (name string, ok bool) {
	name, ok = strings.CutSuffix(key, TileJSONExt)
	return name, ok && isName(name)
}

// TrimArchiveExt drops a trailing format extension (.pmtiles, .mbtiles)
// from a file or key.
func TrimArchiveExt(s string) string {
	for _, ext := range SingleFileExts {
		s = strings.TrimSuffix(s, ext)
	}
	return s
}

// Derived lists what else a change of key changes, beyond key itself: an
// archive NAME.pmtiles (or NAME.mbtiles) is the tileset NAME/ and its TileJSON NAME.json, and
// a tile directory's NAME/metadata.json is that TileJSON too, and a font's
// glyph range DIR/FONT/… is every font stack composed with it, DIR/
// (glyphs.FontDir).
func Derived(key string) []string {
	if dir, ok := glyphs.FontDir(key); ok { // the font stacks composed from its font
		return []string{dir}
	}
	var derived []string
	if id, ok := imageID(key); ok {
		derived = IIIFDirs(id) // and, at the top level, a tileset too
	}
	if name, ok := singleFileName(key); ok {
		return append(derived, Dir(name), TileJSONKey(name))
	}
	if derived != nil {
		return derived
	}
	if name, ok := strings.CutSuffix(key, "/"+MetadataFile); ok && isName(name) {
		return []string{TileJSONKey(name)}
	}
	return nil
}

// DerivedOfPrefix is Derived for every key under prefix that prefix alone
// does not cover: a prefix that ends inside an archive's name ("osm.pm")
// derives its tileset and TileJSON, one that ends inside a tileset
// directory's metadata.json ("osm/", "osm/meta") its TileJSON. A shorter
// prefix ("os") covers those names itself.
func DerivedOfPrefix(prefix string) []string {
	if dir, ok := glyphs.FontDir(prefix); ok {
		return []string{dir}
	}
	var derived []string
	if i := strings.LastIndexByte(prefix, '.'); i > 0 && !strings.Contains(prefix[i:], "/") {
		for _, ext := range formats.ImageExts() {
			if strings.HasPrefix(ext, prefix[i:]) { // the image a prefix of ID.tif names
				derived = IIIFDirs(prefix[:i])
				break
			}
		}
	}
	return append(derived, tilesetOfPrefix(prefix)...)
}

// tilesetOfPrefix is DerivedOfPrefix for the tilesets a prefix ends
// inside of: an archive's name, or a tileset directory's metadata.json.
func tilesetOfPrefix(prefix string) []string {
	if name, rest, ok := strings.Cut(prefix, "/"); ok {
		if name != "" && strings.HasPrefix(MetadataFile, rest) {
			return []string{TileJSONKey(name)}
		}
		return nil
	}
	if i := strings.LastIndexByte(prefix, '.'); i > 0 {
		for _, ext := range SingleFileExts {
			if strings.HasPrefix(ext, prefix[i:]) {
				return []string{Dir(prefix[:i]), TileJSONKey(prefix[:i])}
			}
		}
	}
	return nil
}

// IIIFVersions are the IIIF Image API versions served, as their paths
// name them: /iiif/3/{id}/… and /iiif/2/{id}/….
var IIIFVersions = [...]string{"3", "2"}

// IIIFDir is the key directory of the IIIF answers of image id at version
// v: "iiif/3/maps%2Fa/" for maps/a.tif. The id is one path segment, its
// slashes escaped as the IIIF Image API requires (%2F), so the directory of
// one image never holds another's answers.
func IIIFDir(v, id string) string { return "iiif/" + v + "/" + url.PathEscape(id) + "/" }

// IIIFDirs are image id's IIIF directories at every version served.
func IIIFDirs(id string) []string {
	dirs := make([]string, len(IIIFVersions))
	for i, v := range IIIFVersions {
		dirs[i] = IIIFDir(v, id)
	}
	return dirs
}

// imageID reports the image a key ID.tif (any depth) is the object of.
func imageID(key string) (id string, ok bool) {
	for _, ext := range formats.ImageExts() {
		if id, ok := strings.CutSuffix(key, ext); ok && id != "" && !strings.HasSuffix(id, "/") {
			return id, true
		}
	}
	return "", false
}

func isName(name string) bool { return name != "" && !strings.Contains(name, "/") }
