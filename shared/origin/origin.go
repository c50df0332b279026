// Package origin is the S3 tier: tiles read from the bucket through
// aws-sdk-go-v2, with the retry, deadline and body rules a tile origin needs.
// A Client reads one bucket under one prefix; a Router reads each tileset
// from the bucket its source names (SOURCES) with the same rules.
//
// What it promises:
//
//   - A Tile it returns is whole. A body that is cut short (fewer bytes than
//     Content-Length, a reset connection) or that trickles in slower than
//     Config.MinBodyRate is an error, never a short tile. ETags are opaque
//     version tokens (multipart ETags are not MD5s) and are never checked
//     against the body.
//   - A missing object is tile.ErrNotFound and a 304 answer to If-None-Match is
//     tile.ErrNotModified (both matchable with errors.Is, neither retried).
//   - Throttling (503 SlowDown, 429), 5xx answers, connection failures and
//     broken bodies are retried with jittered exponential backoff, at most
//     Config.MaxAttempts times and never past the caller's deadline: when the
//     next backoff would end after the deadline the client gives up at once
//     with the last error instead of sleeping into it.
//   - A client from New with Config.MaxConns holds at most that many
//     connections to one S3 host for its reads, however many callers give
//     up mid-request, so the sockets an S3 hang leaves open stay within the
//     fetches the caller runs at once. S3() reads through a pool of its own,
//     which such a hang never starves.
//   - Every error names the package and wraps its cause with %w. IsTimeout
//     tells a deadline, a per-attempt timeout or a stalled body (the handler
//     answers 504) from other failures (502).
//
// The retrying is this package's, on the product's one retry policy
// (shared/internal/retry), rather than the SDK's retryer, for three reasons:
// an attempt here covers reading the body, which the SDK's retry middleware
// has already returned from (so it cannot retry a truncated or stalled body);
// each attempt gets its own timeout (Config.Timeout) that also covers the
// body; and the backoff can see the caller's deadline and give up rather
// than sleep past it. The SDK's own classification of retryable errors (its
// retry.DefaultRetryables) is reused, and the SDK retryer is switched off per
// call (so retries never multiply). The *s3.Client built by New keeps the
// SDK's standard retryer for other users of S3(), such as the ranged
// downloads of shared/origin/transfer during staging.
package origin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
	"github.com/tilesieve/tilesieve/shared/internal/retry"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Defaults of Config.
const (
	DefaultMaxAttempts = 4
	DefaultTimeout     = 10 * time.Second
	DefaultMinBodyRate = 64 << 10 // bytes per second
	DefaultBodyGrace   = 2 * time.Second

	// The wait after the n-th failed attempt is uniformly random in
	// [0, min(backoffCap, backoffBase·2^(n-1))) ("full jitter").
	backoffBase = 25 * time.Millisecond
	backoffCap  = time.Second

	// How often a body read slower than MinBodyRate is checked for, once the
	// grace period is over.
	stallCheckEvery = 100 * time.Millisecond

	// Connection pool: staging runs tens of requests at once against one
	// host; the SDK's default keeps only 10 idle connections per host.
	maxIdleConnsPerHost = 64
)

// wrapConn, when set (tests), wraps every connection New's clients dial.
var wrapConn func(net.Conn) net.Conn

// ErrStalled is a body that arrived slower than Config.MinBodyRate. The
// other answers a caller matches are the key space's (tile.ErrNotFound,
// tile.ErrNotModified, tile.ErrTooLarge, tile.ErrPreconditionFailed),
// wrapped with what was asked.
var ErrStalled error = stalled{}

// stalled is ErrStalled: a timeout (tile.IsTimeout), as a slow network
// read is.
type stalled struct{}

func (stalled) Error() string { return "origin: body stalled" }
func (stalled) Timeout() bool { return true }

// DefaultMaxObjectBytes is the default Config.MaxObjectBytes (MAX_TILE_BYTES).
const DefaultMaxObjectBytes = 16 << 20

// Config configures a Client. Zero values take the defaults.
type Config struct {
	Bucket    string // TILES_BUCKET, required
	Prefix    string // TILES_PREFIX, "" or ending in "/"
	Region    string // AWS_REGION ("" leaves it to the SDK's environment)
	Endpoint  string // AWS_ENDPOINT_URL ("" leaves it to the SDK's environment)
	PathStyle bool   // S3_FORCE_PATH_STYLE
	// RequesterPays sends x-amz-request-payer: requester on every read
	// (a requester-pays bucket refuses anonymous-payer reads with 403).
	RequesterPays bool
	MaxAttempts   int           // attempts per call including the first; default 4
	Timeout       time.Duration // per-attempt cap (request and body) when the caller's ctx has no sooner deadline; default 10s
	// MinBodyRate is the average rate in bytes/s below which a body read
	// counts as stalled once BodyGrace has passed; default 64 KiB/s, negative
	// turns the check off.
	MinBodyRate int64
	BodyGrace   time.Duration // default 2s
	// MaxObjectBytes (MAX_TILE_BYTES) bounds what Get and GetObject read:
	// one archive or video under the prefix must not take an instance's
	// memory. Default DefaultMaxObjectBytes; negative turns it off.
	MaxObjectBytes int64
	// MaxConns bounds the connections New's client holds to one S3 host
	// for reads, dialing, busy and idle together (MAX_ORIGIN_FETCHES in
	// the tile function); a read beyond it waits for one within its
	// deadline. 0 is unbounded. S3() has a pool of its own.
	MaxConns int
	Now      func() time.Time // stamps Tile.StoredAt; default time.Now
}

// Validate reports every problem with the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, errors.New("origin: Bucket is required"))
	}
	if c.Prefix != "" {
		if err := tile.ValidateDir(c.Prefix); err != nil {
			errs = append(errs, fmt.Errorf("origin: Prefix: %w", err))
		}
	}
	if c.Endpoint != "" {
		if _, ok := httpurl.Parse(c.Endpoint); !ok {
			errs = append(errs, fmt.Errorf("origin: Endpoint %q is not an http(s) URL", c.Endpoint))
		}
	}
	errs = append(errs,
		defaults.NotNegative("origin", "MaxAttempts", c.MaxAttempts),
		defaults.NotNegative("origin", "Timeout", c.Timeout),
		defaults.NotNegative("origin", "BodyGrace", c.BodyGrace))
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	c.MaxAttempts = cmp.Or(c.MaxAttempts, DefaultMaxAttempts)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.MinBodyRate = cmp.Or(c.MinBodyRate, DefaultMinBodyRate)
	c.BodyGrace = cmp.Or(c.BodyGrace, DefaultBodyGrace)
	c.MaxObjectBytes = cmp.Or(c.MaxObjectBytes, DefaultMaxObjectBytes)
	c.Now = defaults.Clock(c.Now)
	return c
}

// ObjectInfo is one object found by List.
type ObjectInfo struct {
	Key  string // tile key (TILES_PREFIX removed)
	Size int64
	ETag string
}

// Client reads tiles from one bucket. It is safe for concurrent use; build it
// once at init.
type Client struct {
	api  *s3.Client // this package's reads, within Config.MaxConns
	bulk *s3.Client // S3(): a pool of its own
	cfg  Config

	listPageSize int32 // test hook: MaxKeys per ListObjectsV2 page; 0 is S3's default (1000)
}

// New builds a client from the SDK's configuration (awsclient.Load: the
// environment on Lambda; shared config and profiles elsewhere), with cfg's
// region, endpoint and path-style addressing applied on top.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	awsCfg, err := awsclient.Load(ctx, awsclient.Settings{Region: cfg.Region, HTTPClient: httpClient(0), RetryMaxAttempts: cfg.MaxAttempts})
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	bulk := awsclient.S3(awsCfg, cfg.Endpoint, cfg.PathStyle)
	reads := bulk
	if cfg.MaxConns > 0 {
		reads = awsclient.S3(awsCfg, cfg.Endpoint, cfg.PathStyle, func(o *s3.Options) { o.HTTPClient = httpClient(cfg.MaxConns) })
	}
	return &Client{api: reads, bulk: bulk, cfg: cfg}, nil
}

// httpClient is the SDK's HTTP client with a pool for tens of requests at
// once to one host, holding at most maxConns connections to it (0 is
// unbounded).
func httpClient(maxConns int) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = maxIdleConnsPerHost
		tr.MaxConnsPerHost = maxConns
		if wrap := wrapConn; wrap != nil {
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return wrap(c), nil
			}
		}
	})
}

// NewWithS3 wraps a ready S3 client (tests, the embedded stack). cfg should
// have passed Validate; its Region, Endpoint and PathStyle are not used.
func NewWithS3(api *s3.Client, cfg Config) *Client {
	return &Client{api: api, bulk: api, cfg: cfg.withDefaults()}
}

// S3 returns an SDK client of the same bucket settings for work beside the
// tile reads (staging's ranged downloads, the purge journal). From New it
// has a connection pool of its own, outside Config.MaxConns, so reads held
// by a hang never starve it.
func (c *Client) S3() *s3.Client { return c.bulk }

// Bucket returns the bucket the client reads.
func (c *Client) Bucket() string { return c.cfg.Bucket }

// MaxObjectBytes is the configured bound on an object or range read
// (MAX_TILE_BYTES); zero or negative when off.
func (c *Client) MaxObjectBytes() int64 { return c.cfg.MaxObjectBytes }

// RequestPayer is what every read sends as x-amz-request-payer: requester
// for a requester-pays bucket (Config.RequesterPays), else nothing. Callers
// that build their own S3 requests from S3() (staging's ranged downloads)
// set it too.
func (c *Client) RequestPayer() types.RequestPayer {
	if c.cfg.RequesterPays {
		return types.RequestPayerRequester
	}
	return ""
}

// ObjectKey maps a tile key to its S3 object key.
func (c *Client) ObjectKey(tileKey string) string { return c.cfg.Prefix + tileKey }

// noSDKRetry switches the SDK's retryer off for one call: this package's loop
// does the retrying.
func noSDKRetry(o *s3.Options) { o.Retryer = aws.NopRetryer{} }

// Get reads a whole tile. With ifNoneMatch set (an ETag held by a tier
// above), an unchanged object is tile.ErrNotModified.
func (c *Client) Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error) {
	if err := tile.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("origin: get: %w", err)
	}
	if tile.Reserved(key) {
		// The service's own objects (the journal) are never a tile.
		return nil, fmt.Errorf("origin: get %q: reserved key space: %w", key, tile.ErrNotFound)
	}
	return c.get(ctx, "get", key, c.ObjectKey(key), ifNoneMatch)
}

// GetObject is Get for a raw S3 object key, inside or outside TILES_PREFIX
// (a staging manifest, the purge journal), with the same retry and body rules.
func (c *Client) GetObject(ctx context.Context, objectKey, ifNoneMatch string) (*tile.Tile, error) {
	if objectKey == "" {
		return nil, errors.New("origin: get object: empty key")
	}
	return c.get(ctx, "get object", objectKey, objectKey, ifNoneMatch)
}

func (c *Client) get(ctx context.Context, op, name, objectKey, ifNoneMatch string) (*tile.Tile, error) {
	return retryValue(ctx, c, op, name, func(actx context.Context) (*tile.Tile, error) {
		return c.getOnce(actx, objectKey, ifNoneMatch)
	})
}

// retryValue is c.retry for an attempt that answers a value: the value of
// the attempt that succeeded, or the zero value and retry's error.
func retryValue[T any](ctx context.Context, c *Client, op, name string, attempt func(context.Context) (T, error)) (T, error) {
	var v T
	err := c.retry(ctx, op, name, func(actx context.Context) error {
		var err error
		v, err = attempt(actx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// optional is s as an SDK field: nil when empty, so that no header is sent.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// getOnce is one attempt: the request and the whole body.
func (c *Client) getOnce(ctx context.Context, objectKey, ifNoneMatch string) (*tile.Tile, error) {
	in := &s3.GetObjectInput{Key: aws.String(objectKey), IfNoneMatch: optional(ifNoneMatch)}
	out, body, err := c.fetch(ctx, in, func(out *s3.GetObjectOutput) (int64, error) {
		if out.ContentLength == nil {
			return -1, nil
		}
		return *out.ContentLength, nil
	})
	if err != nil {
		return nil, err
	}
	t := c.described(objectKey, out.ContentType, out.ContentEncoding, out.ETag, out.LastModified)
	t.Body = body
	return t, nil
}

// described is a tile of the object S3 described with these headers, stored
// now, its content type as ContentTypeFor decides; its body is the caller's
// to set.
func (c *Client) described(objectKey string, contentType, contentEncoding, etag *string, lastModified *time.Time) *tile.Tile {
	return &tile.Tile{
		ContentType:     ContentTypeFor(objectKey, aws.ToString(contentType)),
		ContentEncoding: aws.ToString(contentEncoding),
		ETag:            aws.ToString(etag),
		LastModified:    aws.ToTime(lastModified),
		StoredAt:        c.cfg.Now(),
	}
}

// fetch is one GetObject of in (its bucket and payer set here) with the body
// read whole. length checks the answer's headers and says how long the body
// is (-1: not said); a body above MaxObjectBytes is refused from that,
// before a byte is read or allocated.
func (c *Client) fetch(ctx context.Context, in *s3.GetObjectInput, length func(*s3.GetObjectOutput) (int64, error)) (*s3.GetObjectOutput, []byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	in.Bucket = aws.String(c.cfg.Bucket)
	in.RequestPayer = c.RequestPayer()
	out, err := c.api.GetObject(ctx, in, noSDKRetry)
	tile.AddS3(ctx, 1, 0) // what the answer cost (tiers.Result.Cost)
	if err != nil {
		return nil, nil, classify(err)
	}
	defer out.Body.Close()
	n, err := length(out)
	if err != nil {
		return nil, nil, err
	}
	if max := c.cfg.MaxObjectBytes; max > 0 && n > max {
		return nil, nil, fmt.Errorf("%w: %s: %d bytes to read, MaxObjectBytes is %d", tile.ErrTooLarge, aws.ToString(in.Key), n, max)
	}
	body, err := c.readBody(ctx, cancel, out.Body, n)
	tile.AddS3(ctx, 0, int64(len(body)))
	if err != nil {
		return nil, nil, err
	}
	return out, body, nil
}

// Range is a byte range of an object, read by GetRange.
type Range struct {
	Body         []byte
	Size         int64 // the whole object's size, from Content-Range
	ETag         string
	LastModified time.Time
}

// MaxRangeBytes caps one GetRange.
const MaxRangeBytes = 256 << 20

// GetRange reads n bytes of a raw object key from offset off (fewer when
// the object ends first), with the retry and body rules of Get. With ifMatch
// set the read is pinned to that version: a changed object is
// tile.ErrPreconditionFailed, never bytes of another version.
func (c *Client) GetRange(ctx context.Context, objectKey string, off, n int64, ifMatch string) (*Range, error) {
	if objectKey == "" || off < 0 || n <= 0 || n > MaxRangeBytes {
		return nil, fmt.Errorf("origin: get range %q %d+%d: bad request", objectKey, off, n)
	}
	return retryValue(ctx, c, "get range", objectKey, func(actx context.Context) (*Range, error) {
		return c.getRangeOnce(actx, objectKey, off, n, ifMatch)
	})
}

func (c *Client) getRangeOnce(ctx context.Context, objectKey string, off, n int64, ifMatch string) (*Range, error) {
	in := &s3.GetObjectInput{
		Key:     aws.String(objectKey),
		Range:   aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1)),
		IfMatch: optional(ifMatch),
	}
	var size int64
	out, body, err := c.fetch(ctx, in, func(out *s3.GetObjectOutput) (int64, error) {
		var ok bool
		size, ok = rangeTotal(aws.ToString(out.ContentRange))
		length := aws.ToInt64(out.ContentLength)
		switch {
		case !ok && out.ContentRange == nil && out.ContentLength != nil && off == 0:
			// A store that answers a range with the whole object (200).
			size = length
		case !ok:
			return 0, fmt.Errorf("origin: get range %q: bad Content-Range %q", objectKey, aws.ToString(out.ContentRange))
		}
		if out.ContentLength == nil || length > n {
			return 0, fmt.Errorf("origin: get range %q: Content-Length %v for a range of %d bytes", objectKey, aws.ToInt64(out.ContentLength), n)
		}
		return length, nil
	})
	if err != nil {
		return nil, err
	}
	return &Range{Body: body, Size: size, ETag: aws.ToString(out.ETag), LastModified: aws.ToTime(out.LastModified)}, nil
}

// listPage is one page of a listing, retried like a Get.
func (c *Client) listPage(ctx context.Context, op, name string, in *s3.ListObjectsV2Input) (*s3.ListObjectsV2Output, error) {
	return retryValue(ctx, c, op, name, func(actx context.Context) (*s3.ListObjectsV2Output, error) {
		out, err := c.api.ListObjectsV2(actx, in, noSDKRetry)
		return out, classify(err)
	})
}

// rangeTotal reads the complete length of a Content-Range ("bytes 0-9/100").
func rangeTotal(v string) (int64, bool) {
	_, total, ok := strings.Cut(v, "/")
	if !ok || !strings.HasPrefix(v, "bytes ") {
		return 0, false
	}
	var n int64
	if _, err := fmt.Sscan(total, &n); err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Prefixes lists the common prefixes ("directories", ending in /) and the
// objects directly under the tile-key prefix dir (delimiter /), as tile
// keys: one level of the bucket, for a catalog. Each page is retried like
// a Get; at most max names are returned.
func (c *Client) Prefixes(ctx context.Context, dir string, max int) (dirs []string, objects []ObjectInfo, err error) {
	if err := tile.ValidatePrefix(dir); err != nil {
		return nil, nil, fmt.Errorf("origin: prefixes: %w", err)
	}
	return c.level(ctx, dir, c.ObjectKey(dir), c.cfg.Prefix, max)
}

// level lists one level of the bucket under the object prefix at; names
// are the object keys with base removed (those that are then no valid tile
// keys are skipped). name is the listing in errors.
func (c *Client) level(ctx context.Context, name, at, base string, max int) (dirs []string, objects []ObjectInfo, err error) {
	var token *string
	for len(dirs)+len(objects) < max {
		in := &s3.ListObjectsV2Input{
			Bucket:            aws.String(c.cfg.Bucket),
			Prefix:            aws.String(at),
			Delimiter:         aws.String("/"),
			ContinuationToken: token,
			RequestPayer:      c.RequestPayer(),
		}
		out, err := c.listPage(ctx, "list prefixes", name, in)
		if err != nil {
			return nil, nil, err
		}
		for _, p := range out.CommonPrefixes {
			if k, ok := tile.KeyFromObject(base, strings.TrimSuffix(aws.ToString(p.Prefix), "/")); ok {
				dirs = append(dirs, k+"/")
			}
		}
		for _, o := range out.Contents {
			if k, ok := tile.KeyFromObject(base, aws.ToString(o.Key)); ok {
				objects = append(objects, ObjectInfo{Key: k, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)})
			}
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			break
		}
		token = out.NextContinuationToken
	}
	return dirs, objects, nil
}

// bodyError is a failure while reading a body after a good status line; it
// is retried like a connection failure.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "read body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// readBody reads all of r, refusing a short body and one that stalls. A
// stall is detected by a watchdog that cancels the attempt's context with
// ErrStalled, because a read that receives nothing never returns by itself.
func (c *Client) readBody(ctx context.Context, cancel context.CancelCauseFunc, r io.Reader, length int64) ([]byte, error) {
	if max := c.cfg.MaxObjectBytes; max > 0 {
		// Without a Content-Length (or with a wrong one) read no more than
		// the bound and one byte to tell.
		r = io.LimitReader(r, max+1)
	}
	cr := &countingReader{r: r}
	if c.cfg.MinBodyRate > 0 {
		w := startWatchdog(cr, length, c.cfg.MinBodyRate, c.cfg.BodyGrace, func() { cancel(ErrStalled) })
		defer w.stop()
	}
	var buf []byte
	if length > 0 {
		// The header comes from S3, but cap what is reserved up front anyway.
		buf = make([]byte, 0, min(length, 64<<20))
	}
	buf, err := readAll(cr, buf)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrStalled) {
			return nil, &bodyError{fmt.Errorf("%w: %d bytes read, below %d B/s", ErrStalled, cr.n.Load(), c.cfg.MinBodyRate)}
		}
		return nil, &bodyError{err}
	}
	if max := c.cfg.MaxObjectBytes; max > 0 && int64(len(buf)) > max {
		return nil, fmt.Errorf("%w: more than MaxObjectBytes (%d) bytes", tile.ErrTooLarge, max)
	}
	if length >= 0 && int64(len(buf)) != length {
		return nil, &bodyError{fmt.Errorf("got %d bytes, Content-Length is %d: %w", len(buf), length, io.ErrUnexpectedEOF)}
	}
	return buf, nil
}

// readAll is io.ReadAll into a caller-sized buffer.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				return b, nil
			}
			return b, err
		}
	}
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// watchdog checks a body's progress after the grace period and then every
// stallCheckEvery, and fires once when the average rate since the start is
// below the minimum (a body shorter than rate·elapsed must be complete).
type watchdog struct {
	cr     *countingReader
	length int64
	rate   int64
	start  time.Time
	fire   func()

	mu      sync.Mutex // guards t and stopped
	t       *time.Timer
	stopped bool
}

func startWatchdog(cr *countingReader, length, rate int64, grace time.Duration, fire func()) *watchdog {
	w := &watchdog{cr: cr, length: length, rate: rate, start: time.Now(), fire: fire}
	w.mu.Lock()
	w.t = time.AfterFunc(grace, w.check)
	w.mu.Unlock()
	return w
}

func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	want := int64(time.Since(w.start).Seconds() * float64(w.rate))
	if w.length >= 0 && want > w.length {
		want = w.length
	}
	if w.cr.n.Load() < want {
		w.stopped = true
		w.fire()
		return
	}
	w.t.Reset(stallCheckEvery)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}

// Head reads a tile's metadata (Body is nil).
func (c *Client) Head(ctx context.Context, key string) (*tile.Tile, error) {
	if err := tile.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("origin: head: %w", err)
	}
	if tile.Reserved(key) {
		return nil, fmt.Errorf("origin: head %q: reserved key space: %w", key, tile.ErrNotFound)
	}
	return c.head(ctx, key, c.ObjectKey(key))
}

func (c *Client) head(ctx context.Context, name, objectKey string) (*tile.Tile, error) {
	return retryValue(ctx, c, "head", name, func(actx context.Context) (*tile.Tile, error) {
		out, err := c.api.HeadObject(actx, &s3.HeadObjectInput{
			Bucket:       aws.String(c.cfg.Bucket),
			Key:          aws.String(objectKey),
			RequestPayer: c.RequestPayer(),
		}, noSDKRetry)
		if err != nil {
			return nil, classify(err)
		}
		return c.described(objectKey, out.ContentType, out.ContentEncoding, out.ETag, out.LastModified), nil
	})
}

// List calls fn for every object under the tile-key prefix, in S3's key
// order, following ListObjectsV2 pagination; fn returns false to stop.
// Objects whose keys are not valid tile keys (directory markers, say) are
// skipped. Each page is retried like a Get.
func (c *Client) List(ctx context.Context, prefix string, fn func(ObjectInfo) bool) error {
	if err := tile.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("origin: list: %w", err)
	}
	var token *string
	for {
		in := &s3.ListObjectsV2Input{
			Bucket:            aws.String(c.cfg.Bucket),
			Prefix:            aws.String(c.ObjectKey(prefix)),
			ContinuationToken: token,
			RequestPayer:      c.RequestPayer(),
		}
		if c.listPageSize > 0 {
			in.MaxKeys = aws.Int32(c.listPageSize)
		}
		out, err := c.listPage(ctx, "list", prefix, in)
		if err != nil {
			return err
		}
		for _, o := range out.Contents {
			key, ok := tile.KeyFromObject(c.cfg.Prefix, aws.ToString(o.Key))
			if !ok {
				continue
			}
			if !fn(ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)}) {
				return nil
			}
		}
		if !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextContinuationToken) == "" {
			return nil
		}
		token = out.NextContinuationToken
	}
}

// classify turns SDK errors that are answers rather than failures into the
// sentinels.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return fmt.Errorf("%w (%w)", tile.ErrNotFound, err)
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotModified:
			return tile.ErrNotModified
		case http.StatusPreconditionFailed:
			return fmt.Errorf("%w (%w)", tile.ErrPreconditionFailed, err)
		case http.StatusNotFound:
			return fmt.Errorf("%w (%w)", tile.ErrNotFound, err)
		}
	}
	return err
}

// sdkRetryables is the SDK's own judgement of which errors are worth another
// attempt (connection errors, 500/502/503/504, throttling codes such as
// SlowDown, unmodelled 429s).
var sdkRetryables = awsretry.IsErrorRetryables(awsretry.DefaultRetryables)

func retryable(err error) bool {
	switch {
	case errors.Is(err, tile.ErrNotFound), errors.Is(err, tile.ErrNotModified), errors.Is(err, tile.ErrTooLarge), errors.Is(err, tile.ErrPreconditionFailed):
		return false
	case errors.As(err, new(*bodyError)):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// Only reached for a per-attempt timeout: the caller's own deadline
		// is checked before this.
		return true
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		if s := re.HTTPStatusCode(); s == http.StatusTooManyRequests || (s >= 500 && s != http.StatusNotImplemented) {
			return true
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "SlowDown" {
		return true
	}
	return sdkRetryables.IsErrorRetryable(err) == aws.TrueTernary
}

// retry runs attempt until it succeeds, fails for good, runs out of
// attempts, or the caller's deadline leaves no room for the next backoff.
// Each attempt has its own timeout (Config.Timeout), which covers the body.
func (c *Client) retry(ctx context.Context, op, name string, attempt func(context.Context) error) error {
	var prev, last error // the errors of the attempts before this one and of this one
	err := c.policy().Do(ctx, func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		err := attempt(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err != nil && ctx.Err() == nil && timedOut && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrStalled) {
			err = fmt.Errorf("attempt timed out after %v: %w: %w", c.cfg.Timeout, context.DeadlineExceeded, err)
		}
		prev, last = last, err
		return err
	})
	re, ok := errors.AsType[*retry.Error](err)
	if !ok {
		return err
	}
	switch re.Stop {
	case retry.StopEnded:
		// The caller's deadline or cancellation: say so first, so that
		// errors.Is(err, context.DeadlineExceeded) holds whatever the SDK
		// made of it. An earlier attempt's failure is the real cause when
		// the deadline cut a retry short, so it is kept too.
		if prev != nil {
			return fmt.Errorf("origin: %s %q: %w during attempt %d: %w; previous attempt: %w", op, name, re.Cause, re.Attempts, re.Err, prev)
		}
		return fmt.Errorf("origin: %s %q: %w: %w", op, name, re.Cause, re.Err)
	case retry.StopWait:
		return fmt.Errorf("origin: %s %q: %w: after %d attempts: %w", op, name, re.Cause, re.Attempts, re.Err)
	case retry.StopDeadline:
		return fmt.Errorf("origin: %s %q: gave up after %d attempt(s), deadline too near to retry: %w", op, name, re.Attempts, re.Err)
	case retry.StopPermanent:
		if errors.Is(re.Err, tile.ErrNotModified) {
			return re.Err
		}
		return fmt.Errorf("origin: %s %q: %w", op, name, re.Err)
	default:
		return fmt.Errorf("origin: %s %q: gave up after %d attempt(s): %w", op, name, re.Attempts, re.Err)
	}
}

// policy is the retry policy of every read: Config.MaxAttempts attempts,
// full-jitter backoff from backoffBase to backoffCap, and no wait into the
// caller's deadline.
func (c *Client) policy() retry.Policy {
	return retry.Policy{
		Attempts: c.cfg.MaxAttempts, Base: backoffBase, Cap: backoffCap, Jitter: retry.Full,
		Retryable: retryable, GiveUpNearDeadline: true,
	}
}

// IsTimeout reports whether err is a timing failure: the caller's deadline,
// a per-attempt timeout, a network timeout or a stalled body. The handler
// answers these with 504 and other origin failures with 502.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	return tile.IsTimeout(err)
}
