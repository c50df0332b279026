// Package style serves MapLibre styles from where they are stored: a style
// authored against one place (a local run, another stack, a draft CDN)
// names that place in its URLs, so Rewrite points the URLs that are ours at
// the public base the style is served from and keeps every other byte.
//
// A style lives at NAME/style.json, beside the tiles of tileset NAME. Its
// sources' "url" (TileJSON, or an image source's image), their "tiles"
// templates, "sprite" (a string or MapLibre 4's array of {id, url}) and
// "glyphs" are rewritten when they are ours:
//
//   - a relative URL resolves against the style's own URL, as a browser
//     resolves it: "sprite" is base/NAME/sprite, "../osm.json" is
//     base/osm.json; ".." never climbs above the base;
//   - a URL starting with "/" is a key under the base: "/fonts/..." is
//     base/fonts/...;
//   - an absolute http(s) URL (or a scheme-relative "//host/...") is ours
//     when its path starts with the style's tileset: /NAME.json or /NAME/...;
//     it keeps its path, query and fragment under the base.
//
// Everything else is left as written: other hosts' paths, mapbox://,
// pmtiles:// and other schemes, URLs already under the base, GeoJSON "data"
// and video "urls". Placeholders ({z}, {fontstack}, {range}, ...) are kept
// as they are, never escaped.
package style

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
)

// ErrStyle is input that is not a style this package can rewrite: not a
// JSON object, too large, no version 8, no sources object or layers array,
// or a URL field that is not a string.
var ErrStyle = errors.New("style: not a usable MapLibre style")

// MaxStyleBytes caps the style Rewrite reads; large real styles are a few
// hundred KiB.
const MaxStyleBytes = 4 << 20

// FileName is the key of a tileset's style under its prefix.
const FileName = "style.json"

// NameFromKey returns the tileset whose style key is key: "maps/osm" for
// "maps/osm/style.json".
func NameFromKey(key string) (string, bool) {
	name, ok := strings.CutSuffix(key, "/"+FileName)
	if !ok || checkName(name) != nil {
		return "", false
	}
	return name, true
}

// Rewrite returns the stored style of tileset name with its URLs that are
// ours (see the package doc) set under base, the public base URL
// ("https://d1.cloudfront.net"). The answer differs from stored only in
// those strings' values.
func Rewrite(stored []byte, base, name string) ([]byte, error) {
	if len(stored) > MaxStyleBytes {
		return nil, fmt.Errorf("style: %d bytes, more than %d: %w", len(stored), MaxStyleBytes, ErrStyle)
	}
	b, err := httpurl.Base(base)
	if err != nil {
		return nil, fmt.Errorf("style: %w", err)
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	rw := rewriter{base: b, name: strings.Split(name, "/")}
	for _, seg := range rw.name {
		rw.dir = append(rw.dir, url.PathEscape(seg))
	}
	top, err := members(stored, 0)
	if err != nil {
		return nil, err
	}
	var reps []replacement
	var version, sources, layers bool
	for _, m := range top {
		raw := stored[m.Start:m.End]
		switch m.Key {
		case "version":
			var v float64
			version = json.Unmarshal(raw, &v) == nil && v == 8
		case "layers":
			layers = raw[0] == '[' // the document is valid JSON: an array, not decoded again
		case "sources":
			sources = true
			if reps, err = rw.sources(stored, m, reps); err != nil {
				return nil, err
			}
		case "sprite":
			if reps, err = rw.sprite(stored, m, reps); err != nil {
				return nil, err
			}
		case "glyphs":
			if reps, err = rw.str(stored, m, "glyphs", reps); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case !version:
		return nil, fmt.Errorf("style: no \"version\": 8: %w", ErrStyle)
	case !sources:
		return nil, fmt.Errorf("style: no sources: %w", ErrStyle)
	case !layers:
		return nil, fmt.Errorf("style: no layers array: %w", ErrStyle)
	}
	slices.SortFunc(reps, func(a, b replacement) int { return a.start - b.start })
	var out bytes.Buffer
	out.Grow(len(stored) + len(reps)*len(b))
	last := 0
	for _, r := range reps {
		out.Write(stored[last:r.start])
		out.Write(r.value)
		last = r.end
	}
	out.Write(stored[last:])
	return out.Bytes(), nil
}

// replacement is a new value for the bytes stored[start:end].
type replacement struct {
	start, end int
	value      []byte
}

type rewriter struct {
	base string   // without a trailing slash
	name []string // the tileset's key segments
	dir  []string // the same escaped: the style's directory, which relative URLs resolve against
}

func (rw rewriter) sources(doc []byte, m member, reps []replacement) ([]replacement, error) {
	srcs, err := object(doc, m, "sources")
	if err != nil {
		return nil, err
	}
	for _, s := range srcs {
		fields, err := object(doc, s, fmt.Sprintf("source %q", s.Key))
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			switch f.Key {
			case "url":
				if reps, err = rw.str(doc, f, "source "+s.Key+" url", reps); err != nil {
					return nil, err
				}
			case "tiles":
				els, err := array(doc, f, fmt.Sprintf("source %q tiles", s.Key))
				if err != nil {
					return nil, err
				}
				for _, e := range els {
					if reps, err = rw.str(doc, e, "source "+s.Key+" tiles", reps); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return reps, nil
}

// sprite rewrites "sprite": a URL, or MapLibre 4's array of {id, url}.
func (rw rewriter) sprite(doc []byte, m member, reps []replacement) ([]replacement, error) {
	if doc[m.Start] != '[' {
		return rw.str(doc, m, "sprite", reps)
	}
	els, err := array(doc, m, "sprite")
	if err != nil {
		return nil, err
	}
	for _, e := range els {
		fields, err := object(doc, e, "a sprite array element")
		if err != nil {
			return nil, err
		}
		found := false
		for _, f := range fields {
			if f.Key == "url" {
				found = true
				if reps, err = rw.str(doc, f, "sprite url", reps); err != nil {
					return nil, err
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("style: sprite without url: %w", ErrStyle)
		}
	}
	return reps, nil
}

// str adds the replacement of the string value m when it is a URL of ours.
func (rw rewriter) str(doc []byte, m member, what string, reps []replacement) ([]replacement, error) {
	var s string
	if doc[m.Start] != '"' || json.Unmarshal(doc[m.Start:m.End], &s) != nil {
		return nil, fmt.Errorf("style: %s is not a string: %w", what, ErrStyle)
	}
	u := rw.rewrite(s)
	if u == s {
		return reps, nil
	}
	return append(reps, replacement{m.Start, m.End, jsonString(u)}), nil
}

// rewrite is s under the base when it is ours, else s.
func (rw rewriter) rewrite(s string) string {
	if s == "" || strings.HasPrefix(s, rw.base+"/") {
		return s
	}
	if scheme, ok := schemeOf(s); ok {
		rest, ok := strings.CutPrefix(s[len(scheme)+1:], "//")
		if (scheme != "http" && scheme != "https") || !ok {
			return s
		}
		return rw.absolute(s, rest)
	}
	if rest, ok := strings.CutPrefix(s, "//"); ok {
		return rw.absolute(s, rest)
	}
	path, tail := splitTail(s)
	var segs []string
	if p, ok := strings.CutPrefix(path, "/"); ok {
		segs = resolve(nil, p)
	} else {
		segs = resolve(rw.dir, path)
	}
	return rw.base + "/" + strings.Join(segs, "/") + tail
}

// absolute is s, whose authority and path are hostPath, under the base when
// its path starts with the tileset, else s.
func (rw rewriter) absolute(s, hostPath string) string {
	i := strings.IndexAny(hostPath, "/?#")
	if i < 0 || hostPath[i] != '/' {
		return s
	}
	path, tail := splitTail(hostPath[i+1:])
	segs := resolve(nil, path)
	n := len(rw.name)
	if len(segs) < n {
		return s
	}
	for j, seg := range rw.name[:n-1] {
		if !sameSegment(segs[j], seg) {
			return s
		}
	}
	last := segs[n-1]
	switch {
	case len(segs) > n && sameSegment(last, rw.name[n-1]):
	case len(segs) == n && strings.HasSuffix(last, ".json") && sameSegment(strings.TrimSuffix(last, ".json"), rw.name[n-1]):
	default:
		return s
	}
	return rw.base + "/" + strings.Join(segs, "/") + tail
}

// sameSegment compares a URL's path segment, as escaped, with a key's.
func sameSegment(escaped, seg string) bool {
	u, err := url.PathUnescape(escaped)
	return err == nil && u == seg
}

// resolve applies the relative path rel to the directory dir, dot segments
// removed; ".." never climbs above the root.
func resolve(dir []string, rel string) []string {
	segs := slices.Clone(dir)
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		switch p {
		case ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, p)
			continue
		}
		if i == len(parts)-1 { // "a/.." names a directory: keep its slash
			segs = append(segs, "")
		}
	}
	return segs
}

// splitTail splits a URL reference at its query or fragment.
func splitTail(s string) (path, tail string) {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		return s[:i], s[i:]
	}
	return s, ""
}

// schemeOf returns the scheme of an absolute URL ("https", "mapbox").
func schemeOf(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(s[:i]), true
		default:
			return "", false
		}
	}
	return "", false
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("style: empty tileset name")
	}
	for _, s := range strings.Split(name, "/") {
		if s == "" || s == "." || s == ".." {
			return fmt.Errorf("style: tileset name %q: bad segment %q", name, s)
		}
	}
	return nil
}

func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string decoded from JSON always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
