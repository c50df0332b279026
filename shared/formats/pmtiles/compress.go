package pmtiles

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

// ErrTooLarge is bytes that decompress past the cap they were given (a
// decompression bomb, or a directory larger than a reader allows). It comes
// wrapped together with ErrInvalid.
var ErrTooLarge = errors.New("pmtiles: decompresses past the cap")

// CompressionOf is the compression of bytes stored with the HTTP
// Content-Encoding enc (any case): none for "" and "identity",
// CompressionUnknown for a coding PMTiles does not name.
func CompressionOf(enc string) Compression {
	switch strings.ToLower(enc) {
	case "", "identity":
		return CompressionNone
	case "gzip", "x-gzip":
		return CompressionGzip
	case "br":
		return CompressionBrotli
	case "zstd":
		return CompressionZstd
	}
	return CompressionUnknown
}

// Decompress undoes compression c of a directory, the metadata or a tile,
// refusing output past max bytes (ErrTooLarge) without allocating more than
// about max: none, gzip, brotli and zstd are decoded; an unknown compression
// is ErrUnsupported.
func Decompress(raw []byte, c Compression, max int64) ([]byte, error) {
	if c == CompressionNone {
		if int64(len(raw)) > max {
			return nil, tooLarge("%d bytes, more than the cap of %d", len(raw), max)
		}
		return raw, nil
	}
	zr, err := NewDecompressor(bytes.NewReader(raw), c, max)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	// Grow by reading, not by a size the stream claims, so a lying header
	// costs nothing.
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(zr, max+1))
	switch {
	case errors.Is(err, bytes.ErrTooLarge), errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return nil, tooLarge("%v: %v", c, err)
	case err != nil:
		return nil, invalid("%v: %v", c, err)
	case n > max:
		return nil, tooLarge("%v: decompresses to more than the cap of %d bytes", c, max)
	}
	return out.Bytes(), nil
}

// NewDecompressor returns a reader of r decompressed with c (gzip, brotli or
// zstd; none returns r itself). limit bounds the memory the decoder may
// reserve for its window; the caller still bounds the output it reads.
// Close releases the decoder, not r.
func NewDecompressor(r io.Reader, c Compression, limit int64) (io.ReadCloser, error) {
	switch c {
	case CompressionNone:
		return io.NopCloser(r), nil
	case CompressionGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, invalid("gzip: %v", err)
		}
		return zr, nil
	case CompressionBrotli:
		// The format caps the window at 16 MiB (the large-window
		// extension is not decoded), so its ring buffer is bounded.
		return io.NopCloser(brotli.NewReader(r)), nil
	case CompressionZstd:
		// A frame names its window; one larger than the output allowed
		// (or than 8 MiB, what encoders use for small inputs, when limit
		// is below it) is refused before it is allocated.
		window := uint64(max(limit, 8<<20))
		zr, err := zstd.NewReader(r,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(min(window, zstd.MaxWindowSize)),
			zstd.WithDecoderMaxMemory(uint64(limit)+1))
		if err != nil {
			return nil, invalid("zstd: %v", err)
		}
		return zr.IOReadCloser(), nil
	}
	return nil, fmtUnsupported("compression %v", c)
}

func tooLarge(format string, args ...any) error {
	return fmt.Errorf("pmtiles: "+format+": %w: %w", append(args, ErrTooLarge, ErrInvalid)...)
}
