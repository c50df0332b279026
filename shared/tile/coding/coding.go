// Package coding decodes the content codings tiles are stored with (gzip,
// br, zstd: the HTTP Content-Encoding of an object, or an archive's tile
// compression), always within a bound on the decoded size, so a
// decompression bomb costs about the bound and no more.
package coding

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// Errors of the decoders. Match them with errors.Is.
var (
	// ErrTooLarge is bytes that decode past the bound they were given.
	ErrTooLarge = errors.New("coding: decodes past the bound")
	// ErrInvalid is bytes that are not a valid stream of their coding.
	ErrInvalid = errors.New("coding: not a valid stream")
	// ErrUnsupported is a coding this package does not decode.
	ErrUnsupported = errors.New("coding: unsupported")
)

// Canonical coding names.
const (
	Identity = ""
	Gzip     = "gzip"
	Brotli   = "br"
	Zstd     = "zstd"
)

// Canonical is the name of the coding enc names (any case; "x-gzip" is
// gzip, "identity" none), and whether this package decodes it.
func Canonical(enc string) (string, bool) {
	switch strings.ToLower(enc) {
	case "", "identity":
		return Identity, true
	case "gzip", "x-gzip":
		return Gzip, true
	case "br":
		return Brotli, true
	case "zstd":
		return Zstd, true
	}
	return enc, false
}

// Decodable reports whether bytes stored with Content-Encoding enc can be
// decoded for a client that does not accept enc: gzip, br and zstd can.
func Decodable(enc string) bool {
	c, ok := Canonical(enc)
	return ok && c != Identity
}

// Decode decodes raw, stored with coding enc, refusing output past max
// bytes (ErrTooLarge) without allocating more than about max.
func Decode(raw []byte, enc string, max int64) ([]byte, error) {
	c, ok := Canonical(enc)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, enc)
	}
	if c == Identity {
		if int64(len(raw)) > max {
			return nil, fmt.Errorf("%w: %d bytes, more than the bound of %d", ErrTooLarge, len(raw), max)
		}
		return raw, nil
	}
	if n := len(raw); c == Gzip && n >= 4 {
		// ISIZE, the decoded size mod 2^32 (RFC 1952): one that says the
		// bound is passed fails before anything is decoded. It can lie, so
		// the reading below is bounded as well.
		if isize := int64(raw[n-4]) | int64(raw[n-3])<<8 | int64(raw[n-2])<<16 | int64(raw[n-1])<<24; isize > max {
			return nil, fmt.Errorf("%w: decodes to %d bytes, the bound is %d", ErrTooLarge, isize, max)
		}
	}
	zr, err := NewReader(bytes.NewReader(raw), c, max)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	// Grow by reading, not by a size the stream claims, so a lying header
	// costs nothing.
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(zr, max+1))
	switch {
	case err != nil:
		return nil, ReadError(c, err)
	case n > max:
		return nil, fmt.Errorf("%w: %s: decodes to more than the bound of %d bytes", ErrTooLarge, c, max)
	}
	return out.Bytes(), nil
}

// ReadError classifies an error met reading a decoder of coding enc:
// ErrTooLarge for a decoder's own bound, else ErrInvalid.
func ReadError(enc string, err error) error {
	if errors.Is(err, bytes.ErrTooLarge) || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return fmt.Errorf("%w: %s: %v", ErrTooLarge, enc, err)
	}
	return fmt.Errorf("%w: %s: %v", ErrInvalid, enc, err)
}

// NewReader returns a reader of r decoded with coding enc (identity
// returns r itself). limit bounds the memory the decoder may reserve for
// its window; the caller still bounds the output it reads. Close releases
// the decoder, not r.
func NewReader(r io.Reader, enc string, limit int64) (io.ReadCloser, error) {
	c, ok := Canonical(enc)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, enc)
	case c == Identity:
		return io.NopCloser(r), nil
	case c == Gzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrInvalid, err)
		}
		return zr, nil
	case c == Brotli:
		// The format caps the window at 16 MiB (the large-window
		// extension is not decoded), so its ring buffer is bounded.
		return io.NopCloser(brotli.NewReader(r)), nil
	}
	// A frame names its window; one larger than the output allowed (or
	// than 8 MiB, what encoders use for small inputs, when limit is below
	// it) is refused before it is allocated.
	window := uint64(max(limit, 8<<20))
	zr, err := zstd.NewReader(r,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(min(window, zstd.MaxWindowSize)),
		zstd.WithDecoderMaxMemory(uint64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: zstd: %v", ErrInvalid, err)
	}
	return zr.IOReadCloser(), nil
}

// Bounds of decoding a stored tile for a client (a tile decoded for a client
// is small; a gzip bomb is not a tile): at most MaxDecoded bytes, and at
// most maxRatio times the stored size (but always minBound).
const (
	MaxDecoded = 64 << 20
	maxRatio   = 100
	minBound   = 1 << 20
)

// Bound is the most a stored tile of n bytes may decode to.
func Bound(n int) int64 { return int64(min(MaxDecoded, max(minBound, maxRatio*n))) }

// Stored is b, stored with Content-Encoding enc, decoded within Bound(len(b))
// when enc is a coding this package decodes, else b as it is: documents
// read from the tiers (metadata.json, styles, glyph ranges) are read this
// way.
func Stored(enc string, b []byte) ([]byte, error) {
	if !Decodable(enc) {
		return b, nil
	}
	return Decode(b, enc, Bound(len(b)))
}
