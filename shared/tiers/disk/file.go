package disk

import (
	"io"
	"syscall"
)

// file is an open tile file: read at offsets (a header, a body to verify
// or to hold), or from its position, which is where a body is sent from
// (net's sendfile reads from a syscall.Conn at its position).
type file interface {
	io.ReaderAt
	io.Reader
	io.Seeker
	io.Closer
	syscall.Conn
	size() (int64, error)
}
