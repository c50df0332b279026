// Package upload puts a user's tiles into S3 the way tilesieve serves them:
// a directory of z/x/y.ext tiles (plus an optional metadata.json, and a
// MapLibre style with its sprites and glyphs) under NAME/, a PMTiles archive
// as NAME.pmtiles, an MBTiles database as NAME.mbtiles, or a TIFF as
// NAME.tif (an IIIF image, and at the top level of TILES_PREFIX a map
// tileset too when it is georeferenced). The upload command and the local
// stack both call Run, so tiles reach the bucket one way.
//
// What it promises:
//
//   - A .pmtiles file is validated before anything is sent, as the tile
//     function validates it when it opens it (header, sections inside the
//     file, root directory and its entries) and every leaf directory as
//     well, so an archive the server would refuse is never uploaded.
//   - A .tif or .tiff file is validated likewise: tiled and pyramidal, in
//     a compression the server decodes, and, when georeferenced, in a
//     coordinate reference system the map view serves; the refusal says
//     what to run (vips tiffsave, gdal_translate -of COG, gdalwarp).
//   - With Options.ToPMTiles an MBTiles database, or a directory's tiles
//     and metadata.json, is converted (package pmwrite) into one archive
//     in a temporary file, validated as above and uploaded as
//     NAME.pmtiles; input it cannot convert (two tile formats, two tile
//     compressions, bad metadata) is an ErrSource before anything is sent,
//     and the temporary file is removed either way.
//   - A bad PATH or s3:// URL is an error matching ErrSource or
//     ErrDestination whose text names the problem once.
//   - Content-Type comes from the extension; Content-Encoding is gzip exactly
//     when the bytes start with the gzip magic, whatever the extension says.
//   - An object already there with the same size, SHA-256 (kept in the
//     object's metadata as x-amz-meta-sha256, since multipart ETags are not
//     MD5s), Content-Type and Content-Encoding is skipped, so a second run
//     uploads nothing and a changed file is uploaded again.
//   - Files upload concurrently; progress lines go to a writer at most once
//     per interval; the Report counts uploaded, skipped (by reason) and
//     failed files, and Run's error names the failures.
package upload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/tilesieve/tilesieve/shared/docs/glyphs"
	"github.com/tilesieve/tilesieve/shared/docs/style"
	"github.com/tilesieve/tilesieve/shared/formats/mbtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/transfer"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tilename"
)

// ErrSource is a PATH that cannot be uploaded; ErrDestination an s3:// URL
// that cannot be parsed. Errors match them with errors.Is; their text says
// what is wrong without repeating the sentinel's.
var (
	ErrSource      = errors.New("upload: bad source")
	ErrDestination = errors.New("upload: bad destination")
)

// inputError is an ErrSource or ErrDestination whose message is its own:
// "upload: ", what is wrong, then the cause, each said once.
type inputError struct {
	sentinel error
	msg      string
	cause    error
}

func badSource(cause error, format string, args ...any) error {
	return &inputError{sentinel: ErrSource, msg: fmt.Sprintf(format, args...), cause: cause}
}

func badDestination(format string, args ...any) error {
	return &inputError{sentinel: ErrDestination, msg: fmt.Sprintf(format, args...)}
}

func (e *inputError) Error() string {
	switch {
	case e.cause == nil:
		return "upload: " + e.msg
	case e.msg == "":
		return "upload: " + e.cause.Error()
	}
	return "upload: " + e.msg + ": " + e.cause.Error()
}

func (e *inputError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// MetaSHA256 is the user-metadata key (x-amz-meta-sha256) that holds the hex
// SHA-256 of an uploaded object.
const MetaSHA256 = "sha256"

// Skip reasons, the keys of Report.Skips.
const (
	SkipUnchanged = "already in the bucket with the same size, SHA-256 and headers"
	SkipNotTile   = "not a z/x/y.ext tile of a known format, metadata.json, style.json, a sprite or a glyph range"
)

// Destination is where Run puts a tileset: Bucket, then Prefix ("" or ending
// in /), then NAME/... for a directory, NAME.pmtiles for an archive,
// NAME.mbtiles for a database or NAME.tif (.tiff) for a TIFF.
type Destination struct {
	Bucket, Prefix, Name string
}

func (d Destination) String() string { return "s3://" + d.Bucket + "/" + d.Prefix + d.Name }

// ParseDestination reads s3://bucket/prefix/NAME (the prefix may be empty or
// several segments; a trailing .pmtiles, .mbtiles, .tif or .tiff on NAME is
// dropped).
func ParseDestination(s string) (Destination, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Destination{}, badDestination("%q: want s3://bucket/prefix/NAME", s)
	}
	key := strings.TrimPrefix(u.Path, "/")
	key = strings.TrimSuffix(key, "/")
	key = tilename.TrimArchiveExt(key)
	if key == "" {
		return Destination{}, badDestination("%q: no tileset NAME after the bucket", s)
	}
	if err := tile.ValidateKey(key); err != nil {
		return Destination{}, badDestination("%q: %v", s, err)
	}
	d := Destination{Bucket: u.Host, Name: key}
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		d.Prefix, d.Name = key[:i+1], key[i+1:]
	}
	return d, nil
}

// ContentType is the Content-Type of a file by its extension (without the
// dot, any case), "" for an extension tilesieve does not serve.
func ContentType(ext string) string {
	switch strings.ToLower(ext) {
	case "pmtiles":
		return "application/vnd.pmtiles"
	case "mbtiles":
		return "application/vnd.sqlite3"
	case "tif", "tiff":
		return "image/tiff"
	}
	return tile.ContentTypeOfExt(ext)
}

// IsGzip reports whether b starts with the gzip magic.
func IsGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Defaults of Options.
const (
	DefaultConcurrency   = 16
	DefaultProgressEvery = time.Second
)

// Options tune Run. Zero values take the defaults.
type Options struct {
	Concurrency   int              // files in flight
	Progress      io.Writer        // progress lines; nil for none
	ProgressEvery time.Duration    // at most one progress line per interval
	Now           func() time.Time // the progress clock; default time.Now
	PartSize      int64            // multipart part size; default the uploader's (5 MiB)
	// GzipVectorTiles stores vector tiles (.pbf, .mvt; not glyph ranges)
	// that are not compressed yet gzip-compressed, with Content-Encoding:
	// gzip. CloudFront does not compress application/vnd.mapbox-vector-tile
	// at the edge, so this is what keeps them small on the wire; the tile
	// function decodes them for the rare client without gzip. The output is
	// deterministic (no name, no time in the header), so a second upload of
	// the same files is skipped as unchanged.
	GzipVectorTiles bool
	// ToPMTiles converts an MBTiles database, or the tiles and
	// metadata.json of a directory, into a PMTiles archive and uploads
	// that as NAME.pmtiles (a directory's style, sprites and glyphs are
	// uploaded under NAME/ as without it). The archive is validated as an
	// uploaded .pmtiles is.
	ToPMTiles bool
	// TempDir holds the archive while it is converted and uploaded; "" is
	// os.TempDir().
	TempDir string
	// NoFinalProgress leaves out the last progress line ("upload: done:
	// …"), for a caller that prints its own summary from the Report.
	NoFinalProgress bool
}

// Report says what Run did.
type Report struct {
	Uploaded      int
	UploadedBytes int64
	Skipped       int
	Skips         map[string]int      // reason → files
	SkipExamples  map[string][]string // reason → the first few paths
	Failed        int
	Failures      []Failure // the first few
	// Converted says what the conversion to PMTiles wrote, with
	// Options.ToPMTiles; nil without it.
	Converted *Conversion
}

// Failure is one file that did not upload.
type Failure struct {
	Path, Key string
	Err       error
}

const maxExamples = 5

// item is one file to upload; rel is its path in a source directory.
type item struct {
	path, key, ext, rel string
}

// Run uploads src (a tile directory, a .pmtiles, .mbtiles or .tif file) to dst through
// client. A bad src or dst is an error before anything is sent; otherwise
// the Report counts every file, and the error joins the first failures.
func Run(ctx context.Context, client *s3.Client, src string, dst Destination, opts Options) (Report, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if dst.Bucket == "" || dst.Name == "" || strings.Contains(dst.Name, "/") || (dst.Prefix != "" && !strings.HasSuffix(dst.Prefix, "/")) {
		return Report{}, badDestination("%v: want a bucket, a prefix ending in / and a NAME", dst)
	}
	rep := Report{Skips: map[string]int{}, SkipExamples: map[string][]string{}}
	items, listPrefix, cleanup, err := collect(ctx, src, dst, opts, &rep)
	defer cleanup()
	if err != nil {
		return rep, err
	}
	existing, err := list(ctx, client, dst.Bucket, listPrefix)
	if err != nil {
		return rep, err
	}
	up := transfer.NewUploader(client, opts.PartSize)
	p := &progress{opts: opts, total: len(items), last: opts.Now(), rep: &rep}
	work := make(chan item)
	var wg sync.WaitGroup
	for range min(opts.Concurrency, max(len(items), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range work {
				n, skipped, err := one(ctx, client, up, dst.Bucket, it, existing, opts.GzipVectorTiles)
				p.done(it, n, skipped, err)
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case work <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if !opts.NoFinalProgress {
		p.line(true)
	}
	var errs []error
	for _, f := range rep.Failures {
		errs = append(errs, fmt.Errorf("%s: %w", f.Path, f.Err))
	}
	if rep.Failed > len(rep.Failures) {
		errs = append(errs, fmt.Errorf("upload: and %d more failures", rep.Failed-len(rep.Failures)))
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, fmt.Errorf("upload: stopped: %w", err))
	}
	return rep, errors.Join(errs...)
}

// collect lists the files of src and the key prefix their objects share,
// converting src to PMTiles first with opts.ToPMTiles; cleanup removes what
// the conversion wrote.
func collect(ctx context.Context, src string, dst Destination, opts Options, rep *Report) (items []item, prefix string, cleanup func(), err error) {
	cleanup = func() {}
	st, err := os.Stat(src)
	if err != nil {
		return nil, "", cleanup, badSource(err, "")
	}
	if !st.IsDir() {
		ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(src), "."))
		var check func() error
		switch {
		case ext == "pmtiles":
			check = func() error { return checkArchive(ctx, src, st.Size()) }
		case ext == "mbtiles":
			check = func() error { return checkDatabase(ctx, src) }
		case isImageExt(ext):
			check = func() error { return checkImage(ctx, src, dst.Name, st.Size()) }
		}
		if !st.Mode().IsRegular() || check == nil {
			return nil, "", cleanup, badSource(nil, "%s: want a directory of z/x/y.ext tiles, a .pmtiles, a .mbtiles or a .tif file", src)
		}
		if isImageExt(ext) && opts.ToPMTiles {
			return nil, "", cleanup, badSource(nil, "%s: a TIFF is served as it is stored: upload it without -to-pmtiles", src)
		}
		if err := check(); err != nil {
			return nil, "", cleanup, err
		}
		if ext == "mbtiles" && opts.ToPMTiles {
			it, done, err := toArchive(ctx, src, dst, opts, rep, func(out io.Writer) (pmwrite.Stats, error) {
				return convertDatabase(ctx, src, out, opts.TempDir, opts.GzipVectorTiles)
			})
			return []item{it}, it.key, done, err
		}
		key := dst.Prefix + dst.Name + "." + ext
		return []item{{path: src, key: key, ext: ext}}, key, cleanup, nil
	}
	items, prefix, err = collectDir(src, dst, rep)
	if err != nil || !opts.ToPMTiles {
		return items, prefix, cleanup, err
	}
	var tiles, rest []item
	var metadata []byte
	for _, it := range items {
		_, isTile := tilePath(it.rel)
		switch {
		case it.rel == tilename.MetadataFile:
			if metadata, err = os.ReadFile(it.path); err != nil {
				return nil, "", cleanup, badSource(err, "")
			}
		case isTile:
			tiles = append(tiles, it)
		default:
			rest = append(rest, it)
		}
	}
	if len(tiles) == 0 {
		return nil, "", cleanup, badSource(nil, "%s: no z/x/y.ext tiles to convert to PMTiles", src)
	}
	it, done, err := toArchive(ctx, src, dst, opts, rep, func(out io.Writer) (pmwrite.Stats, error) {
		return convertTiles(src, tiles, metadata, out, opts.TempDir, opts.GzipVectorTiles)
	})
	// NAME.pmtiles and NAME/...: one listing of NAME covers both.
	return append([]item{it}, rest...), dst.Prefix + dst.Name, done, err
}

// toArchive writes the archive conv converts src to into a temporary file,
// validates it as an uploaded .pmtiles is, and returns its item and what
// removes the file.
func toArchive(ctx context.Context, src string, dst Destination, opts Options, rep *Report, conv func(io.Writer) (pmwrite.Stats, error)) (item, func(), error) {
	f, err := os.CreateTemp(opts.TempDir, dst.Name+"-*.pmtiles")
	if err != nil {
		return item{}, func() {}, fmt.Errorf("upload: %w", err)
	}
	done := func() { os.Remove(f.Name()) }
	st, err := conv(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("upload: %s: %w", f.Name(), cerr)
	}
	if err != nil {
		return item{}, done, err
	}
	if err := checkArchive(ctx, f.Name(), st.Bytes); err != nil {
		return item{}, done, fmt.Errorf("upload: %s: the converted archive does not validate (a bug): %w", src, err)
	}
	rep.Converted = &Conversion{Source: src, Stats: st}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "upload: converted %s to PMTiles: %d tiles, %d distinct, %d entries, %d leaf directories, %s (%d empty tiles left out)\n",
			src, st.Tiles, st.Contents, st.Entries, st.Leaves, bytesString(st.Bytes), st.Empty)
	}
	return item{path: f.Name(), key: dst.Prefix + dst.Name + ".pmtiles", ext: "pmtiles"}, done, nil
}

// collectDir lists the files of directory src that tilesieve serves.
func collectDir(src string, dst Destination, rep *Report) ([]item, string, error) {
	base := dst.Prefix + dst.Name + "/"
	var items []item
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		ext, ok := tilePath(rel)
		if !ok {
			ext, ok = stylePath(dst.Name, rel)
		}
		if !ok {
			rep.skip(SkipNotTile, rel)
			return nil
		}
		items = append(items, item{path: p, key: base + rel, ext: ext, rel: rel})
		return nil
	})
	if err != nil {
		return nil, "", badSource(err, "")
	}
	if len(items) == 0 {
		return nil, "", badSource(nil, "%s: no z/x/y.ext tiles and no style", src)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	return items, base, nil
}

// stylePath reports whether rel, in the directory of tileset name, is a
// file of a MapLibre style: style.json; a sprite, sprite[@2x].{json,png} or
// sprites/ID[@2x].{json,png} (MapLibre 4's several sprites); or a glyph
// range, fonts/{fontstack}/{start}-{end}.pbf (also under glyphs/, or as the
// directory of a tileset named fonts), and returns its extension.
func stylePath(name, rel string) (string, bool) {
	if rel == style.FileName {
		return "json", true
	}
	if glyphs.IsKey(name + "/" + rel) {
		return "pbf", true
	}
	file, inSprites := strings.CutPrefix(rel, "sprites/")
	ext := path.Ext(file)
	id := strings.TrimSuffix(strings.TrimSuffix(file, ext), "@2x")
	switch {
	case ext != ".json" && ext != ".png", id == "" || strings.Contains(file, "/"), !inSprites && id != "sprite":
		return "", false
	}
	return ext[1:], true
}

// tilePath reports whether rel is metadata.json or z/x/y.ext with numbers
// and a known extension, and returns its extension.
func tilePath(rel string) (string, bool) {
	if rel == tilename.MetadataFile {
		return "json", true
	}
	parts := strings.Split(rel, "/")
	if len(parts) != 3 {
		return "", false
	}
	y, ext, ok := strings.Cut(parts[2], ".")
	if !ok || ContentType(ext) == "" || ext == "json" || ext == "pmtiles" || ext == "mbtiles" || isImageExt(strings.ToLower(ext)) {
		return "", false
	}
	z, errZ := strconv.ParseUint(parts[0], 10, 8)
	_, errX := strconv.ParseUint(parts[1], 10, 32)
	_, errY := strconv.ParseUint(y, 10, 32)
	if errZ != nil || errX != nil || errY != nil || z > pmtiles.MaxZoom {
		return "", false
	}
	return strings.ToLower(ext), true
}

// checkArchive validates the archive at p, of size bytes, as the tile
// function will when it opens it (header, sections inside the file, root
// directory) and further: every leaf directory decodes and points inside
// its section. So an archive the server would refuse is never uploaded.
func checkArchive(ctx context.Context, p string, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return badSource(err, "")
	}
	defer f.Close()
	r, err := pmtiles.Open(ctx, pmtiles.ReaderAt(f), size, pmtiles.Options{})
	if err == nil {
		err = r.Verify(ctx)
	}
	if err != nil {
		return badSource(err, "%s: not a valid PMTiles v3 archive", p)
	}
	return nil
}

// checkDatabase opens p as the tile function will, so a file it would
// refuse is refused before anything is sent.
func checkDatabase(ctx context.Context, p string) error {
	db, err := mbtiles.Open(ctx, p)
	if err != nil {
		return badSource(err, "%s: not a valid MBTiles database", p)
	}
	return db.Close()
}

// list returns the sizes of the objects under prefix (or of the one object
// named prefix).
func list(ctx context.Context, client *s3.Client, bucket, prefix string) (map[string]int64, error) {
	sizes := map[string]int64{}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		var apiErr smithy.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchBucket":
			// The first request of an upload: a mistyped bucket, or one in
			// another account, is said in the words a user acts on.
			return nil, &noBucketError{bucket: bucket, err: err}
		case err != nil:
			return nil, fmt.Errorf("upload: list s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			sizes[aws.ToString(o.Key)] = aws.ToInt64(o.Size)
		}
	}
	return sizes, nil
}

// noBucketError is a listing answered NoSuchBucket.
type noBucketError struct {
	bucket string
	err    error
}

func (e *noBucketError) Error() string {
	return "upload: s3://" + e.bucket + ": no such bucket (check its name, and that AWS_REGION and the credentials are those of its account)"
}

func (e *noBucketError) Unwrap() error { return e.err }

// one uploads a file unless its object is already there; it returns the
// bytes uploaded.
func one(ctx context.Context, client *s3.Client, up *transfer.Uploader, bucket string, it item, existing map[string]int64, gzipVector bool) (int64, bool, error) {
	f, err := os.Open(it.path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	// A glyph range is a protobuf, though a .pbf is a vector tile by extension.
	ctype := origin.ContentTypeFor(it.key, ContentType(it.ext))
	var cenc string
	if IsGzip(head[:n]) {
		cenc = "gzip"
	}
	var body io.ReadSeeker = f
	if gzipVector && cenc == "" && ctype == tile.ContentTypeMVT {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, false, err
		}
		z, err := gzipFile(f)
		if err != nil {
			return 0, false, err
		}
		body, cenc = bytes.NewReader(z), "gzip"
	}
	h := sha256.New()
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return 0, false, err
	}
	size, err := io.Copy(h, bufio.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if have, ok := existing[it.key]; ok && have == size {
		out, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(it.key)})
		var apiErr smithy.APIError
		switch {
		case err == nil:
			if out.Metadata[MetaSHA256] == sum && aws.ToString(out.ContentType) == ctype && aws.ToString(out.ContentEncoding) == cenc {
				return 0, true, nil
			}
		case errors.As(err, &apiErr) && (apiErr.ErrorCode() == "NotFound" || apiErr.ErrorCode() == "NoSuchKey"):
			// Deleted since the listing: upload it.
		default:
			return 0, false, fmt.Errorf("head %s: %w", it.key, err)
		}
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return 0, false, err
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(bucket),
		Key:           aws.String(it.key),
		Body:          body,
		ContentLength: aws.Int64(size),
		ContentType:   aws.String(ctype),
		Metadata:      map[string]string{MetaSHA256: sum},
	}
	if cenc != "" {
		in.ContentEncoding = aws.String(cenc)
	}
	if err := up.Upload(ctx, in); err != nil {
		return 0, false, fmt.Errorf("put %s: %w", it.key, err)
	}
	return size, false, nil
}

// maxGzipSource bounds a vector tile compressed in memory before upload:
// past it, a file is no tile the function would serve (MAX_TILE_BYTES).
const maxGzipSource = 64 << 20

// gzipFile compresses r (a vector tile) whole, deterministically: the
// header carries no name and no time.
func gzipFile(r io.Reader) ([]byte, error) {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(zw, io.LimitReader(r, maxGzipSource+1))
	if err != nil {
		return nil, err
	}
	if n > maxGzipSource {
		return nil, fmt.Errorf("vector tile larger than %d bytes: not compressed in memory", maxGzipSource)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (r *Report) skip(reason, p string) {
	r.Skipped++
	r.Skips[reason]++
	if len(r.SkipExamples[reason]) < maxExamples {
		r.SkipExamples[reason] = append(r.SkipExamples[reason], p)
	}
}

// progress counts finished files and writes rate-limited lines.
type progress struct {
	opts  Options
	total int

	mu       sync.Mutex // guards the fields below and rep
	finished int
	last     time.Time
	rep      *Report
}

func (p *progress) done(it item, n int64, skipped bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished++
	switch {
	case err != nil:
		p.rep.Failed++
		if len(p.rep.Failures) < maxExamples {
			p.rep.Failures = append(p.rep.Failures, Failure{Path: it.path, Key: it.key, Err: err})
		}
	case skipped:
		p.rep.skip(SkipUnchanged, it.path)
	default:
		p.rep.Uploaded++
		p.rep.UploadedBytes += n
	}
	p.lineLocked(false)
}

func (p *progress) line(final bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lineLocked(final)
}

func (p *progress) lineLocked(final bool) {
	if p.opts.Progress == nil {
		return
	}
	now := p.opts.Now()
	if !final && now.Sub(p.last) < p.opts.ProgressEvery {
		return
	}
	p.last = now
	word := "progress"
	if final {
		word = "done"
	}
	fmt.Fprintf(p.opts.Progress, "upload: %s: %d/%d files, %d uploaded (%s), %d skipped, %d failed\n",
		word, p.finished, p.total, p.rep.Uploaded, bytesString(p.rep.UploadedBytes), p.rep.Skipped, p.rep.Failed)
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
