// Command devstack is `make run`: the whole tilesieve loop on one machine,
// with no AWS account and no Docker. It starts an S3-compatible endpoint on
// 127.0.0.1:9000 seeded with a demo tileset, emulates S3 event notifications
// into the sync worker, and serves the tile function and a map viewer on
// 127.0.0.1:8080. See package stack.
//
// With -embedded=false it starts no endpoint and serves the tile function
// against the S3 the environment configures (AWS, LocalStack), as on Lambda.
// Only the flag does that: exported S3 variables never switch the embedded
// endpoint off.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tilesieve/tilesieve/infra/devstack/demotiles"
	"github.com/tilesieve/tilesieve/infra/devstack/stack"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
)

func main() {
	err := run()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2) // the flag package has printed the problem and the usage
	default:
		// Every error reaching here names its origin once ("devstack: ...").
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var errUsage = errors.New("devstack: usage")

func run() error {
	env := config.OS
	s3Port, err := envInt(env, "S3_LOCAL_PORT", 9000)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	embedded := fs.Bool("embedded", true, "start the embedded S3 endpoint and event notifications; false serves the S3 the environment configures (AWS_REGION, credentials, TILES_BUCKET, AWS_ENDPOINT_URL)")
	fs.IntVar(&s3Port, "s3-port", s3Port, "port of the embedded S3 endpoint on 127.0.0.1 (env S3_LOCAL_PORT; 0: any free port)")
	port := fs.Int("port", -1, "port of the tile function and viewer (default: PORT, or 8080; 0: any free port)")
	seed := fs.Bool("seed", false, "write the demo tileset at start (default: only into the embedded endpoint)")
	maxZoom := fs.Int("seed-zoom", demotiles.DefaultMaxZoom, "deepest zoom level of the demo tileset")
	var tiles tileFlags
	fs.Var(&tiles, "tiles", "load a tileset at start: a directory NAME of z/x/y.ext tiles, a NAME.pmtiles archive or a NAME.mbtiles database, served as /NAME/{z}/{x}/{y}.ext with TileJSON at /NAME.json; repeatable")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	seedSet := false
	fs.Visit(func(f *flag.Flag) { seedSet = seedSet || f.Name == "seed" })
	if !seedSet {
		// The embedded endpoint starts empty; a real bucket is seeded only
		// when asked.
		*seed = *embedded
	}

	addr := ""
	if *port == 0 {
		// PORT=0 is not a port the function could run on; the flag asks for
		// any free one (tests, a second stack beside a running one).
		addr = net.JoinHostPort(cmp.Or(strings.TrimSpace(env("LISTEN_ADDR")), "127.0.0.1"), "0")
	} else if *port > 0 {
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
		Embedded:    *embedded,
		Addr:        addr,
		S3Addr:      fmt.Sprintf("127.0.0.1:%d", s3Port),
		Seed:        *seed,
		SeedMaxZoom: *maxZoom,
		Tiles:       tiles,
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

// tileFlags collects the repeated -tiles flag.
type tileFlags []string

func (f *tileFlags) String() string { return strings.Join(*f, ",") }

func (f *tileFlags) Set(v string) error {
	if _, err := os.Stat(v); err != nil {
		return err
	}
	*f = append(*f, v)
	return nil
}

func envInt(env config.Env, name string, def int) (int, error) {
	v := env(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("devstack: %s=%q: want a port number", name, v)
	}
	return n, nil
}
