// Command tilesieve is the operator's tool.
//
//	tilesieve upload [-concurrency N] [-quiet] [-to-pmtiles] PATH s3://bucket/prefix/NAME
//	tilesieve check s3://bucket[/JOURNAL_PREFIX]
//
// upload puts a tile directory, a PMTiles archive or an MBTiles database
// into S3 the way the tile function serves it: PATH is a directory of
// z/x/y.ext tiles (plus an optional metadata.json and a MapLibre style with
// its sprites and fonts), uploaded under prefix/NAME/, a .pmtiles file,
// uploaded as prefix/NAME.pmtiles, or a .mbtiles file, checked to open as an
// MBTiles database and uploaded as prefix/NAME.mbtiles. With -to-pmtiles a
// database, or a directory's tiles and metadata.json, is converted to a
// PMTiles archive first and uploaded as prefix/NAME.pmtiles.
//
// check tells whether the bucket honours conditional writes (If-None-Match:
// * and If-Match on PUT), which the purge journal needs, by the probe the
// sync worker runs before its first append: three PUTs of one small object,
// JOURNAL_PREFIX/probe.json (default _tilesieve/journal/). It exits 0 when
// the store honours them, 1 when it does not or cannot be asked, 2 on bad
// usage.
//
// AWS credentials and region come from the standard chain (environment,
// shared config, SSO, instance role); AWS_ENDPOINT_URL and
// S3_FORCE_PATH_STYLE point it at LocalStack or another S3-compatible
// endpoint.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/tilesieve/tilesieve/infra/tilesieve/upload"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], config.OS, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

var usage = uploadUsage + "\n" + checkUsage

const uploadUsage = `usage: tilesieve upload [-concurrency N] [-quiet] [-to-pmtiles] PATH s3://bucket/prefix/NAME

PATH is a directory of z/x/y.ext tiles (and an optional metadata.json,
style.json, sprite[@2x].{json,png} and fonts/STACK/START-END.pbf),
uploaded under prefix/NAME/, a .pmtiles archive, uploaded as
prefix/NAME.pmtiles, or a .mbtiles database, uploaded as
prefix/NAME.mbtiles. With -to-pmtiles a .mbtiles database, or the tiles
and metadata.json of a directory, is converted to one PMTiles archive
(in the system's temporary directory) and uploaded as prefix/NAME.pmtiles
instead. Files already in the bucket with the same size and SHA-256 are
skipped.
`

var checkUsage = `usage: tilesieve check s3://bucket[/JOURNAL_PREFIX]

Checks that the bucket honours conditional writes (If-None-Match: * and
If-Match on PUT), which the purge journal needs, with the probe the sync
worker runs: three PUTs of JOURNAL_PREFIX/probe.json (default
` + defaultJournalPrefix() + `). Exit 0: honoured; 1: not honoured, or the
check failed; 2: bad usage.
`

// defaultJournalPrefix is JOURNAL_PREFIX's default, as the worker reads it.
func defaultJournalPrefix() string {
	for _, v := range config.WorkerVars() {
		if v.Name == "JOURNAL_PREFIX" {
			return v.Default
		}
	}
	panic("tilesieve: the worker has no JOURNAL_PREFIX setting")
}

// run is main without the process: exit code 0 on success, 1 when the
// command failed (files not uploaded, a store that breaks the journal), 2
// on bad usage.
func run(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "upload":
		return runUpload(ctx, args[1:], env, stdout, stderr)
	case "check":
		return runCheck(ctx, args[1:], env, stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return 2
}

// s3Client builds the S3 client as the functions do: the SDK's default
// chain with the region, endpoint and path style of env applied. The code
// is 0, or the exit code of a failure (reported on stderr).
func s3Client(ctx context.Context, env config.Env, bucket string, stderr io.Writer) (*origin.Client, int) {
	s3cfg, err := config.LoadS3(env)
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		return nil, 2
	}
	oc, err := origin.New(ctx, origin.Config{Bucket: bucket, Region: s3cfg.Region, Endpoint: s3cfg.Endpoint, PathStyle: s3cfg.PathStyle})
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		return nil, 1
	}
	return oc, 0
}

func runUpload(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, uploadUsage); fs.PrintDefaults() }
	concurrency := fs.Int("concurrency", upload.DefaultConcurrency, "files uploaded at once")
	quiet := fs.Bool("quiet", false, "no progress lines")
	gz := fs.Bool("gzip", true, "store uncompressed vector tiles (.pbf, .mvt) gzip-compressed: CloudFront does not compress them")
	toPMTiles := fs.Bool("to-pmtiles", false, "convert a .mbtiles database, or a directory's tiles and metadata.json, to NAME.pmtiles and upload that")
	if err := fs.Parse(args); err != nil {
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
	oc, code := s3Client(ctx, env, dst.Bucket, stderr)
	if code != 0 {
		return code
	}
	opts := upload.Options{Concurrency: *concurrency, GzipVectorTiles: *gz, ToPMTiles: *toPMTiles}
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
	if c := rep.Converted; c != nil {
		fmt.Fprintf(w, "%s: converted to PMTiles: %d tiles, %d distinct, %d bytes\n", c.Source, c.Stats.Tiles, c.Stats.Contents, c.Stats.Bytes)
	}
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

func runCheck(ctx context.Context, args []string, env config.Env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, checkUsage) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	bucket, prefix, err := parseJournalURL(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "tilesieve:", err)
		return 2
	}
	oc, code := s3Client(ctx, env, bucket, stderr)
	if code != 0 {
		return code
	}
	j := journal.New(oc.S3(), bucket, prefix, journal.Options{})
	where := "s3://" + bucket + "/" + prefix
	fmt.Fprintf(stdout, "%s: checking that the bucket honours conditional writes on PUT (If-None-Match: * and If-Match)\n", where)
	steps, err := j.Probe(ctx)
	for _, st := range steps {
		verdict := "ok"
		if !st.OK {
			verdict = "WRONG, want " + st.Want
		}
		got := fmt.Sprintf("%d %s", st.Status, http.StatusText(st.Status))
		if st.Status < 0 {
			got = "no answer"
		}
		fmt.Fprintf(stdout, "  %s: %s: %s\n", st.Request, got, verdict)
	}
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "%s: honours conditional writes: the purge journal can be kept here\n", where)
		return 0
	case errors.Is(err, journal.ErrNoConditionalWrites):
		fmt.Fprintf(stdout, "%s: does NOT honour conditional writes: the sync worker would refuse to record purges here (%v)\n", where, err)
		return 1
	default:
		fmt.Fprintf(stdout, "%s: could not check: %v\n", where, err)
		return 1
	}
}

// parseJournalURL reads s3://bucket[/JOURNAL_PREFIX]; the prefix defaults
// to JOURNAL_PREFIX's default and always ends in "/".
func parseJournalURL(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("%q: want s3://bucket[/JOURNAL_PREFIX]", s)
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix == "" {
		return u.Host, defaultJournalPrefix(), nil
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return u.Host, prefix, nil
}
