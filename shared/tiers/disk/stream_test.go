package disk_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// bigBody is larger than the verify buffer and than io.Copy's, so a stream
// takes several reads.
var bigBody = func() []byte {
	b := make([]byte, 200_000)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

func TestOpenStreamsBody(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<30)
	want := &tile.Tile{Body: bigBody, ContentType: "video/mp4", ContentEncoding: "gzip", ETag: `"big"`, LastModified: t0, StoredAt: t0}
	put(t, s, "big/1", want)
	put(t, s, "empty/1", &tile.Tile{StoredAt: t0})

	tests := []struct {
		name string
		read func(b *disk.Body) ([]byte, error)
		want []byte
	}{
		{"whole, in order", func(b *disk.Body) ([]byte, error) { return io.ReadAll(b) }, bigBody},
		{"range after seek", func(b *disk.Body) ([]byte, error) {
			if _, err := b.Seek(150_000, io.SeekStart); err != nil {
				return nil, err
			}
			return io.ReadAll(io.LimitReader(b, 1000))
		}, bigBody[150_000:151_000]},
		{"as ServeContent: size, then from the start", func(b *disk.Body) ([]byte, error) {
			if n, err := b.Seek(0, io.SeekEnd); err != nil || n != int64(len(bigBody)) {
				return nil, errors.New("bad size")
			}
			b.Seek(0, io.SeekStart)
			return io.ReadAll(b)
		}, bigBody},
		{"section reader", func(b *disk.Body) ([]byte, error) {
			return io.ReadAll(io.NewSectionReader(readerAt{b}, 10, 20))
		}, bigBody[10:30]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta, b, ok := s.Open("big/1")
			if !ok {
				t.Fatal("Open: miss")
			}
			defer b.Close()
			if meta.Body != nil || meta.ETag != want.ETag || meta.ContentType != want.ContentType ||
				meta.ContentEncoding != "gzip" || !meta.LastModified.Equal(t0) || b.Size() != int64(len(bigBody)) {
				t.Fatalf("metadata: got %+v size %d", meta, b.Size())
			}
			got, err := tt.read(b)
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("got %d bytes, %v, want %d bytes", len(got), err, len(tt.want))
			}
		})
	}
	_, b, ok := s.Open("empty/1")
	if !ok {
		t.Fatal("Open of an empty body: miss")
	}
	if got, err := io.ReadAll(b); err != nil || len(got) != 0 {
		t.Errorf("empty body: got %q, %v", got, err)
	}
	b.Close()
	if _, _, ok := s.Open("absent/1"); ok {
		t.Error("Open of an absent key: hit")
	}
}

// readerAt reads a Body through Seek and Read.
type readerAt struct{ b *disk.Body }

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if _, err := r.b.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.ReadFull(r.b, p)
}

// TestOpenCorruptBody: a flipped body byte is a read error (wrapping
// ErrCorrupt) before the last chunk goes out, whether the body streams in
// order or a range is read; the file goes. A damaged header is a miss.
func TestOpenCorruptBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		at   int // the byte of the body flipped
		read func(b *disk.Body) (int64, error)
	}{
		{"stream, early byte", 10, func(b *disk.Body) (int64, error) { return io.Copy(io.Discard, b) }},
		{"stream, last byte", len(bigBody) - 1, func(b *disk.Body) (int64, error) { return io.Copy(io.Discard, b) }},
		{"stream, 1-byte reads", 5, func(b *disk.Body) (int64, error) {
			return io.CopyBuffer(io.Discard, struct{ io.Reader }{b}, make([]byte, 1))
		}},
		{"range elsewhere", 10, func(b *disk.Body) (int64, error) {
			b.Seek(100_000, io.SeekStart)
			return io.CopyN(io.Discard, b, 10)
		}},
		{"range from the start", 150_000, func(b *disk.Body) (int64, error) {
			b.Seek(0, io.SeekStart)
			return io.CopyN(io.Discard, b, 10)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, t.TempDir(), 1<<30)
			put(t, s, "big/1", &tile.Tile{Body: bigBody, ETag: `"b"`})
			path := filepath.Join(s.Dir(), disk.FileName("big/1"))
			fi, err := os.Stat(path)
			must(t, err)
			bodyOff := int(fi.Size()) - len(bigBody)
			must(t, flip(path, bodyOff+tt.at))

			_, b, ok := s.Open("big/1")
			if !ok {
				t.Fatal("Open: miss (the header is intact)")
			}
			n, err := tt.read(b)
			b.Close()
			if !errors.Is(err, disk.ErrCorrupt) {
				t.Fatalf("read: got %d bytes, %v, want ErrCorrupt", n, err)
			}
			if n >= int64(len(bigBody)) {
				t.Errorf("read %d bytes of a corrupt %d-byte body: the last chunk went out", n, len(bigBody))
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("corrupt file still there: %v", err)
			}
			if _, ok := s.Stat("big/1"); ok {
				t.Error("corrupt file still indexed")
			}
			if st := s.Stats(); st.Corrupt != 1 {
				t.Errorf("corrupt: got %d, want 1", st.Corrupt)
			}
		})
	}

	t.Run("header", func(t *testing.T) {
		t.Parallel()
		s := open(t, t.TempDir(), 1<<30)
		put(t, s, "big/1", &tile.Tile{Body: bigBody})
		path := filepath.Join(s.Dir(), disk.FileName("big/1"))
		must(t, flip(path, disk.HeaderLen+2))
		if _, _, ok := s.Open("big/1"); ok {
			t.Fatal("Open of a file with a damaged header: hit")
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("corrupt file still there: %v", err)
		}
	})
}
