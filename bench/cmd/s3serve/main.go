// Command s3serve is the S3 endpoint of the process-level benchmarks: the
// product's in-process endpoint (shared/s3local, SigV4 on, default local
// credentials) served on a loopback port, with the bucket "tiles" seeded from
// every file under -dir (object key = path relative to it). It prints
// "listening http://127.0.0.1:PORT" once the objects are in, and serves until
// SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/shared/s3local"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "s3serve:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "directory to seed the bucket from")
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	bucket := flag.String("bucket", "tiles", "bucket name")
	latency := flag.Duration("latency", 0, "first-byte latency added to every response")
	flag.Parse()
	srv, err := s3local.New(s3local.Config{Buckets: []string{*bucket}})
	if err != nil {
		return err
	}
	srv.Faults().SetLatency(*latency)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	if *dir != "" {
		set, err := tileset.ReadDir(*dir)
		if err != nil {
			return err
		}
		if err := tileset.Seed(context.Background(), srv.Client(url), *bucket, "", set); err != nil {
			return err
		}
	}
	fmt.Printf("listening %s\n", url)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}
