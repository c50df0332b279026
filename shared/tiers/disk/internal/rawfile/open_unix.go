//go:build unix

package rawfile

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
)

// Open opens the file at path for reading. os.Open would offer it to the
// runtime's network poller (setting it non-blocking, an epoll_ctl that
// fails, setting it back: five system calls), and even os.NewFile asks its
// flags (one more), where a disk hit's open, header read, send and close
// are four in all.
func Open(path string) (File, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &rawFile{fd: fd}, nil
	}
}

// rawFile is an open file.
type rawFile struct{ fd int }

func (f *rawFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := syscall.Pread(f.fd, p[n:], off+int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return n, &fs.PathError{Op: "read", Err: err}
		case m == 0:
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f *rawFile) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(f.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Err: err}
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *rawFile) Seek(offset int64, whence int) (int64, error) {
	n, err := syscall.Seek(f.fd, offset, whence)
	if err != nil {
		return 0, &fs.PathError{Op: "seek", Err: err}
	}
	return n, nil
}

func (f *rawFile) Size() (int64, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Err: err}
	}
	return st.Size, nil
}

func (f *rawFile) Close() error {
	if err := syscall.Close(f.fd); err != nil {
		return &fs.PathError{Op: "close", Err: err}
	}
	return nil
}

// SyscallConn hands the descriptor to what sends from it: net's sendfile
// takes any syscall.Conn.
func (f *rawFile) SyscallConn() (syscall.RawConn, error) { return rawConn{f.fd}, nil }

// rawConn is a descriptor as a syscall.RawConn: a regular file never
// blocks, so every call is made at once.
type rawConn struct{ fd int }

func (c rawConn) Control(fn func(fd uintptr)) error { fn(uintptr(c.fd)); return nil }

func (c rawConn) Read(fn func(fd uintptr) bool) error {
	for !fn(uintptr(c.fd)) {
	}
	return nil
}

func (c rawConn) Write(fn func(fd uintptr) bool) error {
	for !fn(uintptr(c.fd)) {
	}
	return nil
}
