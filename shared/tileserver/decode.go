package tileserver

import (
	"errors"
	"fmt"
	"io"

	"github.com/tilesieve/tilesieve/shared/pmtiles"
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
