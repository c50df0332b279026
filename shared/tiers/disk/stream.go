package disk

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// verifyBuf is the buffer a Body verifies a whole body through.
const verifyBuf = 32 << 10

// Open returns key's tile metadata (Body nil) and a reader of its body
// straight from the file, for tiles too big to hold in memory per request.
// The header and key are verified before Open returns; a file that fails is
// removed and Open reports a miss. The body's checksum is verified as it is
// read; see Body for what a caller that streams to a client must do. The
// caller closes the Body.
func (s *Store) Open(key string) (*tile.Tile, *Body, bool) {
	e, ok := s.lookup(key)
	if !ok {
		return nil, nil, false
	}
	f, p, m, off, ok := s.openFile(e)
	if !ok {
		return nil, nil, false
	}
	s.hits.Add(1)
	return m.tile(nil), &Body{s: s, e: e, f: f, off: off, size: p.bodyLen, want: p.bodyCRC}, true
}

// Body reads one tile's body from its file and verifies its checksum. It is
// an io.ReadSeekCloser; like an *os.File it is not for concurrent use.
//
// Read in order from the start, without seeking, the body is verified as it
// streams: the Read that would return the last bytes checks the checksum
// first and, if it fails, returns an error wrapping ErrCorrupt instead of
// those bytes (and removes the file). A caller streaming to a client has by
// then sent everything but that last chunk: it must abort the response (an
// HTTP handler panics with http.ErrAbortHandler, or closes the connection)
// so that the client sees a broken response, never a complete corrupt one.
// The Content-Length to announce is Size.
//
// After a Seek (as http.ServeContent does for ranges and to learn the size),
// the next Read first verifies the whole body through a fixed buffer, once,
// so that no range is served from a corrupt file; that costs one extra read
// of the file. Serve whole bodies without seeking to read the file once.
type Body struct {
	s         *Store
	e         *entry
	f         *os.File
	off, size int64 // the body's offset in the file, and its length
	want      uint32

	pos      int64  // next byte of the body to read
	crc      uint32 // of body[:crcPos]
	crcPos   int64
	verified bool // the whole body matched its checksum
	seeked   bool // reads are no longer in order from the start
	err      error
}

// Size is the length of the body.
func (b *Body) Size() int64 { return b.size }

// Read reads the body. See Body for how it verifies.
func (b *Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.verified && (b.seeked || b.pos >= b.size) {
		if err := b.verify(); err != nil {
			return 0, err
		}
	}
	if b.pos >= b.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.size-b.pos)]
	n, err := b.f.ReadAt(p, b.off+b.pos)
	if n < len(p) {
		return 0, b.fail(readErr("body", err))
	}
	if !b.verified {
		// In order from the start: fold the bytes in; the chunk that ends
		// the body goes out only if the checksum holds.
		b.crc = crc32.Update(b.crc, castagnoli, p)
		b.crcPos += int64(n)
		if b.crcPos == b.size {
			if b.crc != b.want {
				return 0, b.fail(formatErr("body checksum mismatch"))
			}
			b.verified = true
		}
	}
	b.pos += int64(n)
	return n, nil
}

// verify reads the rest of the body after what has been folded in so far
// and checks the checksum.
func (b *Body) verify() error {
	buf := make([]byte, min(verifyBuf, max(b.size-b.crcPos, 1)))
	for b.crcPos < b.size {
		chunk := buf[:min(int64(len(buf)), b.size-b.crcPos)]
		n, err := b.f.ReadAt(chunk, b.off+b.crcPos)
		if n < len(chunk) {
			return b.fail(readErr("body", err))
		}
		b.crc = crc32.Update(b.crc, castagnoli, chunk)
		b.crcPos += int64(n)
	}
	if b.crc != b.want {
		return b.fail(formatErr("body checksum mismatch"))
	}
	b.verified = true
	return nil
}

// fail makes err the reader's answer from now on and drops the file.
func (b *Body) fail(err error) error {
	b.s.discard(b.e, err)
	b.err = fmt.Errorf("disk: read %q: %w", b.e.key, err)
	return b.err
}

// Seek sets where the next Read starts, relative to the body.
func (b *Body) Seek(offset int64, whence int) (int64, error) {
	pos := offset
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		if offset == 0 {
			return b.pos, nil // asks the position; moves nothing
		}
		pos += b.pos
	case io.SeekEnd:
		pos += b.size
	default:
		return 0, errors.New("disk: seek: invalid whence")
	}
	if pos < 0 {
		return 0, errors.New("disk: seek: negative position")
	}
	b.pos, b.seeked = pos, true
	return pos, nil
}

// Close closes the file.
func (b *Body) Close() error { return b.f.Close() }
