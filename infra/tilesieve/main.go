// Command tilesieve is the operator's tool.
//
//	tilesieve upload [-concurrency N] [-gzip=false] [-quiet] [-to-pmtiles] PATH s3://bucket/prefix/NAME
//	tilesieve rm s3://bucket/KEY...
//	tilesieve check s3://bucket[/JOURNAL_PREFIX]
//	tilesieve help [COMMAND]
//
// upload puts a tile directory, a PMTiles archive, an MBTiles database or a
// TIFF into S3 the way the tile function serves it: PATH is a directory of
// z/x/y.ext tiles (plus an optional metadata.json and a MapLibre style with
// its sprites and fonts), uploaded under prefix/NAME/, a .pmtiles file,
// uploaded as prefix/NAME.pmtiles, a .mbtiles file, checked to open as an
// MBTiles database and uploaded as prefix/NAME.mbtiles, or a .tif file,
// checked to be tiled, pyramidal and (when georeferenced) in a served
// coordinate reference system, and uploaded as prefix/NAME.tif. With -to-pmtiles a
// database, or a directory's tiles and metadata.json, is converted to a
// PMTiles archive first and uploaded as prefix/NAME.pmtiles.
//
// rm deletes objects (a tile, an archive), whose deletion the sync worker
// then purges as it purges an upload.
//
// check tells whether the bucket honours conditional writes (If-None-Match:
// * and If-Match on PUT), which the purge journal needs, by the probe the
// sync worker runs before its first append: three PUTs of one small object,
// JOURNAL_PREFIX/probe.json (default _tilesieve/journal/).
//
// Every command exits 0 on success, 1 when it failed (files not uploaded,
// a store that breaks the journal, no region or credentials), 2 on bad
// usage; -h, --help and help print the usage on stdout and exit 0.
//
// AWS credentials and region come from the standard chain (environment,
// shared config, SSO, instance role on EC2); AWS_ENDPOINT_URL and
// S3_FORCE_PATH_STYLE point it at LocalStack or another S3-compatible
// endpoint.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], config.OS, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cmdIO is what a command runs with.
type cmdIO struct {
	env            config.Env
	stdout, stderr io.Writer
}

// command is one subcommand. setup defines its flags on fs and returns
// what runs it on the arguments left after them.
type command struct {
	name    string
	args    string // its arguments after the flags, as the usage line shows them
	nargs   int    // how many; -1 for one or more
	summary string // one line for the overview
	about   string // the rest of its help, after the usage line
	setup   func(fs *flag.FlagSet) func(ctx context.Context, args []string, c cmdIO) int
}

// commands lists the subcommands in the order the overview shows them.
func commands() []command { return []command{uploadCommand(), rmCommand(), checkCommand()} }

// run is main without the process; it returns the exit code.
func run(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, overview())
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			fmt.Fprint(stdout, overview())
			return 0
		}
		if cmd, ok := lookup(args[1]); ok && len(args) == 2 {
			fmt.Fprint(stdout, cmd.help())
			return 0
		}
		fmt.Fprint(stderr, overview())
		return 2
	}
	cmd, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "tilesieve: unknown command %q\n\n%s", args[0], overview())
		return 2
	}
	return cmd.run(ctx, args[1:], cmdIO{env: env, stdout: stdout, stderr: stderr})
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// overview is the help of the whole command.
func overview() string {
	var b strings.Builder
	b.WriteString("tilesieve is the operator's command: it puts tilesets into S3 the way the\ntile function serves them, deletes objects, and checks a bucket.\n\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "%s\n    %s\n", c.synopsis(), c.summary)
	}
	b.WriteString("\n'tilesieve help COMMAND' (or 'tilesieve COMMAND -h') tells more of a command.\n\n" + awsHelp)
	return b.String()
}

// awsHelp says where every command finds S3.
const awsHelp = `AWS credentials and the region come from the environment as for any AWS tool
(AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE);
AWS_ENDPOINT_URL and S3_FORCE_PATH_STYLE=true point at LocalStack or the
embedded S3 of make run.
`

// flags is a fresh flag set of c, with what runs c.
func (c command) flags() (*flag.FlagSet, func(context.Context, []string, cmdIO) int) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Usage = func() {} // run prints the help where it belongs
	return fs, c.setup(fs)
}

// synopsis is c's usage line, every flag shown as it is set: [-quiet],
// [-gzip=false] for one on by default, [-concurrency N].
func (c command) synopsis() string {
	fs, _ := c.flags()
	var b strings.Builder
	b.WriteString("usage: tilesieve " + c.name)
	fs.VisitAll(func(f *flag.Flag) {
		arg, _ := flag.UnquoteUsage(f)
		switch bf, ok := f.Value.(interface{ IsBoolFlag() bool }); {
		case ok && bf.IsBoolFlag() && f.DefValue == "true":
			fmt.Fprintf(&b, " [-%s=false]", f.Name)
		case ok && bf.IsBoolFlag():
			fmt.Fprintf(&b, " [-%s]", f.Name)
		default:
			fmt.Fprintf(&b, " [-%s %s]", f.Name, arg)
		}
	})
	return b.String() + " " + c.args
}

// help is c's whole help: usage line, description, flags.
func (c command) help() string {
	fs, _ := c.flags()
	var b strings.Builder
	b.WriteString(c.synopsis() + "\n\n" + c.about)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
	}
	return b.String()
}

// run parses c's flags and arguments and runs it: -h prints its help on
// stdout (exit 0), a bad flag or argument count the problem and the help
// on stderr (exit 2).
func (c command) run(ctx context.Context, args []string, cio cmdIO) int {
	fs, runCmd := c.flags()
	fs.SetOutput(cio.stderr) // the flag package's own line about a bad flag
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(cio.stdout, c.help())
			return 0
		}
		fmt.Fprint(cio.stderr, c.help())
		return 2
	}
	if n := fs.NArg(); n == 0 || c.nargs >= 0 && n != c.nargs {
		fmt.Fprint(cio.stderr, c.help())
		return 2
	}
	return runCmd(ctx, fs.Args(), cio)
}

// s3Client builds the S3 client as the functions do: the SDK's default
// chain with the region, endpoint and path style of env applied. A region
// or credentials missing are said up front, on one line naming what to
// set, instead of by the SDK's first request. The code is 0, or the exit
// code of a failure (reported on stderr).
func s3Client(ctx context.Context, c cmdIO, bucket string) (*origin.Client, int) {
	s3cfg, err := config.LoadS3(c.env)
	if err != nil {
		fmt.Fprintln(c.stderr, "tilesieve:", err)
		return nil, 2
	}
	oc, err := origin.New(ctx, origin.Config{Bucket: bucket, Region: s3cfg.Region, Endpoint: s3cfg.Endpoint, PathStyle: s3cfg.PathStyle})
	if err != nil {
		fmt.Fprintln(c.stderr, "tilesieve:", err)
		return nil, 1
	}
	opts := oc.S3().Options()
	var inc *awsclient.IncompleteError
	if err := awsclient.Check(ctx, opts.Region, opts.Credentials); errors.As(err, &inc) {
		them := "it"
		if len(inc.Missing) > 1 {
			them = "them"
		}
		fmt.Fprintf(c.stderr, "tilesieve: %s: set %s in the environment\n", strings.Join(inc.Missing, " and "), them)
		return nil, 1
	}
	return oc, 0
}
