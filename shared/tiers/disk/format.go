package disk

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// A tile file is a fixed header, the metadata, then the body:
//
//	offset size
//	 0      4   magic "TSDK"
//	 4      2   version (1), little endian
//	 6      2   flags (0)
//	 8      4   metadata length
//	12      8   body length
//	20      4   CRC32C (Castagnoli) of the body
//	24      4   CRC32C of bytes 0..24 and the metadata
//	28          metadata: key, content type, content encoding, ETag (each a
//	            uvarint length and bytes), Last-Modified and StoredAt (each a
//	            varint of Unix nanoseconds, 0 for the zero time)
//	28+m        body
//
// The header checksum lets Open rebuild the index from headers alone (keys,
// sizes and ETags it can trust) without reading every body; Get checks both.
// A file is whole only if its length is exactly 28 + metadata + body, which
// is how a torn write shows.
const (
	magic       = "TSDK"
	version     = 1
	headerLen   = 28
	maxMetaLen  = 64 << 10
	tempPattern = ".tmp-*"
	tempPrefix  = ".tmp-"
	fileSuffix  = ".tile"
	nameHexLen  = 32 // 128 bits of SHA-256
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is the class of every decoding and verification failure: a
// torn, truncated or damaged file, or one that holds another key.
var ErrCorrupt = errors.New("disk: corrupt file")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// fileName returns the path of key's file relative to Dir: the hex of the
// first 128 bits of SHA-256(key), under a subdirectory named by its first
// byte (256 subdirectories keep directories small). Keys never become paths.
func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:nameHexLen/2])
	return filepath.Join(h[:2], h+fileSuffix)
}

// meta is the decoded metadata of a file.
type meta struct {
	key, contentType, contentEncoding, etag string
	lastModified, storedAt                  time.Time
}

func encodeHeader(m meta, body []byte) ([]byte, error) {
	buf := make([]byte, headerLen, headerLen+len(m.key)+len(m.contentType)+len(m.contentEncoding)+len(m.etag)+4*binary.MaxVarintLen64)
	for _, s := range []string{m.key, m.contentType, m.contentEncoding, m.etag} {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	buf = binary.AppendVarint(buf, unixNano(m.lastModified))
	buf = binary.AppendVarint(buf, unixNano(m.storedAt))
	metaLen := len(buf) - headerLen
	if metaLen > maxMetaLen {
		return nil, fmt.Errorf("disk: metadata of %d bytes exceeds %d", metaLen, maxMetaLen)
	}
	copy(buf[0:4], magic)
	binary.LittleEndian.PutUint16(buf[4:6], version)
	binary.LittleEndian.PutUint16(buf[6:8], 0)
	binary.LittleEndian.PutUint32(buf[8:12], uint32(metaLen))
	binary.LittleEndian.PutUint64(buf[12:20], uint64(len(body)))
	binary.LittleEndian.PutUint32(buf[20:24], crc32.Checksum(body, castagnoli))
	c := crc32.Update(crc32.Checksum(buf[:24], castagnoli), castagnoli, buf[headerLen:])
	binary.LittleEndian.PutUint32(buf[24:28], c)
	return buf, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// parsedHeader is the fixed part of a file.
type parsedHeader struct {
	metaLen int
	bodyLen int64
	bodyCRC uint32
	metaCRC uint32
}

func parseFixed(h []byte) (parsedHeader, error) {
	if len(h) < headerLen {
		return parsedHeader{}, formatErr("short header (%d bytes)", len(h))
	}
	if string(h[0:4]) != magic {
		return parsedHeader{}, formatErr("bad magic")
	}
	if v := binary.LittleEndian.Uint16(h[4:6]); v != version {
		return parsedHeader{}, formatErr("version %d", v)
	}
	p := parsedHeader{
		metaLen: int(binary.LittleEndian.Uint32(h[8:12])),
		bodyLen: int64(binary.LittleEndian.Uint64(h[12:20])),
		bodyCRC: binary.LittleEndian.Uint32(h[20:24]),
		metaCRC: binary.LittleEndian.Uint32(h[24:28]),
	}
	if p.metaLen > maxMetaLen || p.bodyLen < 0 {
		return parsedHeader{}, formatErr("lengths out of range")
	}
	return p, nil
}

// decodeMeta checks the header checksum and decodes the metadata. h holds at
// least the header and the metadata.
func decodeMeta(p parsedHeader, h []byte) (meta, error) {
	if len(h) < headerLen+p.metaLen {
		return meta{}, formatErr("short metadata")
	}
	mb := h[headerLen : headerLen+p.metaLen]
	if crc32.Update(crc32.Checksum(h[:24], castagnoli), castagnoli, mb) != p.metaCRC {
		return meta{}, formatErr("header checksum mismatch")
	}
	var strs [4]string
	for i := range strs {
		n, k := binary.Uvarint(mb)
		if k <= 0 || n > uint64(len(mb)-k) {
			return meta{}, formatErr("bad metadata string")
		}
		strs[i] = string(mb[k : k+int(n)])
		mb = mb[k+int(n):]
	}
	var times [2]int64
	for i := range times {
		v, k := binary.Varint(mb)
		if k <= 0 {
			return meta{}, formatErr("bad metadata time")
		}
		times[i] = v
		mb = mb[k:]
	}
	if len(mb) != 0 {
		return meta{}, formatErr("trailing metadata")
	}
	m := meta{key: strs[0], contentType: strs[1], contentEncoding: strs[2], etag: strs[3],
		lastModified: fromUnixNano(times[0]), storedAt: fromUnixNano(times[1])}
	if tile.ValidateKey(m.key) != nil {
		return meta{}, formatErr("stored key is not a tile key")
	}
	return m, nil
}

// readHeader reads and verifies the header and metadata of a file of size
// bytes held by r, and returns them with the offset of the body.
func readHeader(r io.ReaderAt, size int64) (parsedHeader, meta, int64, error) {
	// One read takes the fixed header and, for nearly every tile, all of
	// its metadata (key, content type, ETag, times): a Get costs two reads
	// of its file, not three. A file shorter than the header reads short.
	h := make([]byte, max(headerLen, min(size, headerGuess)))
	if _, err := r.ReadAt(h, 0); err != nil {
		return parsedHeader{}, meta{}, 0, readErr("header", err)
	}
	p, err := parseFixed(h[:headerLen])
	if err != nil {
		return parsedHeader{}, meta{}, 0, err
	}
	bodyOff := int64(headerLen) + int64(p.metaLen)
	if want := bodyOff + p.bodyLen; size != want {
		return parsedHeader{}, meta{}, 0, formatErr("file is %d bytes, header says %d (torn)", size, want)
	}
	if read := int64(len(h)); read < bodyOff { // metadata past the first read
		h = append(h, make([]byte, bodyOff-read)...)
		if _, err := r.ReadAt(h[read:], read); err != nil {
			return parsedHeader{}, meta{}, 0, readErr("metadata", err)
		}
	}
	m, err := decodeMeta(p, h[:bodyOff])
	if err != nil {
		return parsedHeader{}, meta{}, 0, err
	}
	return p, m, bodyOff, nil
}

// readKnownHeader reads the header and metadata of a file whose body
// begins at off, from its position (its start), leaving it at its body.
// Its length is not checked: off is what the index found when the file was
// written or indexed. A header whose metadata has another length (another
// version of the key) is an error wrapping ErrCorrupt, which the caller
// may take as "read it as an unknown file".
func readKnownHeader(f io.Reader, off int) (parsedHeader, meta, error) {
	var small [headerGuess]byte
	var h []byte
	if off <= len(small) {
		h = small[:off]
	} else {
		h = make([]byte, off)
	}
	if _, err := io.ReadFull(f, h); err != nil {
		return parsedHeader{}, meta{}, readErr("header", err)
	}
	p, err := parseFixed(h[:min(headerLen, len(h))])
	if err != nil {
		return parsedHeader{}, meta{}, err
	}
	if headerLen+p.metaLen != off {
		return parsedHeader{}, meta{}, formatErr("metadata of %d bytes, the index says %d", p.metaLen, off-headerLen)
	}
	m, err := decodeMeta(p, h)
	return p, m, err
}

// headerGuess is how much of a file readHeader reads first.
const headerGuess = 256

// readErr is a failed read of part of a file: a file shorter than its header
// says is corrupt, anything else is an I/O error.
func readErr(part string, err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatErr("short %s", part)
	}
	return fmt.Errorf("disk: read %s: %w", part, err)
}

// tile returns the tile m describes, with body.
func (m meta) tile(body []byte) *tile.Tile {
	return &tile.Tile{
		Body:            body,
		ContentType:     m.contentType,
		ContentEncoding: m.contentEncoding,
		ETag:            m.etag,
		LastModified:    m.lastModified,
		StoredAt:        m.storedAt,
	}
}
