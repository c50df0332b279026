package glyphs

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrBadKey is a key that is not a glyph range request.
var ErrBadKey = errors.New("glyphs: bad glyph key")

// ErrNoFonts is a composition with none of the stack's fonts found.
var ErrNoFonts = errors.New("glyphs: none of the stack's fonts found")

// MaxFonts caps the fonts of a stack: each is one more read to compose it.
const MaxFonts = 8

// RangeSize is the number of glyph ids in one range file.
const RangeSize = 256

// maxID is the last glyph id a range may hold: MapLibre asks for ranges of
// the Basic Multilingual Plane only.
const maxID = 65535

// Request is a parsed glyph key.
type Request struct {
	Dir        string   // the key prefix of the font directory: "fonts", "osm/fonts"
	Fonts      []string // the stack's fonts, in the order they are tried
	Start, End int      // the range, End = Start+255
}

// ParseKey parses a tile key (a path already unescaped once, as
// tile.KeyFromPath gives it) DIR/{fontstack}/{start}-{end}.pbf, where DIR's
// last segment is "fonts" or "glyphs", the fontstack is one to MaxFonts
// comma-separated font names, and the range is 256-aligned within 0-65535,
// written without leading zeros.
func ParseKey(key string) (Request, error) {
	bad := func(why string) error { return fmt.Errorf("glyphs: key %q: %s: %w", key, why, ErrBadKey) }
	segs := strings.Split(key, "/")
	if len(segs) < 3 {
		return Request{}, bad("want DIR/{fontstack}/{range}.pbf")
	}
	dir, stack, file := segs[:len(segs)-2], segs[len(segs)-2], segs[len(segs)-1]
	if d := dir[len(dir)-1]; d != "fonts" && d != "glyphs" {
		return Request{}, bad(`not under a "fonts" or "glyphs" directory`)
	}
	start, end, err := parseRange(file)
	if err != nil {
		return Request{}, bad(err.Error())
	}
	var fonts []string
	for _, f := range strings.Split(stack, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || f == "." || f == "..":
			return Request{}, bad(fmt.Sprintf("font name %q", f))
		case slices.Contains(fonts, f): // a font twice adds nothing
			continue
		}
		fonts = append(fonts, f)
	}
	if len(fonts) > MaxFonts {
		return Request{}, bad(fmt.Sprintf("%d fonts, more than %d", len(fonts), MaxFonts))
	}
	return Request{Dir: strings.Join(dir, "/"), Fonts: fonts, Start: start, End: end}, nil
}

// IsKey reports whether key is a glyph range request.
func IsKey(key string) bool {
	_, err := ParseKey(key)
	return err == nil
}

func parseRange(file string) (start, end int, err error) {
	r, ok := strings.CutSuffix(file, ".pbf")
	if !ok {
		return 0, 0, errors.New("not a .pbf")
	}
	a, b, ok := strings.Cut(r, "-")
	if !ok {
		return 0, 0, errors.New("range: want START-END")
	}
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	switch {
	case err1 != nil || err2 != nil || strconv.Itoa(start) != a || strconv.Itoa(end) != b:
		return 0, 0, fmt.Errorf("range %q: want two numbers without sign or leading zeros", r)
	case start%RangeSize != 0 || end != start+RangeSize-1 || end > maxID:
		return 0, 0, fmt.Errorf("range %q: want N*256-(N*256+255) within 0-%d", r, maxID)
	}
	return start, end, nil
}

// Range is the range as keys and PBFs name it: "0-255".
func (r Request) Range() string { return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End) }

// Name is the stack's name in a composed PBF: the fonts joined by ",".
func (r Request) Name() string { return strings.Join(r.Fonts, ",") }

// Key is the canonical key of the request (spaces around names dropped,
// duplicates removed).
func (r Request) Key() string { return r.Dir + "/" + r.Name() + "/" + r.Range() + ".pbf" }

// FontKey is the key of the range of the stack's i-th font alone.
func (r Request) FontKey(i int) string {
	return r.Dir + "/" + r.Fonts[i] + "/" + r.Range() + ".pbf"
}

// Compose builds the range of the stack r from the ranges of its fonts,
// pbfs[i] being the PBF at r.FontKey(i), nil when that font is not stored.
// Each glyph id of the range is taken from the first font that has it;
// glyphs outside the range are dropped. The answer holds one stack named
// r.Name(), its glyphs in id order.
func Compose(r Request, pbfs [][]byte) ([]byte, error) {
	if len(pbfs) != len(r.Fonts) {
		return nil, fmt.Errorf("glyphs: %d PBFs for a stack of %d fonts", len(pbfs), len(r.Fonts))
	}
	out := Stack{Name: r.Name(), Range: r.Range()}
	seen := make(map[uint32]bool)
	found := false
	for i, b := range pbfs {
		if b == nil {
			continue
		}
		found = true
		stacks, err := Decode(b)
		if err != nil {
			return nil, fmt.Errorf("glyphs: %s: %w", r.FontKey(i), err)
		}
		for _, s := range stacks {
			for _, g := range s.Glyphs {
				if int64(g.ID) < int64(r.Start) || int64(g.ID) > int64(r.End) || seen[g.ID] {
					continue
				}
				seen[g.ID] = true
				out.Glyphs = append(out.Glyphs, g)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("glyphs: %s: %w", r.Key(), ErrNoFonts)
	}
	slices.SortFunc(out.Glyphs, func(a, b Glyph) int { return cmp.Compare(a.ID, b.ID) })
	return Encode([]Stack{out}), nil
}

// FontDir returns the font directory DIR/ that a key or key prefix reaching
// into one font of it (DIR/{font}/{range}.pbf, DIR/{font}/, DIR/{font
// prefix}) lies in. A change there changes the font stacks composed from
// that font, which lie beside it under any name that includes it
// (DIR/A,{font}/…), so a purge of the font must reach DIR/ whole. ok is
// false for anything else, and for DIR/ itself, which covers its stacks.
func FontDir(prefix string) (dir string, ok bool) {
	segs := strings.Split(prefix, "/")
	for _, i := range []int{len(segs) - 2, len(segs) - 3} {
		if i < 0 || (segs[i] != "fonts" && segs[i] != "glyphs") || segs[i+1] == "" {
			continue
		}
		return strings.Join(segs[:i+1], "/") + "/", true
	}
	return "", false
}
