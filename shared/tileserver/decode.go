package tileserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// decodable reports whether a tile stored with Content-Encoding enc can be
// decoded for a client that does not accept enc: gzip, br and zstd can.
func decodable(enc string) bool {
	switch pmtiles.CompressionOf(enc) {
	case pmtiles.CompressionGzip, pmtiles.CompressionBrotli, pmtiles.CompressionZstd:
		return true
	}
	return false
}

// codingName is the canonical name of a decodable coding ("gzip" for
// "x-gzip" or "GZIP"), for messages.
func codingName(enc string) string { return pmtiles.CompressionOf(enc).ContentEncoding() }

// decodeTile decodes a tile stored with Content-Encoding enc within the
// bounds gunzip applies to gzip (gzip is decoded by gunzip itself, so its
// answers stay as they were).
func decodeTile(enc string, b []byte) ([]byte, error) {
	c := pmtiles.CompressionOf(enc)
	if c == pmtiles.CompressionGzip {
		return gunzip(b)
	}
	limit := min(maxDecoded, max(minDecodeOK, maxRatio*len(b)))
	out, err := pmtiles.Decompress(b, c, int64(limit))
	if errors.Is(err, pmtiles.ErrTooLarge) {
		return nil, fmt.Errorf("%w: decodes past %d bytes", errTooLarge, limit)
	}
	return out, err
}

// decodeStored is b decoded when enc is a coding decodeTile decodes, else b
// as it is: documents read from the tiers (metadata.json, styles, glyph
// ranges) are decoded this way before they are read.
func decodeStored(enc string, b []byte) ([]byte, error) {
	if !decodable(enc) {
		return b, nil
	}
	return decodeTile(enc, b)
}

// decodeStream decodes a streamed tile stored with Content-Encoding enc;
// closing the result releases the decoder and closes body.
func decodeStream(enc string, body io.ReadCloser) (io.ReadCloser, error) {
	zr, err := pmtiles.NewDecompressor(body, pmtiles.CompressionOf(enc), maxDecoded)
	if err != nil {
		return nil, err
	}
	return &decodedBody{r: io.LimitReader(zr, maxDecoded+1), c: multiCloser{zr, body}}, nil
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
// decode (a flight) serves every request that wants it at once, and its
// outcome is kept in the memory tier under the tile's key followed by
// variantSuffix. The suffix starts with a control byte, which no tile key
// may contain (tile.ValidateKey), so it collides with no real key; and it
// lies inside the tile's key prefix, so every purge of the tile (a
// DeletePrefix of its key or of any prefix of it) removes the variant too.
// What is kept is the decoded body when it fits the memory tier, else only
// its size (the answer decodes it again as it is written, never holding it
// whole), or why it was refused (past the bounds, or not valid).
const variantSuffix = "\x00identity"

// variantKey is the memory-tier key of the decoded variant of key.
func variantKey(key string) string { return key + variantSuffix }

// isVariantKey reports whether a memory-tier key is a decoded variant's.
func isVariantKey(key string) bool { return strings.IndexByte(key, 0) >= 0 }

// variantInfo is the Prepared of a kept variant without its body: the
// decoded size of one that is streamed, or the refusal of one that is not
// served (errTooLarge or errNotValid: shared values, so it holds nothing
// more).
type variantInfo struct {
	size    int64
	refused error
}

// Cost implements tile.Prepared.
func (v *variantInfo) Cost() int64 { return tile.AllocBytes(int(unsafe.Sizeof(variantInfo{}))) }

// errNotValid is the refusal of a stored tile that does not decode.
var errNotValid = errors.New("tileserver: stored tile does not decode")

// variant is the outcome of decoding a tile: body when it is kept whole,
// else size (streamed), or err (refused).
type variant struct {
	body []byte
	size int64
	err  error
}

// decodeFlights merges the concurrent decodes of one tile version.
type decodeFlights struct {
	mu    sync.Mutex // guards calls
	calls map[string]*decodeCall
}

type decodeCall struct {
	done chan struct{}
	v    variant
}

// sameVersion reports whether a kept variant vt was decoded from t.
func sameVersion(vt, t *tile.Tile) bool {
	return vt.ETag == t.ETag && vt.LastModified.Equal(t.LastModified) && vt.ContentType == t.ContentType
}

// decodedVariant returns t's decoded variant, decoding it only when the
// memory tier holds none for this version and no other request is decoding
// it already.
func (s *Server) decodedVariant(key string, t *tile.Tile) variant {
	vkey := variantKey(key)
	if vt, ok := s.mem.Get(vkey); ok && sameVersion(vt, t) {
		return keptVariant(vt)
	}
	// The flight is keyed by the version as well, so a new version never
	// waits for, or is answered by, the decode of an old one.
	fkey := vkey + "\x00" + t.ETag + "\x00" + t.LastModified.UTC().Format(time.RFC3339Nano) + "\x00" + strconv.Itoa(len(t.Body))
	f := &s.decoding
	f.mu.Lock()
	if c, ok := f.calls[fkey]; ok {
		f.mu.Unlock()
		<-c.done // a decode is bounded work, no I/O: waiting for it is bounded too
		return c.v
	}
	// A decode that ended between the lookup above and the lock kept its
	// outcome before it left the map: look again.
	if vt, ok := s.mem.Get(vkey); ok && sameVersion(vt, t) {
		f.mu.Unlock()
		return keptVariant(vt)
	}
	if f.calls == nil {
		f.calls = make(map[string]*decodeCall)
	}
	c := &decodeCall{done: make(chan struct{})}
	f.calls[fkey] = c
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.calls, fkey)
		f.mu.Unlock()
		close(c.done)
	}()
	c.v = s.decodeOnce(key, t)
	return c.v
}

// keptVariant is the variant a memory-tier entry describes.
func keptVariant(vt *tile.Tile) variant {
	if info, ok := vt.Prepared.(*variantInfo); ok {
		return variant{size: info.size, err: info.refused}
	}
	return variant{body: vt.Body, size: int64(len(vt.Body))}
}

// decodeOnce decodes t, keeps the outcome in the memory tier and logs a
// refusal once per version.
func (s *Server) decodeOnce(key string, t *tile.Tile) (v variant) {
	s.stats.decodes.Add(1)
	// What the memory tier may hold of the body: an entry's bound, less the
	// entry's own bookkeeping and the tile's strings.
	keep := s.mem.MaxEntry() - int64(len(key)+len(variantSuffix)) - memory.EntryOverhead - 1024
	func() {
		defer func() {
			if p := recover(); p != nil {
				v = variant{err: fmt.Errorf("tileserver: decoder panicked: %v", p)}
			}
		}()
		v.body, v.size, v.err = measureDecode(t.ContentEncoding, t.Body, keep, s.decodeLimit(len(t.Body)))
	}()
	vt := &tile.Tile{ContentType: t.ContentType, ETag: t.ETag, LastModified: t.LastModified, StoredAt: t.StoredAt}
	switch {
	case v.err != nil:
		v.body, v.size = nil, 0
		s.log.Warn("stored "+codingName(t.ContentEncoding)+" tile does not decode", "key", key, "etag", t.ETag, "err", v.err)
		// Kept as the class of refusal alone: the details are in the log.
		if errors.Is(v.err, errTooLarge) {
			v.err = errTooLarge
		} else {
			v.err = errNotValid
		}
		vt.Prepared = &variantInfo{refused: v.err}
	case v.body != nil:
		vt.Body = v.body
	default:
		vt.Prepared = &variantInfo{size: v.size}
	}
	if !s.mem.Set(variantKey(key), vt) && v.body != nil {
		// Kept as its size alone, so the next request does not decode it
		// whole again.
		s.mem.Set(variantKey(key), &tile.Tile{ContentType: t.ContentType, ETag: t.ETag, LastModified: t.LastModified,
			StoredAt: t.StoredAt, Prepared: &variantInfo{size: v.size}})
	}
	return v
}

// decodeLimit is the most a stored tile of n bytes may decode to: the
// decoder's bounds (maxDecoded, maxRatio) and MAX_TILE_BYTES.
func (s *Server) decodeLimit(n int) int64 {
	limit := int64(min(maxDecoded, max(minDecodeOK, maxRatio*n)))
	if s.cfg.MaxTileBytes > 0 {
		limit = min(limit, s.cfg.MaxTileBytes)
	}
	return limit
}

// measureDecode decodes b, stored with Content-Encoding enc, and returns
// the decoded body when it is at most keep bytes, else only its size
// (counted through a small buffer: a large variant is never held whole).
// Past limit it fails with errTooLarge; a gzip trailer that says so fails
// before anything is decoded.
func measureDecode(enc string, b []byte, keep, limit int64) ([]byte, int64, error) {
	c := pmtiles.CompressionOf(enc)
	isize := int64(-1)
	if n := len(b); c == pmtiles.CompressionGzip && n >= 4 {
		// ISIZE, the decoded size mod 2^32 (RFC 1952); it can lie, so the
		// reading below is bounded as well.
		isize = int64(b[n-4]) | int64(b[n-3])<<8 | int64(b[n-2])<<16 | int64(b[n-1])<<24
		if isize > limit {
			return nil, 0, fmt.Errorf("%w: decodes to %d bytes, the limit for a %d-byte tile is %d", errTooLarge, isize, n, limit)
		}
	}
	zr, err := pmtiles.NewDecompressor(bytes.NewReader(b), c, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("tileserver: %w", err)
	}
	defer zr.Close()
	r := io.LimitReader(zr, limit+1)
	var n int64
	if isize < 0 || isize <= keep {
		// Kept whole if it fits: a gzip tile's trailer names its size, so
		// the buffer is allocated once (one byte more, so that the read
		// that finds the end does not grow it).
		out, err := readUpTo(r, max(keep, 0)+1, isize+1)
		if err != nil {
			return nil, 0, decodeErr(err, limit)
		}
		n = int64(len(out))
		if n > limit {
			return nil, 0, fmt.Errorf("%w: decodes past %d bytes", errTooLarge, limit)
		}
		if n <= keep {
			return out, n, nil
		}
	}
	// Too large to keep: count the rest.
	m, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, 0, decodeErr(err, limit)
	}
	if n += m; n > limit {
		return nil, 0, fmt.Errorf("%w: decodes past %d bytes", errTooLarge, limit)
	}
	return nil, n, nil
}

// decodeErr is a decoder's read error: errTooLarge for a decoder's own
// bound, else the error as it is.
func decodeErr(err error, limit int64) error {
	if errors.Is(err, pmtiles.ErrTooLarge) || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return fmt.Errorf("%w: decodes past %d bytes: %v", errTooLarge, limit, err)
	}
	return fmt.Errorf("tileserver: %w", err)
}

// readUpTo reads r to its end or to most bytes, into a buffer of size hint
// first (grown as append grows it when the hint is short).
func readUpTo(r io.Reader, most, hint int64) ([]byte, error) {
	buf := make([]byte, 0, min(max(hint, 512), most))
	for int64(len(buf)) < most {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), most)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}
