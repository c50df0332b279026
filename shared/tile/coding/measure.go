package coding

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Measure decodes b, stored with Content-Encoding enc, and returns
// the decoded body when it is at most keep bytes, else only its size
// (counted through a small buffer: a large variant is never held whole).
// Past limit it fails with ErrTooLarge; a gzip trailer that says so fails
// before anything is decoded.
func Measure(enc string, b []byte, keep, limit int64) ([]byte, int64, error) {
	c, _ := Canonical(enc)
	isize := int64(-1)
	if n := len(b); c == Gzip && n >= 4 {
		// ISIZE, the decoded size mod 2^32 (RFC 1952); it can lie, so the
		// reading below is bounded as well.
		isize = int64(b[n-4]) | int64(b[n-3])<<8 | int64(b[n-2])<<16 | int64(b[n-1])<<24
		if isize > limit {
			return nil, 0, fmt.Errorf("%w: decodes to %d bytes, the limit for a %d-byte tile is %d", ErrTooLarge, isize, n, limit)
		}
	}
	zr, err := NewReader(bytes.NewReader(b), c, limit)
	if err != nil {
		return nil, 0, err
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
			return nil, 0, decodeErr(c, err, limit)
		}
		n = int64(len(out))
		if n > limit {
			return nil, 0, fmt.Errorf("%w: decodes past %d bytes", ErrTooLarge, limit)
		}
		if n <= keep {
			return out, n, nil
		}
	}
	// Too large to keep: count the rest.
	m, err := io.Copy(io.Discard, r)
	if err != nil {
		return nil, 0, decodeErr(c, err, limit)
	}
	if n += m; n > limit {
		return nil, 0, fmt.Errorf("%w: decodes past %d bytes", ErrTooLarge, limit)
	}
	return nil, n, nil
}

// decodeErr is a decoder's read error: ErrTooLarge for a decoder's own
// bound, else the error as it is.
func decodeErr(enc string, err error, limit int64) error {
	if err = ReadError(enc, err); errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%w: decodes past %d bytes: %v", ErrTooLarge, limit, err)
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
