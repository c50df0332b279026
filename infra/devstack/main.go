// Command devstack is `make run`: the whole tilesieve loop on one machine,
// with no AWS account and no Docker. It starts an S3-compatible endpoint on
// 127.0.0.1:9000 seeded with a demo tileset and a demo IIIF image, emulates
// S3 event notifications into the sync worker, and serves the tile function,
// a map viewer and an IIIF viewer on 127.0.0.1:8080. See package stack.
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
	"io"
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
	err := run(os.Args[1:], config.OS, os.Stdout, os.Stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2) // the problem and the usage are printed
	default:
		// Every error reaching here names its origin once ("devstack: ...").
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

var errUsage = errors.New("devstack: usage")

func run(args []string, env config.Env, stdout, stderr io.Writer) error {
	f, err := parseArgs(args, env, stdout, stderr)
	if err != nil {
		return err
	}
	addr := ""
	if f.portSet && f.port == 0 {
		// PORT=0 is not a port the function could run on; the flag asks for
		// any free one (tests, a second stack beside a running one).
		addr = net.JoinHostPort(cmp.Or(strings.TrimSpace(env("LISTEN_ADDR")), "127.0.0.1"), "0")
	} else if f.portSet {
		// -port stands for PORT: the configuration builds the address.
		base, p := env, strconv.Itoa(f.port)
		env = func(k string) string {
			if k == "PORT" {
				return p
			}
			return base(k)
		}
	}
	level := obs.ParseLevel(env("LOG_LEVEL"))
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	opts := stack.Options{
		Env:         env,
		Embedded:    f.embedded,
		Addr:        addr,
		S3Addr:      fmt.Sprintf("127.0.0.1:%d", f.s3Port),
		Seed:        f.seed,
		SeedMaxZoom: f.seedZoom,
		Tiles:       f.tiles,
		Logger:      log,
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := stack.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, st.Banner())
	<-ctx.Done()
	stop() // a second Ctrl-C kills the process

	log.Info("stopping: delivering queued S3 events, then shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return st.Close(sctx)
}

// flags are the command line, read.
type flags struct {
	embedded, seed bool
	s3Port, port   int
	portSet        bool // -port was given; else PORT and LISTEN_ADDR decide
	seedZoom       int
	tiles          tileFlags
}

const usageHead = `usage: make run ARGS='[flags]'
       devstack [flags]              (built by make run as build/devstack)

devstack runs the whole tilesieve loop on this machine, with no AWS account
and no Docker: an embedded S3 endpoint seeded with a demo tileset and a demo
IIIF image, S3 event notifications delivered to the sync worker, and the tile
function with a map viewer and an IIIF viewer. With -embedded=false it serves
the S3 the environment configures (TILES_BUCKET, AWS_REGION, credentials,
AWS_ENDPOINT_URL) instead. It prints where everything is, and commands to
watch a purge go through; Ctrl-C stops it.

Flags:
`

// parseArgs reads the command line. -h, --help and help print the usage on
// stdout (flag.ErrHelp); a bad flag or argument prints the problem and the
// usage on stderr (errUsage). Each flag's default is printed as it is:
// from its variable, when that is set.
func parseArgs(args []string, env config.Env, stdout, stderr io.Writer) (flags, error) {
	var f flags
	var err error
	if f.s3Port, err = envInt(env, "S3_LOCAL_PORT", 9000); err != nil {
		return f, err
	}
	if f.port, err = envInt(env, "PORT", defaultPort()); err != nil || f.port == 0 {
		f.port = defaultPort() // the configuration reports a bad PORT
	}
	fs := flag.NewFlagSet("devstack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // printed below, where it belongs
	usage := func(w io.Writer) {
		fmt.Fprint(w, usageHead)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	fs.BoolVar(&f.embedded, "embedded", true, "start the embedded S3 endpoint and event notifications; false serves the S3 the environment configures (AWS_REGION, credentials, TILES_BUCKET, AWS_ENDPOINT_URL)")
	fs.IntVar(&f.s3Port, "s3-port", f.s3Port, "port of the embedded S3 endpoint on 127.0.0.1 (env S3_LOCAL_PORT; 0: any free port)")
	fs.IntVar(&f.port, "port", f.port, "port of the tile function and the viewer on LISTEN_ADDR (env PORT; 0: any free port)")
	fs.BoolVar(&f.seed, "seed", false, "write the demo tileset at start (default: true with the embedded S3, false with -embedded=false)")
	fs.IntVar(&f.seedZoom, "seed-zoom", demotiles.DefaultMaxZoom, "deepest zoom level of the demo tileset")
	fs.Var(&f.tiles, "tiles", "load a tileset or an image at start: a directory NAME of z/x/y.ext tiles, a NAME.pmtiles archive or a NAME.mbtiles database, served as /NAME/{z}/{x}/{y}.ext with TileJSON at /NAME.json, or a NAME.tif image, served as IIIF at /iiif/3/NAME/info.json and, georeferenced (a COG), as the tileset NAME too; repeatable")
	err = fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp), err == nil && fs.NArg() == 1 && fs.Arg(0) == "help":
		usage(stdout)
		return f, flag.ErrHelp
	case err == nil && fs.NArg() > 0:
		fmt.Fprintf(stderr, "devstack: unexpected argument %q\n", fs.Arg(0))
		fallthrough
	case err != nil:
		usage(stderr)
		return f, errUsage
	}
	seedSet := false
	fs.Visit(func(fl *flag.Flag) {
		f.portSet = f.portSet || fl.Name == "port"
		seedSet = seedSet || fl.Name == "seed"
	})
	if !seedSet {
		// The embedded endpoint starts empty; a real bucket is seeded only
		// when asked.
		f.seed = f.embedded
	}
	return f, nil
}

// defaultPort is PORT's default, as the tile function reads it.
func defaultPort() int {
	for _, v := range config.TilesVars() {
		if v.Name == "PORT" {
			if p, err := strconv.Atoi(v.Default); err == nil {
				return p
			}
		}
	}
	panic("devstack: the tile function has no numeric PORT default")
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
