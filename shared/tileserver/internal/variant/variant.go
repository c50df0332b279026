// Package variant decodes tiles stored with a content coding (gzip, br,
// zstd) for clients that do not accept the coding: at most once per tile
// version, the outcome kept beside the tile in the memory tier through the
// tier engine (tiers.Engine.Derived), so every purge of the tile removes it
// too, within the decoder's bounds and MAX_TILE_BYTES.
package variant

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tile/coding"
)

// Name is the canonical name of a decodable coding ("gzip" for
// "x-gzip" or "GZIP"), for messages.
func Name(enc string) string {
	c, _ := coding.Canonical(enc)
	return c
}

// decode decodes a tile stored with Content-Encoding enc within the
// bounds of a tile decoded for a client (coding.Bound).
func decode(enc string, b []byte) ([]byte, error) {
	out, err := coding.Decode(b, enc, coding.Bound(len(b)))
	if errors.Is(err, coding.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return out, err
}

// Stream decodes a streamed tile stored with Content-Encoding enc;
// closing the result releases the decoder and closes body.
func Stream(enc string, body io.ReadCloser) (io.ReadCloser, error) {
	zr, err := coding.NewReader(body, enc, coding.MaxDecoded)
	if err != nil {
		return nil, err
	}
	return &decodedBody{r: io.LimitReader(zr, coding.MaxDecoded+1), c: multiCloser{zr, body}}, nil
}

// multiCloser closes each of its closers, returning the first error.
type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var first error
	for _, c := range m {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// The decoded variant of a tile stored with a content coding, for clients
// that do not accept it, is produced at most once per tile version: one
// decode serves every request that wants it at once, and its outcome is
// kept in the memory tier under the tile's key followed by variantSuffix
// (tiers.Engine.Derived). The suffix starts with a control byte, which no tile key
// may contain (tile.ValidateKey), so it collides with no real key; and it
// lies inside the tile's key prefix, so every purge of the tile (a
// DeletePrefix of its key or of any prefix of it) removes the variant too.
// What is kept is the decoded body when it fits the memory tier, else only
// its size (the answer decodes it again as it is written, never holding it
// whole), or why it was refused (past the bounds, or not valid).
const variantSuffix = "\x00identity"

// variantKey is the memory-tier key of the decoded variant of key.
func variantKey(key string) string { return key + variantSuffix }

// variantInfo is the Prepared of a kept variant without its body: the
// decoded size of one that is streamed, or the refusal of one that is not
// served (ErrTooLarge or ErrNotValid: shared values, so it holds nothing
// more).
type variantInfo struct {
	size    int64
	refused error
}

// Cost implements tile.Prepared.
func (v *variantInfo) Cost() int64 { return tile.AllocBytes(int(unsafe.Sizeof(variantInfo{}))) }

// ErrNotValid is the refusal of a stored tile that does not decode.
var ErrNotValid = errors.New("variant: stored tile does not decode")

// ErrTooLarge is the refusal of a stored tile that decodes past its bounds.
var ErrTooLarge = errors.New("variant: decoded tile too large")

// Variant is the outcome of decoding a tile: Body when it is kept whole,
// else Size (it is decoded again as it is written), or Err (refused:
// ErrTooLarge or ErrNotValid).
type Variant struct {
	Body []byte
	Size int64
	Err  error
}

// sameVersion reports whether a kept variant vt was decoded from t.
func sameVersion(vt, t *tile.Tile) bool {
	return vt.ETag == t.ETag && vt.LastModified.Equal(t.LastModified) && vt.ContentType == t.ContentType
}

// Of returns the decoded variant of t, the tile at key, decoding it only
// when the memory tier holds none for this version and no other request is
// decoding it already. The decode is merged by version, so a new version
// never waits for, or is answered by, the decode of an old one.
func (s *Decoder) Of(key string, t *tile.Tile) Variant {
	version := t.ETag + "\x00" + t.LastModified.UTC().Format(time.RFC3339Nano) + "\x00" + strconv.Itoa(len(t.Body))
	vt := s.eng.Derived(variantKey(key), version, func(kept *tile.Tile) bool { return sameVersion(kept, t) },
		func() (keep, fallback *tile.Tile) { return s.decodeOnce(key, t) })
	if vt == nil {
		return Variant{Err: ErrNotValid}
	}
	return keptVariant(vt)
}

// keptVariant is the variant a memory-tier entry describes.
func keptVariant(vt *tile.Tile) Variant {
	if info, ok := vt.Prepared.(*variantInfo); ok {
		return Variant{Size: info.size, Err: info.refused}
	}
	return Variant{Body: vt.Body, Size: int64(len(vt.Body))}
}

// decodeOnce decodes t and returns what the memory tier keeps of it: the
// decoded body when it fits an entry, else its size, or the refusal (logged
// once per version); fallback is its size alone, for a body the tier still
// refuses.
func (s *Decoder) decodeOnce(key string, t *tile.Tile) (keep, fallback *tile.Tile) {
	s.decodes.Add(1)
	// What the memory tier may hold of the body: an entry's bound, less the
	// entry's own bookkeeping and the tile's strings.
	room := s.eng.Room(variantKey(key)) - 1024
	var v Variant
	func() {
		defer func() {
			if p := recover(); p != nil {
				v = Variant{Err: fmt.Errorf("variant: decoder panicked: %v", p)}
			}
		}()
		v.Body, v.Size, v.Err = coding.Measure(t.ContentEncoding, t.Body, room, s.decodeLimit(len(t.Body)))
		if errors.Is(v.Err, coding.ErrTooLarge) {
			v.Err = fmt.Errorf("%w: %w", ErrTooLarge, v.Err)
		}
	}()
	keep = &tile.Tile{ContentType: t.ContentType, ETag: t.ETag, LastModified: t.LastModified, StoredAt: t.StoredAt}
	switch {
	case v.Err != nil:
		s.log.Warn("stored "+Name(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", v.Err)
		// Kept as the class of refusal alone: the details are in the log.
		refused := ErrNotValid
		if errors.Is(v.Err, ErrTooLarge) {
			refused = ErrTooLarge
		}
		keep.Prepared = &variantInfo{refused: refused}
	case v.Body != nil:
		keep.Body = v.Body
		// Kept as its size alone if the tier refuses the body, so the next
		// request does not decode it whole again.
		fallback = &tile.Tile{ContentType: t.ContentType, ETag: t.ETag, LastModified: t.LastModified,
			StoredAt: t.StoredAt, Prepared: &variantInfo{size: v.Size}}
	default:
		keep.Prepared = &variantInfo{size: v.Size}
	}
	return keep, fallback
}

// decodeLimit is the most a stored tile of n bytes may decode to: the
// decoder's bounds (coding.Bound) and MAX_TILE_BYTES.
func (s *Decoder) decodeLimit(n int) int64 {
	limit := coding.Bound(n)
	if s.maxTile > 0 {
		limit = min(limit, s.maxTile)
	}
	return limit
}

// Engine is the tier engine the variants are kept through; *tiers.Engine
// is one.
type Engine interface {
	Derived(dkey, version string, same func(kept *tile.Tile) bool, derive func() (keep, fallback *tile.Tile)) *tile.Tile
	Room(key string) int64
}

// Decoder decodes variants. It is safe for concurrent use.
type Decoder struct {
	eng     Engine
	maxTile int64 // MAX_TILE_BYTES; zero or negative: the decoder's bounds only
	log     *slog.Logger
	decodes atomic.Int64
}

// New returns a Decoder keeping variants through eng.
func New(eng Engine, maxTileBytes int64, log *slog.Logger) *Decoder {
	return &Decoder{eng: eng, maxTile: maxTileBytes, log: log}
}

// Decodes is how many times a stored tile was decoded whole (or measured).
func (s *Decoder) Decodes() int64 { return s.decodes.Load() }

// Decode decodes t, the tile at key, for this answer alone: a document
// rendered for its request, whose body is not the stored tile's (small,
// and not kept).
func (s *Decoder) Decode(key string, t *tile.Tile) Variant {
	s.decodes.Add(1)
	b, err := decode(t.ContentEncoding, t.Body)
	if err != nil {
		s.log.Warn("stored "+Name(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", err)
	}
	return Variant{Body: b, Size: int64(len(b)), Err: err}
}

// decodedBody reads r and closes c: a decoded or limited view of a file.
// Reading past coding.MaxDecoded of a decoded body is an error (a gzip bomb).
type decodedBody struct {
	r io.Reader
	c io.Closer
	n int64
}

func (d *decodedBody) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	d.n += int64(n)
	if d.n > coding.MaxDecoded {
		return n, ErrTooLarge
	}
	return n, err
}

func (d *decodedBody) Close() error { return d.c.Close() }

// ETag names the decoded representation of a tile stored with a
// content coding: a strong tag of its own.
func ETag(etag string) string {
	weak := strings.HasPrefix(etag, "W/")
	inner := strings.TrimPrefix(etag, "W/")
	if len(inner) >= 2 && inner[0] == '"' && inner[len(inner)-1] == '"' {
		inner = inner[:len(inner)-1] + `-identity"`
	} else {
		inner = `"` + inner + `-identity"`
	}
	if weak {
		return "W/" + inner
	}
	return inner
}
