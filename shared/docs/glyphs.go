package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Font stacks: a glyph range of several fonts (DIR/A,B/0-255.pbf) that is
// not stored as one is composed from the ranges of its fonts, each read
// through the tiers as any object is, so each font is fetched, cached and
// purged on its own. The composition is kept in the document cache under
// the stack's key and its fonts' ETags: a changed font is another entry,
// and a purge of the stack's directory (which the change of one font's
// range derives, shared/purge) drops it.

// maxGlyphBytes bounds one font's range read from a disk stream: ranges
// are tens of KiB.
const maxGlyphBytes = 8 << 20

// ErrBadGlyphKey is a key in a font directory that is no glyph range.
var ErrBadGlyphKey = errors.New("docs: bad glyph range key")

// Reader reads a key through the tiers; *tiers.Engine is one.
type Reader interface {
	Get(ctx context.Context, key string, now time.Time) (tiers.Result, error)
}

// Glyphs answers key, which the tiers do not hold, when it is a
// glyph range of several fonts: ok is false for any other key. An error
// wrapping tile.ErrNotFound is a stack none of whose fonts is stored,
// ErrBadGlyphKey a key under a font directory that is no glyph range.
func (s *Docs) Glyphs(ctx context.Context, key string, now time.Time) (t *tile.Tile, src tiers.Source, ok bool, err error) {
	if !glyphShaped(key) {
		return nil, 0, false, nil
	}
	r, err := glyphs.ParseKey(key)
	if err != nil {
		return nil, 0, true, fmt.Errorf("%w: %w", ErrBadGlyphKey, err)
	}
	if len(r.Fonts) < 2 {
		return nil, 0, false, nil // one font: the object itself, and it is missing
	}
	pbfs := make([][]byte, len(r.Fonts))
	var memo strings.Builder
	memo.WriteString(key)
	src = tiers.FromMemory
	var lastModified time.Time
	for i := range r.Fonts {
		b, ft, fsrc, err := readFont(ctx, s.eng, s.decode, r.FontKey(i), now)
		if errors.Is(err, tile.ErrNotFound) {
			memo.WriteString("\x00-")
			continue
		}
		if err != nil {
			return nil, 0, true, err
		}
		pbfs[i] = b
		memo.WriteString("\x00" + ft.ETag)
		if ft.LastModified.After(lastModified) {
			lastModified = ft.LastModified
		}
		if fsrc != tiers.FromMemory {
			src = tiers.FromOrigin // the answer was not a memory hit throughout
		}
	}
	if c, hit := s.docs.Get(memo.String()); hit {
		return c, src, true, nil
	}
	body, err := glyphs.Compose(r, pbfs)
	if errors.Is(err, glyphs.ErrNoFonts) {
		return nil, src, true, fmt.Errorf("docs: %s: %w: %w", key, err, tile.ErrNotFound)
	}
	if err != nil {
		return nil, 0, true, fmt.Errorf("docs: compose %s: %w", key, err)
	}
	h := fnv.New64a()
	h.Write([]byte(memo.String()))
	t = &tile.Tile{
		Body:         body,
		ContentType:  tile.ContentTypeGlyph,
		ETag:         `"stack-` + strconv.FormatUint(h.Sum64(), 36) + `"`,
		LastModified: lastModified,
		StoredAt:     now,
	}
	s.prepare(key, t)
	s.docs.Set(memo.String(), t)
	return t, src, true, nil
}

// readFont reads the glyph range at key through the tiers, decoded.
func readFont(ctx context.Context, tr Reader, decode func(string, []byte) ([]byte, error), key string, now time.Time) ([]byte, *tile.Tile, tiers.Source, error) {
	res, err := tr.Get(ctx, key, now)
	// A memory hit's body may be the memory tier's own bytes, off the heap
	// and reused once released: the range is decoded (or copied) first.
	defer res.Release()
	if err != nil {
		return nil, nil, res.Source, err
	}
	t, b := res.Tile, res.Tile.Body
	if res.Lease != (memory.Lease{}) {
		b = bytes.Clone(b)
	}
	if res.Stream != nil {
		b, err = io.ReadAll(io.LimitReader(res.Stream, maxGlyphBytes+1))
		res.Stream.Close()
		if err == nil && len(b) > maxGlyphBytes {
			err = fmt.Errorf("more than %d bytes", maxGlyphBytes)
		}
		if err != nil {
			return nil, nil, res.Source, fmt.Errorf("docs: glyph range %s: %w", key, err)
		}
	}
	if b, err = decode(t.ContentEncoding, b); err != nil {
		return nil, nil, res.Source, fmt.Errorf("docs: glyph range %s: %w", key, err)
	}
	return b, t, res.Source, nil
}

// glyphShaped reports whether key is a .pbf right under a font stack of a
// font directory (DIR/{fontstack}/{file}.pbf, DIR's last segment "fonts" or
// "glyphs"): a key that is either a glyph range or a bad one.
func glyphShaped(key string) bool {
	segs := strings.Split(key, "/")
	if len(segs) < 3 || !strings.HasSuffix(segs[len(segs)-1], ".pbf") {
		return false
	}
	d := segs[len(segs)-3]
	return d == "fonts" || d == "glyphs"
}
