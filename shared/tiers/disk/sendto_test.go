package disk_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// fileSink is a writer that takes a file as net/http's response writer
// does (ReadFrom), recording whether it was handed the file itself (as
// net's sendfile takes it: a syscall.Conn, at most so many bytes of it)
// and whether it was flushed first.
type fileSink struct {
	bytes.Buffer
	fromFile, flushed, flushedFirst bool
}

func (s *fileSink) Flush() { s.flushed = true }

func (s *fileSink) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		_, s.fromFile = lr.R.(syscall.Conn)
	}
	s.flushedFirst = s.flushed
	return s.Buffer.ReadFrom(r)
}

// sendTo opens key and sends its body to w.
func sendTo(t *testing.T, s *disk.Store, key string, w io.Writer) (int64, error) {
	t.Helper()
	_, b, ok := s.Open(key)
	if !ok {
		t.Fatalf("Open(%q): miss", key)
	}
	defer b.Close()
	return b.SendTo(w)
}

// TestSendToFromFile: a body whose file the store wrote goes to a writer
// that takes files as the file itself, after a flush; to any other writer
// it is copied. Either way the bytes are the body's.
func TestSendToFromFile(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<30)
	put(t, s, "big/1", &tile.Tile{Body: bigBody, ETag: `"b"`})
	var sink fileSink
	if n, err := sendTo(t, s, "big/1", &sink); err != nil || n != int64(len(bigBody)) || !bytes.Equal(sink.Bytes(), bigBody) {
		t.Fatalf("sent %d, %v; body equal %v", n, err, bytes.Equal(sink.Bytes(), bigBody))
	}
	if !sink.fromFile || !sink.flushedFirst {
		t.Fatalf("handed the file %v, flushed first %v; want both", sink.fromFile, sink.flushedFirst)
	}
	var plain bytes.Buffer
	if n, err := sendTo(t, s, "big/1", struct{ io.Writer }{&plain}); err != nil || n != int64(len(bigBody)) || !bytes.Equal(plain.Bytes(), bigBody) {
		t.Fatalf("copied %d, %v", n, err)
	}
}

// TestSendToVerifiesAfterRestart: a store opened over files it finds does
// not know them whole: the first send of one is copied and verified (a
// damaged one is an error wrapping ErrCorrupt before its last chunk, and
// goes), and the next send of a good one is the file itself.
func TestSendToVerifiesAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, 1<<30)
	put(t, s, "good/1", &tile.Tile{Body: bigBody})
	put(t, s, "bad/1", &tile.Tile{Body: bigBody})
	bad := filepath.Join(dir, disk.FileName("bad/1"))
	fi, err := os.Stat(bad)
	must(t, err)
	must(t, flip(bad, int(fi.Size())-len(bigBody)+10))

	s = open(t, dir, 1<<30) // a restart: the files are found, not written
	var first, second fileSink
	if _, err := sendTo(t, s, "good/1", &first); err != nil || first.fromFile || !bytes.Equal(first.Bytes(), bigBody) {
		t.Fatalf("first send after the restart: %v, from the file %v (want a verified copy)", err, first.fromFile)
	}
	if _, err := sendTo(t, s, "good/1", &second); err != nil || !second.fromFile || !bytes.Equal(second.Bytes(), bigBody) {
		t.Fatalf("second send: %v, from the file %v (want the file)", err, second.fromFile)
	}
	var damaged fileSink
	n, err := sendTo(t, s, "bad/1", &damaged)
	if !errors.Is(err, disk.ErrCorrupt) || n >= int64(len(bigBody)) || damaged.fromFile {
		t.Fatalf("damaged file: sent %d of %d, %v, from the file %v; want ErrCorrupt before the last chunk", n, len(bigBody), err, damaged.fromFile)
	}
	if _, ok := s.Stat("bad/1"); ok {
		t.Error("damaged file still indexed")
	}
}

// TestSendToCopiesWithoutGarbage: a copy goes through a pooled buffer, not
// one the size of the tile. Not parallel: it reads the process's
// allocation counter. Under -race, sync.Pool drops a quarter of what is put
// back, on purpose, and the copies allocate their buffer again (3 runs in
// 40 failed): make test runs it without -race (NO_RACE_TESTS).
func TestSendToCopiesWithoutGarbage(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers on purpose: make test runs it without -race")
	}
	s := open(t, t.TempDir(), 1<<30)
	put(t, s, "big/1", &tile.Tile{Body: bigBody})
	sendTo(t, s, "big/1", io.Discard) // the pool's first buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := sendTo(t, s, "big/1", struct{ io.Writer }{io.Discard}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 10; per > 16<<10 { // the open file, its header and metadata
		t.Errorf("a send of %d bytes allocated %d bytes", len(bigBody), per)
	}
}

// TestStatReadsAgo: Stat tells how many reads of the store ago a key was
// last read.
func TestStatReadsAgo(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), 1<<30)
	for _, k := range []string{"a", "b", "c"} {
		put(t, s, k, &tile.Tile{Body: []byte(k)})
	}
	if it, _ := s.Stat("a"); it.ReadsAgo != -1 {
		t.Fatalf("unread: ReadsAgo %d, want -1", it.ReadsAgo)
	}
	s.Get("a")
	s.Get("b")
	_, b, _ := s.Open("c")
	b.Close()
	for k, want := range map[string]int64{"a": 2, "b": 1, "c": 0} {
		if it, _ := s.Stat(k); it.ReadsAgo != want {
			t.Errorf("%s: ReadsAgo %d, want %d", k, it.ReadsAgo, want)
		}
	}
}
