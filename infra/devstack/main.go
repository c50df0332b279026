// Command devstack is `make run`: the whole tilesieve loop on one machine,
// with no AWS account and no Docker. It starts an S3-compatible endpoint on
// 127.0.0.1:9000 seeded with a demo tileset, emulates S3 event notifications
// into the sync worker, and serves the tile function and a map viewer on
// 127.0.0.1:8080. See package stack.
//
// With AWS_ENDPOINT_URL or TILES_BUCKET set (or -embedded=false) it starts no
// endpoint and serves the tile function against that S3 (AWS, LocalStack),
// configured from the environment as on Lambda.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func run() error {
	env := config.OS
	embedded := stack.EmbeddedByDefault(env)
	s3Port, err := envInt(env, "S3_LOCAL_PORT", 9000)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	fs.BoolVar(&embedded, "embedded", embedded, "start the embedded S3 endpoint and event notifications (default: unless AWS_ENDPOINT_URL or TILES_BUCKET is set)")
	fs.IntVar(&s3Port, "s3-port", s3Port, "port of the embedded S3 endpoint on 127.0.0.1 (env S3_LOCAL_PORT)")
	port := fs.Int("port", 0, "port of the tile function and viewer (default: PORT, or 8080)")
	seed := fs.Bool("seed", false, "write the demo tileset at start (default: only into the embedded endpoint)")
	maxZoom := fs.Int("seed-zoom", demotiles.DefaultMaxZoom, "deepest zoom level of the demo tileset")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		// The embedded endpoint starts empty; a real bucket is seeded only
		// when asked.
		*seed = embedded
	}

	if *port != 0 {
		// -port stands for PORT: the configuration builds the address.
		base, p := env, strconv.Itoa(*port)
		env = func(k string) string {
			if k == "PORT" {
				return p
			}
			return base(k)
		}
	}
	level := obs.ParseLevel(env("LOG_LEVEL"))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	opts := stack.Options{
		Env:         env,
		Embedded:    embedded,
		S3Addr:      fmt.Sprintf("127.0.0.1:%d", s3Port),
		Seed:        *seed,
		SeedMaxZoom: *maxZoom,
		Logger:      log,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprint(os.Stdout, st.Banner())
	<-ctx.Done()
	stop() // a second Ctrl-C kills the process

	log.Info("stopping: delivering queued S3 events, then shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return st.Close(sctx)
}

func envInt(env config.Env, name string, def int) (int, error) {
	v := env(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("%s=%q: want a port number", name, v)
	}
	return n, nil
}
