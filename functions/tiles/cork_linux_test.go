package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
)

// TestCorked: an answer is written with its connection corked, and the
// connection is uncorked once it is written, a panic included.
func TestCorked(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	ctx := connContext(context.Background(), server)
	fd, ok := ctx.Value(connFD{}).(int)
	if !ok {
		t.Fatal("connContext kept no descriptor")
	}
	cork := func() int {
		v, err := syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_CORK)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var during int
	h := corked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during = cork()
		if r.URL.Path == "/panic" {
			panic(http.ErrAbortHandler)
		}
	}))
	for _, path := range []string{"/", "/panic"} {
		func() {
			defer func() { recover() }()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil).WithContext(ctx))
		}()
		if during != 1 || cork() != 0 {
			t.Errorf("%s: corked while answering %d, after %d; want 1, 0", path, during, cork())
		}
	}
}
