// Package config reads the environment of the two Lambda functions once, at
// init, into typed settings. Every variable has a default and a line of
// documentation (TilesVars, WorkerVars), which the tables of
// docs/configuration.md and the SAM template test are checked against.
// Validation lists every problem in one error, so a misconfigured function
// says all that is wrong at once.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Var documents one environment variable.
type Var struct {
	Name    string
	Default string
	Doc     string
	// LocalOnly marks variables for local runs (make run, LocalStack); the SAM
	// template does not set them.
	LocalOnly bool
}

// Common variables, shared by both functions.
var (
	varBucket       = Var{Name: "TILES_BUCKET", Default: "(required)", Doc: "S3 bucket that holds the tiles and the purge journal."}
	varPrefix       = Var{Name: "TILES_PREFIX", Default: "", Doc: "Key prefix of the tiles in the bucket; a tile's S3 key is TILES_PREFIX + its URL path. Empty (the whole bucket) or ending in /. The SAM template sets tiles/ and allows no empty prefix: its S3 notifications filter on it."}
	varEndpoint     = Var{Name: "AWS_ENDPOINT_URL", Default: "", Doc: "S3-compatible endpoint (LocalStack, the embedded stack). Read by the AWS SDK.", LocalOnly: true}
	varPathStyle    = Var{Name: "S3_FORCE_PATH_STYLE", Default: "false", Doc: "Path-style S3 addressing (needed by most S3-compatible endpoints)."}
	varJournal      = Var{Name: "JOURNAL_PREFIX", Default: "_tilesieve/journal/", Doc: "Where the purge journal lives in the bucket; must be outside TILES_PREFIX, and under _tilesieve/ when TILES_PREFIX is empty."}
	varDist         = Var{Name: "DISTRIBUTION_ID", Default: "", Doc: "CloudFront distribution the worker invalidates on purges (S3 changes and the admin purges handed to it); empty disables CDN invalidation."}
	varCDNPrefix    = Var{Name: "CDN_PATH_PREFIX", Default: "", Doc: "Path prefix of the tiles on the CDN (invalidation paths are /CDN_PATH_PREFIX<prefix>*)."}
	varSyncInterval = Var{Name: "SYNC_INTERVAL", Default: "1s", Doc: "How often a busy instance reads the purge journal; the staleness bound after an upload is this plus SYNC_TIMEOUT plus the worker's latency. The worker waits that long before invalidating the CDN, so no instance refills the CDN with bytes it has not purged yet."}
	varSyncTimeout  = Var{Name: "SYNC_TIMEOUT", Default: "1s", Doc: "Deadline of one journal check. When checks fail or time out for longer than SYNC_INTERVAL + SYNC_TIMEOUT, an instance revalidates cached copies with S3 instead of answering from its tiers (fail closed)."}
	varLogLevel     = Var{Name: "LOG_LEVEL", Default: "info", Doc: "debug, info, warn or error. Requests are logged at debug."}

	varMetrics          = Var{Name: "METRICS", Default: "true", Doc: "Write CloudWatch metrics as embedded metric format lines on stdout (no CloudWatch API calls). The lines carry no level, so Lambda counts them as INFO: an ApplicationLogLevel of WARN or above drops them."}
	varMetricsNamespace = Var{Name: "METRICS_NAMESPACE", Default: "tilesieve", Doc: "CloudWatch namespace of the metrics."}
	varMetricsInterval  = Var{Name: "METRICS_INTERVAL", Default: "60s", Doc: "Least time between two metric lines of a tile function instance (written on the request path and at shutdown); the worker writes once per invocation."}
	varMetricsTileSets  = Var{Name: "METRICS_TILESETS", Default: "20", Doc: "Tilesets whose requests get a TileSet dimension of their own; the rest count as (other). 0 turns the dimension off."}
)

// The tile function's own variables.
var (
	varMemBytes             = Var{Name: "MEM_CACHE_BYTES", Default: "half the function memory (256 MiB off Lambda)", Doc: "Byte bound of the memory tier. Accepts 512MiB, 1GiB, or bytes."}
	varDiskDir              = Var{Name: "DISK_CACHE_DIR", Default: "/tmp/tilesieve", Doc: "Directory of the disk tier."}
	varDiskBytes            = Var{Name: "DISK_CACHE_BYTES", Default: "80% of the free space, at most 10 GiB", Doc: "Byte bound of the disk tier; 0 turns the disk tier off."}
	varDiskFsync            = Var{Name: "DISK_FSYNC", Default: "false", Doc: "fsync each disk-tier file before it is renamed into place."}
	varStagePrefixes        = Var{Name: "STAGE_PREFIXES", Default: "", Doc: "Comma-separated tile-key prefixes copied to the disk tier at cold start; an entry NAME.pmtiles copies that tileset archive whole beside the disk tier (when it fits the space the disk tier leaves free) and its tiles are then read from the copy; an entry NAME.mbtiles does the same for that MBTiles database, which is otherwise staged on its first request."}
	varStageManifest        = Var{Name: "STAGE_MANIFEST", Default: "", Doc: "S3 key of a manifest (one tile key per line) staged at cold start."}
	varStageBudget          = Var{Name: "STAGE_BUDGET", Default: "5s", Doc: "Time allowed for staging at cold start (Lambda's init phase is limited to 10 s)."}
	varCacheControl         = Var{Name: "CACHE_CONTROL", Default: DefaultCacheControl, Doc: "Cache-Control of tile responses; its stale-if-error also bounds serving stale copies when S3 fails."}
	varNegativeCacheControl = Var{Name: "NEGATIVE_CACHE_CONTROL", Default: DefaultNegativeCacheControl, Doc: "Cache-Control of 404 and sparse-tile answers; its max-age is also how long an instance remembers a 404 in memory (an upload's purge forgets it sooner)."}
	varStaleCacheControl    = Var{Name: "STALE_CACHE_CONTROL", Default: DefaultStaleCacheControl, Doc: "Cache-Control of a cached copy served stale because S3 failed (within CACHE_CONTROL's stale-if-error); short, so a CDN does not keep the stale copy long."}
	varCORS                 = Var{Name: "CORS_ALLOW_ORIGINS", Default: "*", Doc: "CORS of tile answers, applied by the server itself on Lambda and off it (preflights answered): *, none, or a comma-separated list of origins that are reflected with Vary: Origin. Never on the admin API."}
	varPublicURL            = Var{Name: "PUBLIC_URL", Default: "", Doc: "Base URL clients reach the tiles at (the CDN's, e.g. https://tiles.example.com), used in TileJSON tile URLs, the catalog and IIIF info.json ids; empty takes it from X-Forwarded-Host (as https) on requests that carry CDN_SECRET, else from the request's Host."}
	varCDNSecret            = Var{Name: "CDN_SECRET", Default: "", Doc: "Value the CDN sends in the X-Tilesieve-Cdn header of every origin request (the SAM template sets both); X-Forwarded-Host is believed only on requests that carry it (and then as https: a viewer's X-Forwarded-Proto is never believed), so a direct request cannot choose the host in documents' URLs. Empty believes no forwarded host. Never logged."}
	varMissingTile          = Var{Name: "MISSING_TILE", Default: DefaultMissingTile, Doc: "Answer for a tile that does not exist: 404, 204, or empty (an empty tile of the requested format)."}
	varRevalidateAfter      = Var{Name: "REVALIDATE_AFTER", Default: "1h", Doc: "Age after which a cached tile is revalidated against S3 with If-None-Match."}
	varOriginTimeout        = Var{Name: "ORIGIN_TIMEOUT", Default: "10s", Doc: "Deadline of one S3 fetch (capped by the invocation's own deadline)."}
	varMaxTileBytes         = Var{Name: "MAX_TILE_BYTES", Default: "16MiB", Doc: "Largest object served as a tile; a larger one under TILES_PREFIX is refused with a 502 from its Content-Length, never read whole (a stray archive or video cannot take the instance's memory)."}
	varMaxOriginFetches     = Var{Name: "MAX_ORIGIN_FETCHES", Default: "64", Doc: "S3 fetches one instance runs at once, and the sockets its tile reads hold to S3; more wait within their deadline, so an S3 hang holds no more sockets than this and bounded bytes."}
	varOriginFailureWindow  = Var{Name: "ORIGIN_FAILURE_WINDOW", Default: "5s", Doc: "After an S3 failure or timeout, how long expired copies are served stale at once (within stale-if-error) while one revalidation runs, instead of each request waiting for S3 again."}
	varOutageStale          = Var{Name: "OUTAGE_STALE", Default: "true", Doc: "When neither the purge journal nor S3 answers (a journal check and a tile fetch both failed or timed out), serve the copies the tiers hold (a restarted instance: its kept disk tier) stale within CACHE_CONTROL's stale-if-error, with STALE_CACHE_CONTROL, without waiting for S3 while ORIGIN_FAILURE_WINDOW is open. Purges recorded during the outage reach the instance only when the journal answers again. false: copies the journal no longer vouches for are not served while S3 is down (502/504)."}
	varAdminToken           = Var{Name: "ADMIN_TOKEN", Default: "", Doc: "Token of the admin API (/_tilesieve/purge, keys, stats), sent as Authorization: Bearer or X-Tilesieve-Token (behind CloudFront OAC or AWS_IAM, Authorization carries SigV4); empty disables the API. Never logged."}
	varPurgeQueueURL        = Var{Name: "PURGE_QUEUE_URL", Default: "", Doc: "The sync worker's queue: an admin purge's CDN invalidation is sent there, and the worker applies it with the settle delay and CDN budget of an S3 change (only the worker talks to the CDN). Empty: admin purges leave the CDN alone."}
	varIIIFMaxWidth         = Var{Name: "IIIF_MAX_WIDTH", Default: "4096", Doc: "Widest IIIF image answer (maxWidth of info.json): max is scaled down to it; any larger size is refused (400 in 3.0; 404 in 2.1, whose full size of a larger image is one)."}
	varIIIFMaxHeight        = Var{Name: "IIIF_MAX_HEIGHT", Default: "4096", Doc: "Tallest IIIF image answer (maxHeight of info.json)."}
	varIIIFMaxArea          = Var{Name: "IIIF_MAX_AREA", Default: "4194304", Doc: "Most pixels of an IIIF image answer (maxArea of info.json): with the two above, what keeps an answer within Lambda's 6 MB buffered response."}
	varIIIFMaxDecoded       = Var{Name: "IIIF_MAX_DECODED_PIXELS", Default: "16777216", Doc: "Most pixels of stored tiles one IIIF answer decodes (from the smallest level that suffices); a request needing more is answered 501."}
	varIIIFDecoders         = Var{Name: "IIIF_DECODERS", Default: "2", Doc: "Stored tiles decoded at once across all IIIF answers: with IIIF_MAX_DECODED_PIXELS, what bounds the memory a flood of large requests takes."}
	varIIIFRenderBytes      = Var{Name: "IIIF_RENDER_BYTES", Default: "a quarter of the function memory (128 MiB off Lambda)", Doc: "Bytes of pixels all IIIF answers being made hold at once (their canvases, scaled images and encoded bytes): an answer waits for room, one needing more than all of it runs alone. Accepts 512MiB, 1GiB, or bytes."}
	varInvokeMode           = Var{Name: "INVOKE_MODE", Default: "BUFFERED", Doc: "BUFFERED (function-URL events, 6 MB limit) or RESPONSE_STREAM; must match the function URL's InvokeMode."}
	varPort                 = Var{Name: "PORT", Default: "8080", Doc: "Port of the local HTTP server (off Lambda).", LocalOnly: true}
	varListenAddr           = Var{Name: "LISTEN_ADDR", Default: "127.0.0.1", Doc: "Address of the local HTTP server (off Lambda).", LocalOnly: true}
)

// TilesVars lists every variable the tile function reads.
func TilesVars() []Var {
	return []Var{
		varBucket, varPrefix, varSources, varEndpoint, varPathStyle,
		varMemBytes,
		varDiskDir,
		varDiskBytes,
		varDiskFsync,
		varStagePrefixes,
		varStageManifest,
		varStageBudget,
		varCacheControl,
		varNegativeCacheControl,
		varStaleCacheControl,
		varCORS,
		varPublicURL,
		varCDNSecret,
		varMissingTile,
		varRevalidateAfter,
		varOriginTimeout,
		varMaxTileBytes,
		varMaxOriginFetches,
		varOriginFailureWindow,
		varOutageStale,
		varSyncInterval, varSyncTimeout,
		varJournal,
		varAdminToken,
		varPurgeQueueURL,
		varIIIFMaxWidth, varIIIFMaxHeight, varIIIFMaxArea, varIIIFMaxDecoded, varIIIFDecoders, varIIIFRenderBytes,
		varInvokeMode,
		varPort,
		varListenAddr,
		varLogLevel,
		varMetrics, varMetricsNamespace, varMetricsInterval, varMetricsTileSets,
	}
}

// The sync worker's own variables.
var (
	varCoalesceThreshold = Var{Name: "COALESCE_THRESHOLD", Default: "8", Doc: "Changed keys under one directory beyond which the whole directory is purged."}
	varCoalesceCap       = Var{Name: "COALESCE_CAP", Default: "15", Doc: "Most prefixes per batch (CloudFront allows 15 wildcard invalidations in progress)."}
)

// WorkerVars lists every variable the sync worker reads.
func WorkerVars() []Var {
	return []Var{
		varBucket, varPrefix, varSources, varEndpoint, varPathStyle, varJournal, varDist, varCDNPrefix,
		varCoalesceThreshold,
		varCoalesceCap,
		varSyncInterval, varSyncTimeout,
		varLogLevel,
		varMetrics, varMetricsNamespace,
	}
}

// Defaults of the HTTP contract.
const (
	DefaultCacheControl         = "public, max-age=86400, stale-while-revalidate=60, stale-if-error=86400"
	DefaultNegativeCacheControl = "public, max-age=60"
	DefaultStaleCacheControl    = "public, max-age=60"
	DefaultMissingTile          = "404"
)

// Env reads variables; os.Getenv in production, a map in tests.
type Env func(string) string

// OS is the process environment.
var OS Env = os.Getenv

// reader collects every problem instead of stopping at the first.
type reader struct {
	env  Env
	errs []error
}

// The variables both functions read that AWS sets; not listed in TilesVars
// or WorkerVars, since neither the documentation nor the template sets them.
var (
	varRegion         = Var{Name: "AWS_REGION"}
	varRuntimeAPI     = Var{Name: "AWS_LAMBDA_RUNTIME_API"}
	varFunctionMemory = Var{Name: "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"}
)

// mustDefault parses v's Default, the only spelling of its value: one that
// does not parse is a programming error, caught by the tests.
func mustDefault[T any](v Var, parse func(string) (T, error)) T {
	d, err := parse(v.Default)
	if err != nil {
		panic(fmt.Sprintf("config: default of %s: %v", v.Name, err))
	}
	return d
}

// value reads v with parse, or its Default when unset; a value that does not
// parse is reported with want and stands in as the Default.
func value[T any](r *reader, v Var, parse func(string) (T, error), want string) T {
	s, ok := r.lookup(v.Name)
	if !ok {
		return mustDefault(v, parse)
	}
	x, err := parse(s)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: %s", v.Name, s, want))
		return mustDefault(v, parse)
	}
	return x
}

func (r *reader) str(v Var) string {
	if s, ok := r.lookup(v.Name); ok {
		return s
	}
	return v.Default
}

func (r *reader) lookup(name string) (string, bool) {
	v := strings.TrimSpace(r.env(name))
	return v, v != ""
}

func (r *reader) bool(v Var) bool {
	return value(r, v, strconv.ParseBool, "want true or false")
}

func (r *reader) int(v Var) int {
	return value(r, v, parseCount, "want a non-negative whole number")
}

func (r *reader) duration(v Var) time.Duration {
	return value(r, v, parseDuration, "want a duration such as 500ms, 5s or 1h")
}

var errNegative = errors.New("negative")

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n < 0 {
		err = errNegative
	}
	return n, err
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		err = errNegative
	}
	return d, err
}

// bytes reads a size whose default is computed by the caller; ok is false
// when the variable is unset or bad.
func (r *reader) bytes(v Var) (n int64, ok bool) {
	s, ok := r.lookup(v.Name)
	if !ok {
		return 0, false
	}
	n, err := ParseBytes(s)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q: %w", v.Name, s, err))
		return 0, false
	}
	return n, true
}

// size reads a size with a Default of its own.
func (r *reader) size(v Var) int64 {
	if n, ok := r.bytes(v); ok {
		return n
	}
	return mustDefault(v, ParseBytes)
}

func (r *reader) list(v Var) []string {
	s, ok := r.lookup(v.Name)
	if !ok {
		return nil
	}
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (r *reader) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf(format, args...))
}

func (r *reader) err(what string) error {
	if len(r.errs) == 0 {
		return nil
	}
	return fmt.Errorf("config: invalid %s configuration:\n%w", what, errors.Join(r.errs...))
}

// ParseBytes reads a byte size: a whole number of bytes, or a number with a
// unit B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, errors.New("want a size such as 268435456, 256MiB or 1GiB")
	}
	return n * mult, nil
}

// AnswerArgs answers the command line of a Lambda binary, which takes no
// arguments: -h, -help, --help or help print usage and vars with their
// defaults on stdout (exit 0), anything else the same on stderr after a
// line naming the arguments (exit 2).
func AnswerArgs(name, usage string, vars []Var, args []string, stdout, stderr io.Writer) int {
	w, code := stdout, 0
	if len(args) != 1 || !slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n\n", name, args)
		w, code = stderr, 2
	}
	fmt.Fprint(w, usage)
	for _, v := range vars {
		fmt.Fprintf(w, "  %-24s %s\n", v.Name, cmp.Or(v.Default, "(empty)"))
	}
	return code
}
