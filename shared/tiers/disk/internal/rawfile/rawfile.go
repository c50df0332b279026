// Package rawfile opens the disk tier's tile files for reading with as few
// system calls as a disk hit can take: on Unix a bare descriptor read with
// system calls of its own, not an *os.File (which offers a file to the
// runtime's network poller, asks its flags and sets a finalizer). A File is
// read at offsets (a header, a body to verify or to hold) or from its
// position, which is where a body is sent from: net's sendfile reads from
// any syscall.Conn at its position.
//
// A File is not for concurrent use, and must be closed: it has no
// finalizer.
package rawfile

import (
	"io"
	"syscall"
)

// File is an open file.
type File interface {
	io.ReaderAt
	io.Reader
	io.Seeker
	io.Closer
	syscall.Conn
	// Size is the file's length.
	Size() (int64, error)
}
