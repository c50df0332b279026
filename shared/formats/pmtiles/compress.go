package pmtiles

import (
	"errors"
	"fmt"
	"io"

	"github.com/tilesieve/tilesieve/shared/tile/coding"
)

// ErrTooLarge is bytes that decompress past the cap they were given (a
// decompression bomb, or a directory larger than a reader allows). It comes
// wrapped together with ErrInvalid.
var ErrTooLarge = errors.New("pmtiles: decompresses past the cap")

// CompressionOf is the compression of bytes stored with the HTTP
// Content-Encoding enc (any case): none for "" and "identity",
// CompressionUnknown for a coding PMTiles does not name.
func CompressionOf(enc string) Compression {
	c, ok := coding.Canonical(enc)
	if !ok {
		return CompressionUnknown
	}
	switch c {
	case coding.Gzip:
		return CompressionGzip
	case coding.Brotli:
		return CompressionBrotli
	case coding.Zstd:
		return CompressionZstd
	}
	return CompressionNone
}

// coding is the content coding of c; ok is false for a compression the
// format does not name.
func (c Compression) coding() (enc string, ok bool) {
	switch c {
	case CompressionNone:
		return coding.Identity, true
	case CompressionGzip, CompressionBrotli, CompressionZstd:
		return c.String(), true
	}
	return "", false
}

// Decompress undoes compression c of a directory, the metadata or a tile,
// refusing output past max bytes (ErrTooLarge) without allocating more than
// about max: none, gzip, brotli and zstd are decoded (shared/tile/coding);
// an unknown compression is ErrUnsupported.
func Decompress(raw []byte, c Compression, max int64) ([]byte, error) {
	enc, ok := c.coding()
	if !ok {
		return nil, fmtUnsupported("compression %v", c)
	}
	out, err := coding.Decode(raw, enc, max)
	return out, codingErr(c, err)
}

// NewDecompressor returns a reader of r decompressed with c (gzip, brotli or
// zstd; none returns r itself). limit bounds the memory the decoder may
// reserve for its window; the caller still bounds the output it reads.
// Close releases the decoder, not r.
func NewDecompressor(r io.Reader, c Compression, limit int64) (io.ReadCloser, error) {
	enc, ok := c.coding()
	if !ok {
		return nil, fmtUnsupported("compression %v", c)
	}
	zr, err := coding.NewReader(r, enc, limit)
	return zr, codingErr(c, err)
}

// codingErr is a decoder's error with this package's identity: too large,
// or invalid.
func codingErr(c Compression, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, coding.ErrTooLarge):
		return tooLarge("%v: %v", c, err)
	}
	return invalid("%v: %v", c, err)
}

func tooLarge(format string, args ...any) error {
	return fmt.Errorf("pmtiles: "+format+": %w: %w", append(args, ErrTooLarge, ErrInvalid)...)
}
