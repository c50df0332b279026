package disk

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/tilesieve/tilesieve/shared/tiers/disk/internal/rawfile"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// verifyBuf is the buffer a Body verifies a whole body through, and copies
// one through that is not sent straight from its file.
const verifyBuf = 32 << 10

// copyBufs are the buffers of SendTo's copies: a disk hit leaves no
// garbage the size of its tile.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, verifyBuf); return &b }}

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
	o, ok := s.openFile(e, true)
	if !ok {
		return nil, nil, false
	}
	s.hits.Add(1)
	return o.m.tile(nil), &Body{s: s, e: e, f: o.f, off: o.off, size: o.p.bodyLen, want: o.p.bodyCRC, atBody: o.atBody}, true
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
// of the file. Serve whole bodies without seeking to read the file once,
// or not at all (SendTo).
type Body struct {
	s         *Store
	e         *entry
	f         rawfile.File
	off, size int64 // the body's offset in the file, and its length
	want      uint32
	atBody    bool // the file's position is off

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
			b.e.verified.Store(true)
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
	b.e.verified.Store(true)
	return nil
}

// SendTo writes the rest of the body to w, as io.Copy would but without
// its buffer. A body read from its start whose file the store knows whole
// goes from the file to w unread where w can take a file (an
// io.ReaderFrom: net/http's response writer hands it to sendfile), after
// flushing w if it can be (the answer's header then goes out without the
// body's first bytes copied behind it): trusted, not verified again (see
// the package doc). Any other body is copied through a pooled buffer and
// verified as Read verifies it, which makes its file known whole for the
// next. Body has no WriteTo, so io.Copy always verifies.
func (b *Body) SendTo(w io.Writer) (int64, error) {
	if b.err != nil {
		return 0, b.err
	}
	if rf, ok := w.(io.ReaderFrom); ok && b.pos == 0 && !b.seeked && b.e.verified.Load() {
		return b.sendFile(rf, w)
	}
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	// Not the writer's own copy method, which would take a buffer of its
	// own.
	return io.CopyBuffer(struct{ io.Writer }{w}, b, *buf)
}

// sendFile hands the body's part of the file to rf.
func (b *Body) sendFile(rf io.ReaderFrom, w io.Writer) (int64, error) {
	if !b.atBody {
		if _, err := b.f.Seek(b.off, io.SeekStart); err != nil {
			return 0, b.fail(readErr("body", err))
		}
	}
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
	n, err := rf.ReadFrom(&io.LimitedReader{R: b.f, N: b.size})
	b.pos += n
	if err == nil && n < b.size {
		// The file ended early: shorter than its header says (torn).
		err = b.fail(formatErr("file ends %d bytes into a body of %d", n, b.size))
	}
	return n, err
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
