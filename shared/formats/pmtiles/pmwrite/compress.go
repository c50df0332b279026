package pmwrite

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
)

// Compress encodes b with c (none, gzip, brotli or zstd) as Finish encodes
// an archive's directories and metadata: equal bytes in, equal bytes out.
// None returns b itself.
func Compress(b []byte, c pmtiles.Compression) ([]byte, error) {
	enc, err := newEncoder(c)
	if err != nil {
		return nil, err
	}
	return enc.encode(b)
}

// resetWriter is a compressor that can start a new stream on another
// writer, keeping its settings and buffers.
type resetWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// encoder compresses one section after another with one compression,
// reusing its state: an archive's leaves are encoded over and over while
// their size is chosen.
type encoder struct {
	zw  resetWriter // nil for none
	out bytes.Buffer
}

func newEncoder(c pmtiles.Compression) (*encoder, error) {
	enc := &encoder{}
	switch c {
	case pmtiles.CompressionNone:
	case pmtiles.CompressionGzip:
		// No name or time in the header, so equal bytes compress to
		// equal bytes.
		zw, err := gzip.NewWriterLevel(nil, gzip.BestCompression)
		if err != nil {
			return nil, fmt.Errorf("pmwrite: gzip: %w", err)
		}
		enc.zw = zw
	case pmtiles.CompressionBrotli:
		enc.zw = brotli.NewWriterLevel(nil, brotli.DefaultCompression)
	case pmtiles.CompressionZstd:
		// One goroutine: the output then depends on the input alone.
		zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("pmwrite: zstd: %w", err)
		}
		enc.zw = zw
	default:
		return nil, badInput("compression %v: want none, gzip, br or zstd", c)
	}
	return enc, nil
}

// encode returns b compressed, in bytes of its own.
func (enc *encoder) encode(b []byte) ([]byte, error) {
	if enc.zw == nil {
		return b, nil
	}
	enc.out.Reset()
	enc.zw.Reset(&enc.out)
	if _, err := enc.zw.Write(b); err != nil {
		return nil, fmt.Errorf("pmwrite: compress: %w", err)
	}
	if err := enc.zw.Close(); err != nil {
		return nil, fmt.Errorf("pmwrite: compress: %w", err)
	}
	return bytes.Clone(enc.out.Bytes()), nil
}
