//go:build !linux

package main

import (
	"context"
	"net"
	"net/http"
)

// corked is h: TCP_CORK is Linux's.
func corked(h http.Handler) http.Handler { return h }

func connContext(ctx context.Context, _ net.Conn) context.Context { return ctx }
