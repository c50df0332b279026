package main

import (
	"context"
	"net"
	"net/http"
	"syscall"
)

// corked holds each answer of h back in the kernel (TCP_CORK) until it is
// written whole, then lets it go: its header and body leave in full
// segments, as nginx's tcp_nopush sends them. A disk hit's header is
// written on its own before its file is sent (disk.Body.SendTo); uncorked,
// it would be a segment of its own, and a wakeup of the client, for every
// answer: corked, disk hits cost 11% less server CPU each (38.8 against
// 43.7 µs, wrk -c 20 over 1,365 tiles of 20-46 KB), and memory hits the
// same within the noise. Connections without a descriptor (connContext
// found none) are served as they are.
func corked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fd, ok := r.Context().Value(connFD{}).(int)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		setCork(fd, 1)
		defer setCork(fd, 0) // also after a panic, which net/http recovers
		h.ServeHTTP(w, r)
		if f, ok := w.(http.Flusher); ok {
			f.Flush() // what net/http still buffers goes out with the rest
		}
	})
}

func setCork(fd, on int) { _ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_CORK, on) }

// connFD keys a connection's descriptor in its requests' contexts.
type connFD struct{}

// connContext is the local server's http.Server.ConnContext: it keeps a
// TCP connection's descriptor for corked, read once per connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return ctx
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return ctx
	}
	rc.Control(func(fd uintptr) { ctx = context.WithValue(ctx, connFD{}, int(fd)) })
	return ctx
}
