// Command tilesieve is the operator's tool. Its one subcommand, upload, puts
// a tile directory or a PMTiles archive into S3 the way the tile function
// serves it:
//
//	tilesieve upload [-concurrency N] [-quiet] PATH s3://bucket/prefix/NAME
//
// PATH is a directory of z/x/y.ext tiles (plus an optional metadata.json),
// uploaded under prefix/NAME/, or a .pmtiles file, uploaded as
// prefix/NAME.pmtiles. AWS credentials and region come from the standard
// chain (environment, shared config, SSO, instance role); AWS_ENDPOINT_URL
// and S3_FORCE_PATH_STYLE point it at LocalStack or another S3-compatible
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
	"sort"
	"strings"
	"syscall"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/upload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], config.OS, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: tilesieve upload [-concurrency N] [-quiet] PATH s3://bucket/prefix/NAME

PATH is a directory of z/x/y.ext tiles (and an optional metadata.json),
uploaded under prefix/NAME/, or a .pmtiles archive, uploaded as
prefix/NAME.pmtiles. Files already in the bucket with the same size and
SHA-256 are skipped.
`

// run is main without the process: exit code 0 on success, 1 when files
// failed, 2 on bad usage.
func run(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "upload" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	concurrency := fs.Int("concurrency", upload.DefaultConcurrency, "files uploaded at once")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	src := fs.Arg(0)
	dst, err := upload.ParseDestination(fs.Arg(1))
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		return 2
	}
	s3cfg, err := config.LoadS3(env)
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		return 2
	}
	// The origin client builds the S3 client as the functions do: the SDK's
	// default chain with the region, endpoint and path style applied.
	oc, err := origin.New(ctx, origin.Config{Bucket: dst.Bucket, Region: s3cfg.Region, Endpoint: s3cfg.Endpoint, PathStyle: s3cfg.PathStyle})
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		return 1
	}
	opts := upload.Options{Concurrency: *concurrency}
	if !*quiet {
		opts.Progress = stderr
	}
	rep, err := upload.Run(ctx, oc.S3(), src, dst, opts)
	printReport(stdout, dst, rep)
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		if errors.Is(err, upload.ErrSource) || errors.Is(err, upload.ErrDestination) {
			return 2
		}
		return 1
	}
	return 0
}

func printReport(w io.Writer, dst upload.Destination, rep upload.Report) {
	fmt.Fprintf(w, "%s: %d uploaded (%d bytes), %d skipped, %d failed\n", dst, rep.Uploaded, rep.UploadedBytes, rep.Skipped, rep.Failed)
	reasons := make([]string, 0, len(rep.Skips))
	for r := range rep.Skips {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  skipped %d: %s (e.g. %s)\n", rep.Skips[r], r, strings.Join(rep.SkipExamples[r], ", "))
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "  failed: %s: %v\n", f.Path, f.Err)
	}
}
