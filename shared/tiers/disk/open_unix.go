//go:build unix

package disk

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openRead opens the file at path for reading, as os.Open does but without
// offering it to the runtime's network poller: a regular file never is
// pollable, and os.Open's attempt (setting the file non-blocking, an
// epoll_ctl that fails, setting it back) costs five system calls on every
// open, where os.NewFile over the opened descriptor makes one (F_GETFL).
func openRead(path string) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
