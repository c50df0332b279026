package disk

import (
	"bytes"
	"hash/crc32"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/tile"
)

// FuzzDecodeFile feeds arbitrary bytes to the file decoder: it must refuse
// or decode, never panic, and what it decodes must re-encode to itself.
func FuzzDecodeFile(f *testing.F) {
	m := meta{key: "osm/1/0/0.png", contentType: "image/png", etag: `"e"`, lastModified: time.Unix(1, 0), storedAt: time.Unix(2, 0)}
	body := []byte("body")
	hdr, err := encodeHeader(m, body)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(hdr, body...))
	f.Add(hdr)
	f.Add([]byte("TSDK"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, tl, err := decodeFile(b)
		if err != nil {
			return
		}
		hdr, err := encodeHeader(m, tl.Body)
		if err != nil {
			t.Fatal(err)
		}
		if got := append(hdr, tl.Body...); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded %x, decoded from %x", got, b)
		}
	})
}

// decodeFile verifies a whole file as Get does and returns its tile; the
// body aliases b.
func decodeFile(b []byte) (meta, *tile.Tile, error) {
	p, m, off, err := readHeader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return meta{}, nil, err
	}
	body := b[off:]
	if crc32.Checksum(body, castagnoli) != p.bodyCRC {
		return meta{}, nil, formatErr("body checksum mismatch")
	}
	return m, m.tile(body), nil
}
