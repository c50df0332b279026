package rawfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestFile: a File reads at offsets without moving its position, reads and
// seeks from it, reports its size, hands out its descriptor, and closes.
func TestFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if n, err := f.ReadAt(buf, 5); n != 3 || err != nil || string(buf) != "567" {
		t.Fatalf("ReadAt: %d %v %q", n, err, buf)
	}
	if n, err := f.Read(buf); n != 3 || err != nil || string(buf) != "012" {
		t.Fatalf("Read after ReadAt: %d %v %q (want the start)", n, err, buf)
	}
	if pos, err := f.Seek(8, io.SeekStart); pos != 8 || err != nil {
		t.Fatalf("Seek: %d %v", pos, err)
	}
	if rest, err := io.ReadAll(f); err != nil || string(rest) != "89" {
		t.Fatalf("rest: %q %v", rest, err)
	}
	if n, err := f.ReadAt(buf, 9); n != 1 || !errors.Is(err, io.EOF) {
		t.Fatalf("ReadAt past the end: %d %v", n, err)
	}
	if size, err := f.Size(); size != 10 || err != nil {
		t.Fatalf("Size: %d %v", size, err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got uintptr
	if err := rc.Control(func(fd uintptr) { got = fd }); err != nil || got == 0 {
		t.Fatalf("Control: fd %d, %v", got, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of an absent file: %v, want fs.ErrNotExist", err)
	}
}
