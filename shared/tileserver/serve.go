package tileserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/httpspec"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/variant"
)

// HeaderName names one of the request headers the server reads. Adapters
// fill Request.Header by these names, each from wherever their transport
// keeps it, and nothing else of a request's headers is read on the tile path.
type HeaderName uint8

// The request headers the tile path reads.
const (
	HdrAcceptEncoding HeaderName = iota
	HdrIfMatch
	HdrIfNoneMatch
	HdrIfModifiedSince
	HdrIfUnmodifiedSince
	HdrRange
	HdrIfRange
	HdrOrigin
	HdrAccessControlRequestMethod
	HdrAccessControlRequestHeaders
	// The host a request came through, for answers that name their own
	// URL (TileJSON, IIIF info.json) when PUBLIC_URL is not set.
	HdrHost
	HdrXForwardedHost
	HdrXForwardedProto
	// The CDN's proof that a request came through it (CDNSecretHeader):
	// the forwarded headers above are believed only with it.
	HdrCDNSecret
	// The media types an IIIF client accepts: info.json's is negotiated.
	HdrAccept
	NumHeaderNames // how many there are
)

var headerNames = [NumHeaderNames]string{
	"Accept-Encoding", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
	"Range", "If-Range", "Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers",
	"Host", "X-Forwarded-Host", "X-Forwarded-Proto", CDNSecretHeader, "Accept",
}

// String is the header's canonical name.
func (h HeaderName) String() string { return headerNames[h] }

// Request is what the server reads of a request, however it arrived: the
// core of the server never sees an *http.Request or a Lambda event.
type Request struct {
	Method string
	Path   string                 // escaped, as on the wire: "/osm/3/1/2.png"
	Header [NumHeaderNames]string // values by HeaderName, "" when absent

	from http.Header // set by HTTPRequest: the values are read from it instead
	// unescaped marks a Path that HTTPRequest took unescaped from net/http
	// (URL.Path, when the wire form was its plain escaping): its key needs
	// no decoding.
	unescaped bool
}

// HTTPRequest is the Request an *http.Request describes. Its headers are
// read from r.Header when the server needs them, not copied up front.
func HTTPRequest(r *http.Request, into *Request) {
	into.Method = r.Method
	// url.URL keeps no RawPath when the wire path is the plain escaping of
	// Path: then Path is the key KeyFromPath would decode, and neither
	// escaping nor decoding it again changes it. Otherwise RawPath is the
	// wire path, used as it is: EscapedPath would re-escape Path, losing an
	// IIIF id's %2F, when the wire path holds a byte it deems invalid
	// there (a bare ^, as browsers send IIIF's upscaling sizes).
	if r.URL.RawPath == "" {
		into.Path, into.unescaped = r.URL.Path, true
	} else {
		into.Path, into.unescaped = r.URL.RawPath, false
	}
	into.Header = [NumHeaderNames]string{HdrHost: r.Host} // net/http keeps Host out of r.Header
	into.from = r.Header
}

// get returns the value of header n.
func (r *Request) get(n HeaderName) string {
	if r.from == nil || n == HdrHost {
		return r.Header[n]
	}
	// Request headers are stored under canonical keys by net/http, so no
	// per-request canonicalisation.
	switch v := r.from[headerNames[n]]; len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	default:
		return strings.Join(v, ", ")
	}
}

// conditions are the request's conditional header values.
func (r *Request) conditions() httpspec.Conditions {
	return httpspec.Conditions{IfMatch: r.get(HdrIfMatch), IfNoneMatch: r.get(HdrIfNoneMatch),
		IfModifiedSince: r.get(HdrIfModifiedSince), IfUnmodifiedSince: r.get(HdrIfUnmodifiedSince)}
}

// Field is one response header: its canonical name and its values. Values
// are shared, capped slices: an adapter may hand them to net/http as they
// are (a later Add copies).
type Field struct {
	Name   string
	Values []string
}

// maxFields bounds the header fields of one answer.
const maxFields = 20

// Response is the server's answer: a status, header fields and a body that
// refers to cached bytes, never a copy. Adapters write it to their
// transport, then Release it: Body may be bytes the memory tier keeps off
// the heap, which it reuses only once released. A Response is reusable;
// Serve resets it, which releases it too.
type Response struct {
	Status int
	Body   []byte // nil for HEAD, 304 and other empty answers; Content-Length is among the fields
	// Stream, when not nil, is the body instead of Body: a tile too big for
	// the memory tier, read from its disk file as it is sent (or decoded as
	// it is read). The adapter reads it to the end and closes it; a read
	// error means the answer is broken (a corrupt file): stop sending.
	Stream io.ReadCloser
	// Admin reports a path under /_tilesieve/ other than the health check:
	// the core did not answer it; the adapter serves it with ServeHTTP.
	Admin bool

	fields  [maxFields]Field
	nfields int

	// When the answer is a memory hit in the tile's stored representation,
	// the adapter's Extra kept beside the tile; timing and origin are the
	// two per-request values it leaves open.
	extra   Extra
	timing  string        // the Server-Timing value, or ""
	elapsed time.Duration // from the start of Serve to the timing, when set
	origin  string        // a reflected CORS origin, or ""
	// lease keeps Body's bytes (a memory hit off the heap) from being
	// reused until the answer is written.
	lease memory.Lease
}

// Release lets the memory tier reuse the bytes Body refers to, once the
// answer is written; Body must not be read after. Releasing again does
// nothing.
func (r *Response) Release() { r.lease.Release() }

// TakeLease hands the lease on Body's bytes to the caller, which releases
// it once it has written them: for an adapter whose answer is read after
// it has given the Response back (a pooled Response, a reader the Lambda
// runtime reads later).
func (r *Response) TakeLease() memory.Lease {
	l := r.lease
	r.lease = memory.Lease{}
	return l
}

// Fields are the answer's header fields.
func (r *Response) Fields() []Field { return r.fields[:r.nfields] }

// Get returns the first value of the field named name (canonical), or "".
func (r *Response) Get(name string) string {
	for _, f := range r.Fields() {
		if f.Name == name && len(f.Values) > 0 {
			return f.Values[0]
		}
	}
	return ""
}

// Extra is, when the answer is a memory hit in the tile's stored
// representation, what Config.Extra kept beside the tile; nil otherwise.
func (r *Response) Extra() Extra { return r.extra }

// ReflectedOrigin is the CORS origin the answer reflects, or "".
func (r *Response) ReflectedOrigin() string { return r.origin }

// reset makes r an empty answer. It clears only the fields in use: the
// array is large, and a pooled Response is reset on every request.
func (r *Response) reset() {
	// TestResponseReset checks that this names every field.
	r.lease.Release()
	clear(r.fields[:r.nfields])
	r.Status, r.Body, r.Stream, r.Admin, r.nfields = 0, nil, nil, false, 0
	r.extra, r.timing, r.elapsed, r.origin = nil, "", 0, ""
}

// set adds a field with one value, shared or new.
func (r *Response) set(name string, values []string) {
	if r.nfields == maxFields {
		return
	}
	r.fields[r.nfields] = Field{Name: name, Values: values}
	r.nfields++
}

func (r *Response) setString(name, value string) { r.set(name, []string{value}) }

// Serve answers a request: tiles (GET, HEAD), CORS preflights, the health
// check. Admin routes are left to ServeHTTP (Response.Admin). ctx carries
// the invocation's deadline to every S3 call.
func (s *Server) Serve(ctx context.Context, req *Request, resp *Response) {
	resp.reset()
	// One clock read serves the request: its Server-Timing start, and the
	// now against which the journal and cached copies are judged.
	start := time.Now()
	now := s.nowAt(start)
	if adminPath(req) {
		resp.Admin = true
		return
	}
	s.stats.requests.Add(1)
	switch req.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		s.eng.Check(ctx, now, true)
		s.answerPreflight(req, resp)
		return
	default:
		s.eng.Check(ctx, now, true)
		resp.set("Allow", s.allow)
		s.answerPlain(req, resp, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if route, ok, err := iiif.ParsePath(req.Path); ok && s.images != nil {
		s.serveIIIF(ctx, req, resp, route, err, now, start)
		return
	}
	keyFrom := tile.KeyFromPath
	if req.unescaped {
		keyFrom = tile.KeyFromUnescapedPath
	}
	key, err := keyFrom(req.Path)
	if err != nil {
		s.eng.Check(ctx, now, false)
		s.stats.badRequests.Add(1)
		s.answerPlain(req, resp, http.StatusBadRequest, "bad tile path")
		s.logRequest(ctx, req, "", http.StatusBadRequest, 0, start)
		return
	}
	// The engine runs a due journal check beside the lookup, and starts one
	// soon due without waiting for it (tiers.Engine.Get).
	res, err := s.eng.Get(ctx, key, now)
	resp.lease = res.Lease
	t, src, stream := res.Tile, res.Source, res.Stream
	if errors.Is(err, tile.ErrNotFound) {
		if ct, csrc, ok, cerr := s.docs.Glyphs(ctx, key, now); ok {
			t, src, err = ct, csrc, cerr // a font stack not stored as one
		}
	}
	switch {
	case err == nil && stream != nil:
		s.answerStream(req, resp, key, t, stream, start)
	case err == nil:
		if p, _ := t.Prepared.(*prepared); p == nil || p.document {
			t = s.docs.Render(key, s.baseURL(req), t) // TileJSON and IIIF info.json name the URL they are served from
		}
		s.answerTile(req, resp, key, t, src, start)
	case errors.Is(err, docs.ErrBadGlyphKey):
		s.stats.badRequests.Add(1)
		s.answerPlain(req, resp, http.StatusBadRequest, "bad glyph range")
	case errors.Is(err, tile.ErrNotFound):
		s.answerNotFound(req, resp, key, src)
	default:
		s.answerError(req, resp, key, err)
	}
	s.costField(resp, res.Cost)
	s.logRequest(ctx, req, key, resp.Status, src, start)
	s.record(key, src, resp, start)
}

// CostHeader names what an answer fetched from S3 cost: "requests=1;
// bytes=31337", on answers S3 was asked for (misses and revalidations;
// opening an archive or image is not counted), so a regression in
// requests per tile shows in any client.
const CostHeader = "X-Tilesieve-S3"

// costField adds CostHeader to an answer that cost S3 requests, and the
// time its pixels took (an image's answer decoded, resampled, encoded) to
// its Server-Timing as "pixels".
func (s *Server) costField(resp *Response, c tile.FetchCost) {
	if c.Requests > 0 {
		resp.setString(CostHeader, "requests="+strconv.FormatInt(c.Requests, 10)+"; bytes="+strconv.FormatInt(c.Bytes, 10))
	}
	if c.Pixels <= 0 {
		return
	}
	for i, f := range resp.Fields() {
		if f.Name == "Server-Timing" {
			v := f.Values[0] + ", pixels;dur=" + strconv.FormatFloat(float64(c.Pixels.Microseconds())/1000, 'f', 3, 64)
			resp.fields[i], resp.timing = Field{Name: f.Name, Values: []string{v}}, v
			return
		}
	}
}

// answerNotFound answers a key no tier or origin has: a remembered 404
// answers from memory, a fresh one from the origin.
func (s *Server) answerNotFound(req *Request, resp *Response, key string, src source) {
	s.stats.notFound.Add(1)
	if src == 0 {
		src = srcOrigin
	}
	s.answerMissing(req, resp, key, src)
}

// answerError answers an error of the tiers or the origin: 500 for a
// panic, 504 for a timeout, else 502, with a short public reason.
func (s *Server) answerError(req *Request, resp *Response, key string, err error) {
	status, msg := http.StatusBadGateway, "origin error"
	var refused *tile.RefusedError
	switch {
	case errors.Is(err, tiers.ErrPanic):
		status, msg = http.StatusInternalServerError, "internal error"
	case errors.Is(err, variant.ErrTooLarge), errors.Is(err, tile.ErrTooLarge):
		msg = "tile larger than MAX_TILE_BYTES"
	case isTimeout(err):
		status, msg = http.StatusGatewayTimeout, "origin timeout"
	case errors.As(err, &refused):
		msg = "invalid or unsupported " + refused.Format + " archive"
	}
	if refused == nil { // logged once, when it was refused
		s.log.Warn("tile not served", "key", key, "status", status, "err", err)
	}
	resp.set("X-Cache", xCacheValues[srcOrigin])
	s.answerPlain(req, resp, status, msg)
}

// adminPath reports whether the request's path, decoded, is under
// /_tilesieve/. Every adapter routes on the decoded path, as net/http does,
// so /%5ftilesieve/… reaches the admin routes too, never the tile path.
func adminPath(req *Request) bool {
	p := req.Path
	if strings.HasPrefix(p, adminPrefix) {
		return true
	}
	if req.unescaped || strings.IndexByte(p, '%') < 0 {
		return false
	}
	d, err := url.PathUnescape(p)
	return err == nil && strings.HasPrefix(d, adminPrefix)
}

// record counts an answer in the metrics, by tileset (the key's first
// segment) and answering tier.
func (s *Server) record(key string, src source, resp *Response, start time.Time) {
	if s.metrics == nil {
		return
	}
	tier := obs.TierMiss
	switch {
	case resp.Status >= 500:
		tier = obs.TierError
	case src == srcMemory:
		tier = obs.TierMemory
	case src == srcDisk:
		tier = obs.TierDisk
	case src == srcRevalidated:
		tier = obs.TierRevalidated
	case src == srcStale:
		tier = obs.TierStale
	}
	tileset, _, _ := strings.Cut(key, "/")
	d := resp.elapsed // the tile answers' Server-Timing read the clock already
	if d == 0 {
		d = time.Since(start)
	}
	s.metrics.Request(tileset, tier, int64(len(resp.Body)), d)
	s.metrics.MaybeFlush(start.Add(d))
}

// ServeHTTP serves tiles through Serve. The reserved path space
// /_tilesieve/ is not the server's: Route hands it to the admin API, and
// without that it is a 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		http.NotFound(w, r)
		return
	}
	var req Request
	HTTPRequest(r, &req)
	var resp Response // on the stack: Serve and WriteHTTP keep no pointer to it
	s.Serve(r.Context(), &req, &resp)
	WriteHTTP(w, &resp)
	resp.Release()
}

// WriteHTTP writes resp to w. A disk hit's body goes from its file to the
// connection without a copy through the process where w allows it
// (disk.Body.SendTo: sendfile under net/http), and through a pooled buffer
// where it does not.
func WriteHTTP(w http.ResponseWriter, resp *Response) {
	h := w.Header()
	for _, f := range resp.Fields() {
		h[f.Name] = f.Values
	}
	w.WriteHeader(resp.Status)
	if resp.Stream != nil {
		defer resp.Stream.Close()
		var err error
		if s, ok := resp.Stream.(sender); ok {
			_, err = s.SendTo(w)
		} else {
			_, err = io.Copy(w, resp.Stream)
		}
		if err != nil {
			// Fewer bytes than the Content-Length went out: net/http closes
			// the connection, and the client sees a broken answer, never a
			// complete wrong one.
			return
		}
		return
	}
	if len(resp.Body) > 0 {
		w.Write(resp.Body)
	}
}

// sender is a body that writes itself to a writer, from its file where it
// can: *disk.Body.
type sender interface {
	SendTo(w io.Writer) (int64, error)
}

func (s *Server) logRequest(ctx context.Context, req *Request, key string, status int, src source, start time.Time) {
	if !s.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "request",
		slog.String("method", req.Method),
		slog.String("key", key),
		slog.Int("status", status),
		slog.String("cache", xCache(src)),
		slog.Duration("dur", time.Since(start)),
	)
}

func isTimeout(err error) bool { return tile.IsTimeout(err) }
