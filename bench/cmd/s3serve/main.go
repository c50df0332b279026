// Command s3serve is the S3 endpoint of the process-level benchmarks: the
// product's in-process endpoint (shared/origin/s3local, SigV4 on, default local
// credentials) served on a loopback port, with the bucket "tiles" seeded from
// every file under -dir (object key = path relative to it). It prints
// "listening http://127.0.0.1:PORT" once the objects are in, and serves until
// SIGTERM.
//
// With -control it also answers, under /_s3serve/ (no bucket is named so),
// the fault controls a benchmark in another process needs:
//
//	POST /_s3serve/hang?match=SUBSTR&delay=DUR  GETs whose path contains SUBSTR wait DUR (or until their client goes away)
//	POST /_s3serve/reset                        every fault removed (the -latency stays)
//	GET  /_s3serve/stats                        {"in_flight": n, "peak_in_flight": n, "requests": n} of S3 requests since the last reset
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
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
	control := flag.Bool("control", false, "answer the fault controls under /_s3serve/")
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
	h := srv.Handler()
	if *control {
		h = newControl(srv, *latency, h)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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

// control serves the fault controls beside the endpoint and counts the S3
// requests it answers.
type control struct {
	srv     *s3local.Server
	latency time.Duration
	next    http.Handler

	inFlight, peak, requests atomic.Int64
}

func newControl(srv *s3local.Server, latency time.Duration, next http.Handler) *control {
	return &control{srv: srv, latency: latency, next: next}
}

func (c *control) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/_s3serve/") {
		c.requests.Add(1)
		n := c.inFlight.Add(1)
		for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
		}
		defer c.inFlight.Add(-1)
		c.next.ServeHTTP(w, r)
		return
	}
	switch {
	case r.URL.Path == "/_s3serve/hang" && r.Method == http.MethodPost:
		match := r.URL.Query().Get("match")
		d, err := time.ParseDuration(r.URL.Query().Get("delay"))
		if match == "" || err != nil || d <= 0 {
			http.Error(w, "want match=SUBSTR&delay=DURATION", http.StatusBadRequest)
			return
		}
		c.srv.Faults().Add(s3local.Fault{Match: s3local.MatchGet(match), Delay: d})
	case r.URL.Path == "/_s3serve/reset" && r.Method == http.MethodPost:
		c.srv.Faults().Reset()
		c.srv.Faults().SetLatency(c.latency)
		c.peak.Store(c.inFlight.Load())
		c.requests.Store(0)
	case r.URL.Path == "/_s3serve/stats" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int64{"in_flight": c.inFlight.Load(), "peak_in_flight": c.peak.Load(), "requests": c.requests.Load()})
		return
	default:
		http.Error(w, "unknown control", http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
