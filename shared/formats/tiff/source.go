package tiff

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// RangeReader reads bytes of one version of an object: an S3 object pinned
// to its ETag, a local file. ReadRange returns exactly length bytes or an
// error.
type RangeReader interface {
	ReadRange(ctx context.Context, offset, length int64) ([]byte, error)
}

// ReaderAt adapts an io.ReaderAt (a staged file, a bytes.Reader) to a
// RangeReader.
func ReaderAt(r io.ReaderAt) RangeReader { return readerAt{r} }

type readerAt struct{ r io.ReaderAt }

func (ra readerAt) ReadRange(ctx context.Context, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if offset < 0 || length < 0 {
		return nil, fmt.Errorf("tiff: range %d+%d", offset, length)
	}
	b := make([]byte, length)
	n, err := ra.r.ReadAt(b, offset)
	if n == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// ReadStats counts the range reads of one call.
type ReadStats struct {
	Reads int   // ReadRange calls
	Bytes int64 // bytes they asked for
}

func (s *ReadStats) add(o ReadStats) {
	s.Reads += o.Reads
	s.Bytes += o.Bytes
}

// readExact reads n bytes at off through r and checks it got them.
func readExact(ctx context.Context, r RangeReader, off, n int64) ([]byte, error) {
	b, err := r.ReadRange(ctx, off, n)
	if err != nil {
		return nil, &readError{fmt.Errorf("read %d bytes at %d: %w", n, off, err)}
	}
	if int64(len(b)) != n {
		return nil, &readError{fmt.Errorf("read %d bytes at %d: got %d", n, off, len(b))}
	}
	return b, nil
}
