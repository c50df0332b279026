// Package tileset describes tilesets to map clients: the TileJSON 3.0.0
// document of a tileset, built from a PMTiles archive's header and metadata
// or from the metadata.json that tippecanoe writes beside a tile directory.
// The builders are pure functions; tile URLs are absolute, from a base URL the
// caller chooses (PUBLIC_URL, or the host a request came through).
package tileset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
)

// ErrMetadata is metadata that cannot describe a tileset: not a JSON object,
// an unusable field, no tile format.
var ErrMetadata = errors.New("tileset: bad metadata")

// MaxMetadataBytes caps the metadata the builders read.
const MaxMetadataBytes = 4 << 20

// TileJSON is a TileJSON 3.0.0 document. Fields the source does not give are
// left out, except minzoom and maxzoom, which are always known.
type TileJSON struct {
	TileJSON     string          `json:"tilejson"`
	Name         string          `json:"name,omitempty"`
	Description  string          `json:"description,omitempty"`
	Version      string          `json:"version,omitempty"`
	Attribution  string          `json:"attribution,omitempty"`
	Scheme       string          `json:"scheme"`
	Tiles        []string        `json:"tiles"`
	MinZoom      int             `json:"minzoom"`
	MaxZoom      int             `json:"maxzoom"`
	Bounds       []float64       `json:"bounds,omitempty"`
	Center       []float64       `json:"center,omitempty"`
	VectorLayers json.RawMessage `json:"vector_layers,omitempty"`
	// Format is the tiles' extension ("pbf", "png", ...): not a TileJSON
	// field, but what clients such as MapLibre's raster-vs-vector choice and
	// tilesieve's catalog need.
	Format string `json:"format,omitempty"`
	// TileSize is the tiles' width in pixels when it is not 256, and
	// Encoding a raster-dem tileset's ("mapbox" terrain-RGB): not TileJSON
	// 3.0.0 fields, but what MapLibre's raster and raster-dem sources read.
	TileSize int    `json:"tileSize,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

// Marshal encodes t without HTML escaping (URLs keep their &).
func (t TileJSON) Marshal() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(t) // a TileJSON of checked fields always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// TileURL is the tile URL template of tileset name (its key prefix without
// the trailing slash, e.g. "osm" or "maps/osm") under baseURL.
func TileURL(baseURL, name, ext string) (string, error) {
	base, err := httpurl.Base(baseURL)
	if err != nil {
		return "", fmt.Errorf("tileset: %w", err)
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
		return "", fmt.Errorf("tileset: name %q: want a key prefix without leading or trailing slash", name)
	}
	segs := strings.Split(name, "/")
	for i, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("tileset: name %q: bad segment %q", name, s)
		}
		segs[i] = url.PathEscape(s)
	}
	return base + "/" + strings.Join(segs, "/") + "/{z}/{x}/{y}." + ext, nil
}

// A TileJSON built from what a tileset holds (an archive, a database, a
// metadata.json, its keys) is kept in the tiers with PlaceholderBase in its
// URLs and an ETag ending in Tag, and rendered for the base URL of each
// answer (shared/docs).
const (
	PlaceholderBase = "http://tilesieve.invalid"
	Tag             = "/tilejson"
)

// maxZoom is the deepest zoom a TileJSON may name: the deepest a PMTiles
// tile id addresses.
const maxZoom = 31

// Archive is what an archive's header says of its tileset.
type Archive struct {
	Ext              string // the tiles' extension: "png", "pbf"
	Vector           bool   // vector tiles: the TileJSON needs vector_layers
	MinZoom, MaxZoom int
	Bounds           [4]float64 // zero: not given
	Center           [3]float64 // zero: not given
}

// FromArchive describes the archive of tileset name: zooms, bounds, center
// and tile type from its header (h), name, description, attribution,
// version and vector_layers from its JSON metadata, which may be empty.
func FromArchive(baseURL, name string, h Archive, metadata []byte) (TileJSON, error) {
	if h.Ext == "" {
		return TileJSON{}, fmt.Errorf("tileset: archive %s: tile type has no extension: %w", name, ErrMetadata)
	}
	m, err := parseObject(metadata)
	if err != nil {
		return TileJSON{}, fmt.Errorf("tileset: archive %s: %w", name, err)
	}
	t, err := start(baseURL, name, h.Ext, m)
	if err != nil {
		return TileJSON{}, err
	}
	t.MinZoom, t.MaxZoom = h.MinZoom, h.MaxZoom
	if h.Bounds != [4]float64{} {
		t.Bounds = h.Bounds[:]
	}
	if h.Center != [3]float64{} {
		t.Center = h.Center[:]
	}
	if h.Vector {
		if t.VectorLayers, err = vectorLayers(m); err != nil {
			return TileJSON{}, fmt.Errorf("tileset: archive %s: %w", name, err)
		}
		if t.VectorLayers == nil {
			t.VectorLayers = json.RawMessage("[]") // required for vector tilesets
		}
	}
	return t, nil
}

// FromMetadata describes the object tileset name from its metadata.json as
// tippecanoe's directory output (-e) writes it: strings for every value,
// bounds and center as comma lists, vector_layers inside the string field
// "json". TileJSON-style numbers and arrays are accepted too. The tile
// extension comes from "format", else pbf when there are vector layers.
func FromMetadata(baseURL, name string, metadata []byte) (TileJSON, error) {
	m, err := parseObject(metadata)
	if err != nil {
		return TileJSON{}, fmt.Errorf("tileset: %s/metadata.json: %w", name, err)
	}
	wrap := func(err error) error { return fmt.Errorf("tileset: %s/metadata.json: %w", name, err) }
	// tippecanoe keeps vector_layers in a JSON document inside a string.
	if raw, ok := m["json"]; ok {
		var inner string
		if json.Unmarshal(raw, &inner) == nil {
			sub, err := parseObject([]byte(inner))
			if err != nil {
				return TileJSON{}, wrap(fmt.Errorf("field json: %w", err))
			}
			if _, ok := m["vector_layers"]; !ok && sub["vector_layers"] != nil {
				m["vector_layers"] = sub["vector_layers"]
			}
		}
	}
	layers, err := vectorLayers(m)
	if err != nil {
		return TileJSON{}, wrap(err)
	}
	ext := strings.ToLower(str(m, "format"))
	switch ext {
	case "":
		if layers == nil {
			return TileJSON{}, wrap(fmt.Errorf("no format and no vector_layers: %w", ErrMetadata))
		}
		ext = "pbf"
	case "jpeg":
		ext = "jpg"
	case "pbf", "mvt", "png", "jpg", "webp", "avif", "mlt":
	default:
		return TileJSON{}, wrap(fmt.Errorf("format %q: %w", ext, ErrMetadata))
	}
	t, err := start(baseURL, name, ext, m)
	if err != nil {
		return TileJSON{}, err
	}
	if ext == "pbf" || ext == "mvt" || ext == "mlt" {
		t.VectorLayers = layers
		if t.VectorLayers == nil {
			t.VectorLayers = json.RawMessage("[]")
		}
	}
	t.MaxZoom = maxZoom
	for _, z := range []struct {
		key string
		dst *int
	}{{"minzoom", &t.MinZoom}, {"maxzoom", &t.MaxZoom}} {
		if _, ok := m[z.key]; !ok {
			continue
		}
		v, err := numbers(m, z.key, 1)
		if err != nil || v[0] < 0 || v[0] > maxZoom || v[0] != float64(int(v[0])) {
			return TileJSON{}, wrap(fmt.Errorf("%s: want a zoom 0-%d: %w", z.key, maxZoom, ErrMetadata))
		}
		*z.dst = int(v[0])
	}
	if t.MinZoom > t.MaxZoom {
		return TileJSON{}, wrap(fmt.Errorf("minzoom %d above maxzoom %d: %w", t.MinZoom, t.MaxZoom, ErrMetadata))
	}
	if _, ok := m["bounds"]; ok {
		if t.Bounds, err = numbers(m, "bounds", 4); err != nil {
			return TileJSON{}, wrap(err)
		}
	}
	if _, ok := m["center"]; ok {
		if t.Center, err = numbers(m, "center", 3); err != nil {
			return TileJSON{}, wrap(err)
		}
	}
	return t, nil
}

// start fills what both sources share.
func start(baseURL, name, ext string, m map[string]json.RawMessage) (TileJSON, error) {
	u, err := TileURL(baseURL, name, ext)
	if err != nil {
		return TileJSON{}, err
	}
	t := TileJSON{
		TileJSON:    "3.0.0",
		Name:        str(m, "name"),
		Description: str(m, "description"),
		Version:     str(m, "version"),
		Attribution: str(m, "attribution"),
		Scheme:      "xyz",
		Tiles:       []string{u},
		Format:      ext,
	}
	if t.Name == "" {
		t.Name = name
	}
	return t, nil
}

func parseObject(b []byte) (map[string]json.RawMessage, error) {
	if len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("%d bytes, more than %d: %w", len(b), MaxMetadataBytes, ErrMetadata)
	}
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(b)) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object: %w", ErrMetadata)
	}
	return m, nil
}

// str is a string field, "" when absent or not a string.
func str(m map[string]json.RawMessage, key string) string {
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}

// numbers reads n numbers from a JSON array, a number (n == 1) or a string
// of comma-separated numbers (tippecanoe's "bounds": "-180,-85,180,85").
func numbers(m map[string]json.RawMessage, key string, n int) ([]float64, error) {
	raw := m[key]
	var out []float64
	var s string
	var f float64
	switch {
	case json.Unmarshal(raw, &out) == nil:
	case json.Unmarshal(raw, &f) == nil:
		out = []float64{f}
	case json.Unmarshal(raw, &s) == nil:
		for _, p := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, fmt.Errorf("%s %q: not numbers: %w", key, s, ErrMetadata)
			}
			out = append(out, v)
		}
	default:
		return nil, fmt.Errorf("%s: want numbers: %w", key, ErrMetadata)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%s: %d numbers, want %d: %w", key, len(out), n, ErrMetadata)
	}
	return out, nil
}

// vectorLayers returns the metadata's vector_layers array (nil when absent),
// compacted.
func vectorLayers(m map[string]json.RawMessage) (json.RawMessage, error) {
	raw, ok := m["vector_layers"]
	if !ok {
		return nil, nil
	}
	var layers []json.RawMessage
	if err := json.Unmarshal(raw, &layers); err != nil || layers == nil {
		return nil, fmt.Errorf("vector_layers: not an array: %w", ErrMetadata)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("vector_layers: %w", ErrMetadata)
	}
	return b.Bytes(), nil
}
