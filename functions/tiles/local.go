package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// localHandler is what the local server runs for each request: h behind
// withRecover, its answers corked. Not behind withDeadlineMargin: that
// margin is kept back from a Lambda invocation's deadline, and net/http
// gives a request none (the server's WriteTimeout bounds the answer
// instead), so off Lambda it would only cost a context lookup per request,
// or cut short a deadline a caller of its own set.
func localHandler(h http.Handler, log *slog.Logger) http.Handler {
	return corked(withRecover(h, log))
}

// serve runs the handler as a plain HTTP server until ctx ends, then drains.
func serve(ctx context.Context, addr string, h http.Handler, writeTimeout time.Duration, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       120 * time.Second,
		ConnContext:       connContext,
	}
	log.Info("listening", "addr", "http://"+ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
