package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tilesieve/tilesieve/infra/tilesieve/upload"
)

func uploadCommand() command {
	return command{
		name:    "upload",
		args:    "PATH s3://bucket/prefix/NAME",
		nargs:   2,
		summary: "Upload tiles, a .pmtiles archive, a .mbtiles database or a .tif image as NAME.",
		about: `PATH is a directory of z/x/y.ext tiles (and an optional metadata.json,
style.json, sprite[@2x].{json,png} and fonts/STACK/START-END.pbf),
uploaded under prefix/NAME/, a .pmtiles archive, uploaded as
prefix/NAME.pmtiles, a .mbtiles database, uploaded as
prefix/NAME.mbtiles, or a .tif (.tiff) image, uploaded as prefix/NAME.tif (.tiff):
the IIIF image NAME (its key under TILES_PREFIX without .tif) and, at the
top level of TILES_PREFIX, the map tileset NAME when it is georeferenced.
Archives, databases and images are checked before anything is sent: a
TIFF must be tiled and pyramidal (vips tiffsave --tile --pyramid, or
gdal_translate -of COG), and a georeferenced one in EPSG:3857, EPSG:4326
or a WGS 84 UTM zone (else gdalwarp -t_srs EPSG:3857); the refusal says
what to run. With -to-pmtiles a .mbtiles database, or the tiles and
metadata.json of a directory, is converted to one PMTiles archive (in the
system's temporary directory) and uploaded as prefix/NAME.pmtiles
instead. Files already in the bucket with the same size and SHA-256 are
skipped. Progress goes to stderr, the summary to stdout; an error that
stops the upload before any file is counted is printed instead of it.
`,
		setup: func(fs *flag.FlagSet) func(context.Context, []string, cmdIO) int {
			opts := upload.Options{}
			fs.IntVar(&opts.Concurrency, "concurrency", upload.DefaultConcurrency, "`N` files uploaded at once")
			quiet := fs.Bool("quiet", false, "no progress lines")
			fs.BoolVar(&opts.GzipVectorTiles, "gzip", true, "store uncompressed vector tiles (.pbf, .mvt) gzip-compressed: CloudFront does not compress them")
			fs.BoolVar(&opts.ToPMTiles, "to-pmtiles", false, "convert a .mbtiles database, or a directory's tiles and metadata.json, to NAME.pmtiles and upload that")
			return func(ctx context.Context, args []string, c cmdIO) int {
				if !*quiet {
					opts.Progress = c.stderr
				}
				return runUpload(ctx, args[0], args[1], opts, c)
			}
		},
	}
}

func runUpload(ctx context.Context, src, to string, opts upload.Options, c cmdIO) int {
	dst, err := upload.ParseDestination(to)
	if err != nil {
		fmt.Fprintln(c.stderr, "tilesieve:", err)
		return 2
	}
	oc, code := s3Client(ctx, c, dst.Bucket)
	if code != 0 {
		return code
	}
	opts.NoFinalProgress = true // the summary below says it once
	rep, err := upload.Run(ctx, oc.S3(), src, dst, opts)
	switch {
	case err != nil && rep.Uploaded+rep.Skipped+rep.Failed == 0:
		// Nothing was counted: the error is the whole story.
		fmt.Fprintln(c.stderr, "tilesieve:", err)
	case err != nil && rep.Failed == 0:
		// Stopped part way: what was done, then why it stopped.
		printReport(c.stdout, dst, rep)
		fmt.Fprintln(c.stderr, "tilesieve:", err)
	default:
		// The summary lists the failures, which are all of err.
		printReport(c.stdout, dst, rep)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, upload.ErrSource), errors.Is(err, upload.ErrDestination):
		return 2
	}
	return 1
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
	if n := rep.Failed - len(rep.Failures); n > 0 {
		fmt.Fprintf(w, "  and %d more failed\n", n)
	}
}
