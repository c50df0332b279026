// Package codec decompresses TIFF tiles (none, LZW, Deflate, PackBits) into
// a buffer of exactly the size the tile must have, and undoes TIFF's
// horizontal (2) and floating-point (3) predictors.
//
// Decompression never writes past the size it is given: output beyond it is
// ErrTooLarge (a decompression bomb, or a tile that is not what its IFD
// says), output short of it is ErrShort.
package codec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/image/tiff/lzw"
)

// Compression methods (values of the TIFF Compression tag) decoded here.
const (
	None       = 1
	LZW        = 5
	Deflate    = 8
	PackBits   = 32773
	DeflateOld = 32946
)

var (
	// ErrTooLarge is data that decompresses to more than the tile holds.
	ErrTooLarge = errors.New("data decompresses past the size of the tile")
	// ErrShort is data that decompresses to less than the tile holds.
	ErrShort = errors.New("data decompresses short of the size of the tile")
)

// Supported reports whether Decompress decodes method.
func Supported(method int) bool {
	switch method {
	case None, LZW, Deflate, DeflateOld, PackBits:
		return true
	}
	return false
}

// Decompress decodes src, compressed with method, into a new buffer of
// exactly n bytes. src is not modified.
func Decompress(method int, src []byte, n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("negative tile size %d", n)
	}
	switch method {
	case None:
		if len(src) < n {
			return nil, fmt.Errorf("%w: %d bytes stored, %d needed", ErrShort, len(src), n)
		}
		return bytes.Clone(src[:n]), nil
	case PackBits:
		return unpackBits(src, n)
	case LZW:
		// TIFF's LZW is MSB-first with the code width growing one code
		// early, which is what x/image's variant of compress/lzw decodes.
		return readExactly(lzw.NewReader(bytes.NewReader(src), lzw.MSB, 8), n)
	case Deflate, DeflateOld:
		zr, err := zlib.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("deflate: %w", err)
		}
		return readExactly(zr, n)
	}
	return nil, fmt.Errorf("compression %d not decoded here", method)
}

// readExactly reads n bytes from rc and then checks the stream ends there,
// reading at most one byte more.
func readExactly(rc io.ReadCloser, n int) ([]byte, error) {
	defer rc.Close()
	dst := make([]byte, n)
	if _, err := io.ReadFull(rc, dst); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w (%d bytes needed)", ErrShort, n)
		}
		return nil, err
	}
	// One byte more tells a stream that ends here from a bomb; a reader
	// answering (0, nil) is asked a few times, not forever.
	var one [1]byte
	m, err := rc.Read(one[:])
	for try := 0; m == 0 && err == nil && try < 8; try++ {
		m, err = rc.Read(one[:])
	}
	if m > 0 {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, n)
	}
	if err == nil {
		return nil, fmt.Errorf("stream does not end after %d bytes", n)
	}
	if err != io.EOF {
		return nil, fmt.Errorf("after %d bytes: %w", n, err)
	}
	return dst, nil
}

// unpackBits decodes Apple PackBits run-length data into n bytes.
func unpackBits(src []byte, n int) ([]byte, error) {
	dst := make([]byte, 0, n)
	for i := 0; i < len(src) && len(dst) < n; {
		c := int(int8(src[i]))
		i++
		switch {
		case c >= 0: // c+1 literal bytes
			m := c + 1
			if i+m > len(src) {
				return nil, fmt.Errorf("packbits: literal run past the end of the data")
			}
			if len(dst)+m > n {
				return nil, ErrTooLarge
			}
			dst = append(dst, src[i:i+m]...)
			i += m
		case c != -128: // the next byte 1-c times
			m := 1 - c
			if i >= len(src) {
				return nil, fmt.Errorf("packbits: repeat run past the end of the data")
			}
			if len(dst)+m > n {
				return nil, ErrTooLarge
			}
			for range m {
				dst = append(dst, src[i])
			}
			i++
		}
	}
	if len(dst) < n {
		return nil, fmt.Errorf("%w (%d bytes needed)", ErrShort, n)
	}
	return dst, nil
}

// UndoHorizontal undoes predictor 2 in place: b holds rows of width pixels
// of spp samples, each bits wide (8, 16 or 32) in byte order o.
func UndoHorizontal(b []byte, o binary.ByteOrder, width, spp, bits int) error {
	size := bits / 8
	if bits%8 != 0 || size == 0 || size > 4 || size == 3 {
		return fmt.Errorf("horizontal predictor with %d-bit samples", bits)
	}
	row := width * spp * size
	if row <= 0 || len(b)%row != 0 {
		return fmt.Errorf("horizontal predictor: %d bytes are not whole rows of %d", len(b), row)
	}
	for r := 0; r < len(b); r += row {
		p := b[r : r+row]
		switch size {
		case 1:
			for i := spp; i < len(p); i++ {
				p[i] += p[i-spp]
			}
		case 2:
			for i := 2 * spp; i < len(p); i += 2 {
				o.PutUint16(p[i:], o.Uint16(p[i:])+o.Uint16(p[i-2*spp:]))
			}
		case 4:
			for i := 4 * spp; i < len(p); i += 4 {
				o.PutUint32(p[i:], o.Uint32(p[i:])+o.Uint32(p[i-4*spp:]))
			}
		}
	}
	return nil
}

// UndoFloat undoes predictor 3 as libtiff writes it: each row's bytes were
// split into planes by significance (most significant first) and then
// differenced bytewise with a stride of spp. It leaves each sample
// big-endian, whatever the byte order of the file.
func UndoFloat(b []byte, width, spp, bits int) error {
	size := bits / 8
	if size != 2 && size != 4 && size != 8 || bits%8 != 0 {
		return fmt.Errorf("floating-point predictor with %d-bit samples", bits)
	}
	row := width * spp * size
	if row <= 0 || len(b)%row != 0 {
		return fmt.Errorf("floating-point predictor: %d bytes are not whole rows of %d", len(b), row)
	}
	tmp := make([]byte, row)
	n := width * spp // samples per row
	for r := 0; r < len(b); r += row {
		p := b[r : r+row]
		for i := spp; i < len(p); i++ {
			p[i] += p[i-spp]
		}
		copy(tmp, p)
		for i := range n {
			for k := range size {
				p[i*size+k] = tmp[k*n+i]
			}
		}
	}
	return nil
}
