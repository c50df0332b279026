// Package tile holds what every tier agrees on: the Tile value and the one key
// space. A tile's key is its URL path without the leading slash, normalised; its
// S3 key is the configured prefix plus that key. The memory tier, the disk tier,
// the purge journal and the CDN paths all speak these keys, so one key prefix
// names the same set of tiles everywhere.
package tile

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Tile is one stored tile: its bytes exactly as held in S3, and the metadata
// the HTTP layer answers with. A Tile is immutable once it is handed to a tier;
// a new version is a new Tile.
//
// Every field that refers to memory (a slice, a string, a pointer) must be
// counted in Cost, which is what the memory tier's byte bound charges;
// TestCostCountsEveryField fails until it is.
type Tile struct {
	Body            []byte
	ContentType     string
	ContentEncoding string    // "gzip" for pre-compressed vector tiles, else ""
	ETag            string    // the object's opaque version token, quoted as S3 gives it
	LastModified    time.Time // the object's Last-Modified
	StoredAt        time.Time // when this copy was fetched or last revalidated
	// Missing marks a remembered 404: the origin had no such object at
	// StoredAt. Only the memory tier holds these, for as long as the
	// negative Cache-Control allows; a purge of the key forgets them.
	Missing bool
	// Prepared is what a server keeps beside the tile to answer with it
	// without formatting anything (ready header values, a ready-encoded
	// payload), set before the tile enters the memory tier. Its own Cost is
	// charged with the tile's.
	Prepared Prepared
}

// Prepared is a server's ready-made answer for a tile.
type Prepared interface {
	// Cost is the heap it holds.
	Cost() int64
}

// Size is the length of the body in bytes.
func (t *Tile) Size() int64 { return int64(len(t.Body)) }

// tileBytes is the heap a Tile value itself occupies.
var tileBytes = AllocBytes(int(unsafe.Sizeof(Tile{})))

// Cost is the heap t holds: the Tile itself, its body (by capacity: a body
// read with spare room holds it) and every string, each as the allocator
// rounds it. Strings shared with other tiles are counted in each, which errs
// on the safe side. The times' Locations are UTC or Local, shared by all.
// Every field that refers to memory must be added here.
func (t *Tile) Cost() int64 {
	n := tileBytes + AllocBytes(cap(t.Body)) +
		AllocBytes(len(t.ContentType)) + AllocBytes(len(t.ContentEncoding)) + AllocBytes(len(t.ETag))
	if t.Prepared != nil {
		n += t.Prepared.Cost()
	}
	return n
}

// AllocBytes is the heap an allocation of n pointer-free bytes occupies: n
// rounded up to Go's allocator size class (to whole 8 KiB pages past 32 KiB).
// Below 16 bytes it is a whole 16-byte block: the allocator packs such tiny
// objects together, and a live one keeps its block's dead neighbours.
func AllocBytes(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case n < tinyBlock:
		return tinyBlock
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return int64((n + pageBytes - 1) / pageBytes * pageBytes)
	}
	i, _ := slices.BinarySearch(sizeClasses[:], n)
	return int64(sizeClasses[i])
}

const (
	pageBytes = 8 << 10
	tinyBlock = 16
)

// sizeClasses are the Go runtime's small object size classes
// (internal/runtime/gc/sizeclasses.go).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048,
	2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880,
	12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// Limits on keys. S3 allows 1024 bytes for a whole object key; a tile key
// leaves room for TILES_PREFIX.
const (
	MaxKeyBytes  = 900
	MaxSegments  = 32
	MaxSegBytes  = 255
	maxPathBytes = 3 * MaxKeyBytes // escaped form may be up to three times longer
)

// ReservedPrefix is the key space of the service's own objects and paths:
// the purge journal (JOURNAL_PREFIX, under it by default), the health check
// and the admin API. No tile key starts with it, whatever TILES_PREFIX is:
// the decoders refuse such a path as a bad key (a 400), so the journal can
// never be served or cached as a tile.
const ReservedPrefix = "_tilesieve/"

// Reserved reports whether key lies in the reserved key space.
func Reserved(key string) bool { return strings.HasPrefix(key, ReservedPrefix) }

// ErrBadKey is the class of every key validation error.
// Answers every layer shares: an origin returns them (wrapped with what was
// asked), the engine and the HTTP layer match them with errors.Is.
var (
	// ErrNotFound is a key that names no tile.
	ErrNotFound = errors.New("tile: not found")
	// ErrNotModified answers a revalidation (If-None-Match) whose copy is
	// still current.
	ErrNotModified = errors.New("tile: not modified")
	// ErrTooLarge is a tile larger than MAX_TILE_BYTES: refused from its
	// announced size, or cut off once that many bytes were read, never read
	// whole.
	ErrTooLarge = errors.New("tile: too large")
	// ErrPreconditionFailed is a 412: the object no longer has the ETag a
	// read was pinned to (If-Match). The caller reads the new version.
	ErrPreconditionFailed = errors.New("tile: precondition failed")
)

// IsTimeout reports whether err is a deadline that passed or a read that
// timed out (an error in its chain with a Timeout method that says so, as
// net.Error has): answered 504 rather than 502.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// DerivedTag is `"inner<suffix>"` for etag `"inner"` (quotes optional): the
// ETag of something derived from a version (a tile of an archive, a
// TileJSON built from it, a document rendered for a base URL).
func DerivedTag(etag, suffix string) string {
	return `"` + strings.Trim(etag, `"`) + suffix + `"`
}

// ErrRefused matches an origin error that is an answer: S3 answered, and
// what it holds cannot be served as asked (a malformed archive, an image
// answer past a bound). It is no sign of an S3 failure, so it opens no
// outage window; a *RefusedError matches it.
var ErrRefused = errors.New("tile: refused")

// RefusedError answers a request for a tile of a stored object its format
// refused (malformed, unsupported, or too large to stage): the object holds
// no tile until it changes. Whoever refused it logged why, once.
type RefusedError struct {
	Format string // "PMTiles"
	Name   string // the tileset
	Err    error
}

func (e *RefusedError) Error() string {
	return "tile: " + e.Format + " " + e.Name + " refused: " + e.Err.Error()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Is matches ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

var ErrBadKey = errors.New("tile: bad key")

// KeyError says why a path or key was refused.
type KeyError struct {
	Input  string
	Reason string
}

func (e *KeyError) Error() string {
	in := e.Input
	if len(in) > 80 {
		in = in[:80] + "…"
	}
	return fmt.Sprintf("tile: bad key %q: %s", in, e.Reason)
}

func (e *KeyError) Unwrap() error { return ErrBadKey }

func bad(in, reason string) error { return &KeyError{Input: in, Reason: reason} }

// KeyFromPath turns an escaped URL path (r.URL.EscapedPath(), or RawPath of a
// Lambda event) into a tile key. It unescapes once, then refuses what could
// name something other than one object: dot segments, empty segments,
// backslashes, control bytes, invalid UTF-8, escaped slashes and overlong
// input, and keys in the reserved key space (ReservedPrefix). It never
// touches S3, so the handler can answer 400 first.
func KeyFromPath(escaped string) (string, error) {
	if len(escaped) > maxPathBytes {
		return "", bad(escaped, "path too long")
	}
	if !strings.HasPrefix(escaped, "/") {
		return "", bad(escaped, "path must start with /")
	}
	raw := escaped[1:]
	key := raw
	if strings.IndexByte(raw, '%') >= 0 { // most tile paths have no escapes: skip the unescaper's scan
		// An escaped slash would let one segment pose as two (or hide "..").
		if strings.Contains(raw, "%2f") || strings.Contains(raw, "%2F") {
			return "", bad(escaped, "escaped slash")
		}
		var err error
		if key, err = url.PathUnescape(raw); err != nil {
			return "", bad(escaped, "bad escape")
		}
	}
	if err := ValidateKey(key); err != nil {
		return "", bad(escaped, err.(*KeyError).Reason)
	}
	if Reserved(key) {
		return "", bad(escaped, reservedReason)
	}
	return key, nil
}

// reservedReason is why a key in the reserved key space is refused.
const reservedReason = "reserved key space " + ReservedPrefix

// KeyFromUnescapedPath is KeyFromPath for a path already unescaped once
// (net/http's URL.Path when the request had no RawPath): the key is the
// path without its leading slash, under the same rules.
func KeyFromUnescapedPath(path string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		return "", bad(path, "path must start with /")
	}
	key := path[1:]
	switch {
	case !keyOK(key):
		return "", bad(path, explainKey(key).(*KeyError).Reason)
	case Reserved(key):
		return "", bad(path, reservedReason)
	}
	return key, nil
}

// ValidateKey checks an already unescaped key against the key rules.
func ValidateKey(key string) error {
	if keyOK(key) {
		return nil
	}
	return explainKey(key)
}

// Byte classes of keyClass.
const (
	classRefused  = 1 << iota // a control byte or a backslash
	classNonASCII             // part of a multi-byte UTF-8 sequence, or not UTF-8
	classSlash                // '/'
)

// keyClass classifies every byte for keyOK.
var keyClass = func() (c [256]uint8) {
	for b := range 256 {
		switch {
		case b < 0x20 || b == 0x7f || b == '\\':
			c[b] = classRefused
		case b >= 0x80:
			c[b] = classNonASCII
		case b == '/':
			c[b] = classSlash
		}
	}
	return c
}()

// keyOK reports whether key follows the key rules. It is the hit path's
// check, every request's: one pass over the bytes with a table, checking
// each segment at its end. explainKey applies the same rules one by one and
// says which a key breaks; FuzzValidateKey holds the two to the same answers.
func keyOK(key string) bool {
	if key == "" || len(key) > MaxKeyBytes {
		return false
	}
	var class uint8
	segs, start := 1, 0
	for i := 0; i < len(key); i++ {
		c := keyClass[key[i]]
		class |= c
		if c == classSlash {
			if !segmentOK(key[start:i]) {
				return false
			}
			segs, start = segs+1, i+1
		}
	}
	return segmentOK(key[start:]) && segs <= MaxSegments &&
		class&classRefused == 0 && (class&classNonASCII == 0 || utf8.ValidString(key))
}

// segmentOK reports whether seg may be one segment of a key: not empty, not
// a dot segment, not too long.
func segmentOK(seg string) bool {
	switch n := len(seg); {
	case n == 0 || n > MaxSegBytes:
		return false
	case n <= 2 && seg[0] == '.':
		return n == 2 && seg[1] != '.'
	}
	return true
}

// explainKey is the error of a key keyOK refuses: the first rule it breaks.
func explainKey(key string) error {
	switch {
	case key == "":
		return bad(key, "empty key")
	case len(key) > MaxKeyBytes:
		return bad(key, "key too long")
	case !utf8.ValidString(key):
		return bad(key, "invalid UTF-8")
	}
	// One pass over the bytes: segments end at '/' and at the end of the key.
	segs, segStart := 0, 0
	for i := 0; i <= len(key); i++ {
		if i < len(key) {
			c := key[i]
			if c < 0x20 || c == 0x7f || c == '\\' {
				return bad(key, "control byte or backslash")
			}
			if c != '/' {
				continue
			}
		}
		seg := key[segStart:i]
		switch {
		case seg == "":
			return bad(key, "empty segment")
		case seg == "." || seg == "..":
			return bad(key, "dot segment")
		case len(seg) > MaxSegBytes:
			return bad(key, "segment too long")
		}
		segs++
		segStart = i + 1
	}
	if segs > MaxSegments {
		return bad(key, "too many segments")
	}
	return nil
}

// ValidatePrefix checks a purge or scan prefix. Unlike a key it may be empty
// (everything) and may end in a partial segment ("osm/1" covers "osm/12/…"),
// but it follows the same character rules.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	// A trailing slash or a partial last segment is fine; validate as a key
	// with the trailing slash removed and a placeholder for a partial segment.
	trimmed := strings.TrimSuffix(prefix, "/")
	if trimmed == "" {
		return bad(prefix, "empty segment")
	}
	if err := ValidateKey(trimmed); err != nil {
		// A partial last segment like "osm/1." is legal as a prefix as long as
		// it is not a whole dot segment.
		return err
	}
	return nil
}

// ValidateDir checks a prefix that names a directory of objects
// (TILES_PREFIX, JOURNAL_PREFIX, an origin's prefix): one ValidatePrefix
// accepts that ends in /. The empty prefix, the whole bucket, is the
// caller's to allow.
func ValidateDir(prefix string) error {
	if !strings.HasSuffix(prefix, "/") {
		return bad(prefix, "not a directory ending in /")
	}
	return ValidatePrefix(prefix)
}

// KeyFromObject maps an S3 object key to a tile key, given TILES_PREFIX. It
// reports ok=false for objects outside the prefix or that are not valid tile
// keys (so they cannot be served and need no purge).
func KeyFromObject(tilesPrefix, objectKey string) (string, bool) {
	key, found := strings.CutPrefix(objectKey, tilesPrefix)
	if !found || ValidateKey(key) != nil {
		return "", false
	}
	return key, true
}

// FetchCost is what an origin fetch cost: the S3 requests it sent, the
// body bytes it read, and the time spent on pixels (decoding, resampling,
// encoding an image's answer).
type FetchCost struct {
	Requests, Bytes int64
	Pixels          time.Duration
}

// fetchCounter counts the cost of one origin fetch.
type fetchCounter struct{ requests, bytes, pixels atomic.Int64 }

type fetchKey struct{}

// CountFetch returns ctx with a counter of what is spent under it (AddS3,
// AddPixels), and what reads it.
func CountFetch(ctx context.Context) (context.Context, interface{ Load() FetchCost }) {
	c := &fetchCounter{}
	return context.WithValue(ctx, fetchKey{}, c), c
}

// AddS3 counts requests S3 requests and n body bytes under ctx, if ctx
// counts.
func AddS3(ctx context.Context, requests, n int64) {
	if c, ok := ctx.Value(fetchKey{}).(*fetchCounter); ok {
		c.requests.Add(requests)
		c.bytes.Add(n)
	}
}

// AddPixels counts d of pixel work under ctx, if ctx counts.
func AddPixels(ctx context.Context, d time.Duration) {
	if c, ok := ctx.Value(fetchKey{}).(*fetchCounter); ok {
		c.pixels.Add(int64(d))
	}
}

// Load is what was counted.
func (c *fetchCounter) Load() FetchCost {
	return FetchCost{Requests: c.requests.Load(), Bytes: c.bytes.Load(), Pixels: time.Duration(c.pixels.Load())}
}
