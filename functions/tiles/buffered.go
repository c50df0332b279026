package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tilesieve/tilesieve/functions/tiles/internal/pooled"
	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// maxBufferedPayload is Lambda's limit on a buffered response: 6 MB for the
// whole JSON payload. Base64 makes a body 4/3 larger, so binary bodies reach
// it sooner; the check is on the encoded payload, headers included.
const maxBufferedPayload = config.BufferedPayloadBytes

// urlEvent is the part of a function-URL event the server reads; the rest
// of the event is skipped by the decoder, not kept. Header keys arrive in
// lower case (the decoder matches them regardless of case).
type urlEvent struct {
	RawPath        string     `json:"rawPath"`
	RawQueryString string     `json:"rawQueryString"`
	Headers        urlHeaders `json:"headers"`
	RequestContext struct {
		DomainName string `json:"domainName"`
		HTTP       struct {
			Method   string `json:"method"`
			SourceIP string `json:"sourceIp"`
		} `json:"http"`
	} `json:"requestContext"`

	// notEvent marks a payload that is JSON but not a function-URL event
	// (an array, a string, an object of the wrong shape): answered 400.
	notEvent bool
}

// UnmarshalJSON decodes a function-URL event, in one pass where it can
// (decodeEvent), else with encoding/json. Any other JSON value decodes
// without error as an event marked notEvent, so that the handler answers
// it instead of the runtime failing the invocation.
func (ev *urlEvent) UnmarshalJSON(b []byte) error {
	was := *ev
	if decodeEvent(b, ev) {
		return nil
	}
	*ev = was
	type plain urlEvent // without this method
	if err := json.Unmarshal(b, (*plain)(ev)); err != nil {
		*ev = urlEvent{notEvent: true}
	}
	return nil
}

// urlHeaders are the request headers the server reads: the tile path's
// (tileserver.HeaderName) and the admin API's.
type urlHeaders struct {
	AcceptEncoding              string `json:"accept-encoding"`
	IfMatch                     string `json:"if-match"`
	IfNoneMatch                 string `json:"if-none-match"`
	IfModifiedSince             string `json:"if-modified-since"`
	IfUnmodifiedSince           string `json:"if-unmodified-since"`
	Range                       string `json:"range"`
	IfRange                     string `json:"if-range"`
	Origin                      string `json:"origin"`
	AccessControlRequestMethod  string `json:"access-control-request-method"`
	AccessControlRequestHeaders string `json:"access-control-request-headers"`
	Host                        string `json:"host"`
	XForwardedHost              string `json:"x-forwarded-host"`
	XForwardedProto             string `json:"x-forwarded-proto"`
	CDNSecret                   string `json:"x-tilesieve-cdn"`
	Authorization               string `json:"authorization"`
	Token                       string `json:"x-tilesieve-token"`
}

func (ev *urlEvent) request(req *tileserver.Request) {
	req.Method = ev.RequestContext.HTTP.Method
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	req.Path = ev.RawPath
	h := &ev.Headers
	req.Header = [tileserver.NumHeaderNames]string{
		tileserver.HdrAcceptEncoding:              h.AcceptEncoding,
		tileserver.HdrIfMatch:                     h.IfMatch,
		tileserver.HdrIfNoneMatch:                 h.IfNoneMatch,
		tileserver.HdrIfModifiedSince:             h.IfModifiedSince,
		tileserver.HdrIfUnmodifiedSince:           h.IfUnmodifiedSince,
		tileserver.HdrRange:                       h.Range,
		tileserver.HdrIfRange:                     h.IfRange,
		tileserver.HdrOrigin:                      h.Origin,
		tileserver.HdrAccessControlRequestMethod:  h.AccessControlRequestMethod,
		tileserver.HdrAccessControlRequestHeaders: h.AccessControlRequestHeaders,
		tileserver.HdrHost:                        h.Host,
		tileserver.HdrXForwardedHost:              h.XForwardedHost,
		tileserver.HdrXForwardedProto:             h.XForwardedProto,
		tileserver.HdrCDNSecret:                   h.CDNSecret,
	}
	if req.Header[tileserver.HdrHost] == "" {
		// A function URL is reached at its own domain.
		req.Header[tileserver.HdrHost] = ev.RequestContext.DomainName
	}
}

// buffered answers function-URL invocations in BUFFERED mode. A memory hit
// returns the tile's payload prepared when it entered the memory tier, as
// an io.Reader the runtime sends as it is: nothing is base64-encoded or
// JSON-escaped per request. Other answers are encoded here.
type buffered struct {
	srv  *tileserver.Server
	next http.Handler // the admin API
	log  *slog.Logger
}

var responses = sync.Pool{New: func() any { return new(tileserver.Response) }}

// Handle is the Lambda handler. It never returns an error: a payload that
// is not a function-URL event (null, {}, an array…) is a 400, a panic is a
// 500, and the process serves the next invocation.
func (b *buffered) Handle(ctx context.Context, ev *urlEvent) (out io.Reader, _ error) {
	if ev == nil || ev.notEvent {
		b.log.Warn("invocation is not a function-URL event; answered 400")
		return textPayload(http.StatusBadRequest, notEventMessage), nil
	}
	path := ev.RawPath // the recover below logs this copy, never ev: whatever panicked may be in it
	defer func() {
		if p := recover(); p != nil {
			b.log.Error("panic while answering; answered 500", "path", path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = textPayload(http.StatusInternalServerError, "internal error")
		}
	}()
	var req tileserver.Request
	ev.request(&req)
	resp := responses.Get().(*tileserver.Response)
	defer func() {
		resp.Release() // encode copied the body into its payload
		responses.Put(resp)
	}()
	b.srv.Serve(ctx, &req, resp)
	if resp.Admin {
		return b.admin(ctx, ev), nil
	}
	if p, ok := resp.Extra().(*payload); ok {
		// The runtime reads the payload after Handle returns, then closes
		// the reader, which lets the memory tier reuse it.
		before, after := p.around()
		return newHoleReader(before, resp.Timing(), resp.ReflectedOrigin(), after, resp.TakeLease()), nil
	}
	return b.encode(ev, resp), nil
}

// encode writes an answer as a function-URL payload.
func (b *buffered) encode(ev *urlEvent, resp *tileserver.Response) io.Reader {
	out := events.LambdaFunctionURLResponse{StatusCode: resp.Status, Headers: make(map[string]string, len(resp.Fields()))}
	contentType, encoding := "", ""
	for _, f := range resp.Fields() {
		v := strings.Join(f.Values, ", ")
		out.Headers[f.Name] = v
		switch f.Name {
		case "Content-Type":
			contentType = v
		case "Content-Encoding":
			encoding = v
		}
	}
	// The payload's size is known before it is built: the JSON of the
	// status and headers (small), plus the body as it will be encoded. An
	// answer past the limit is refused without building it.
	stub, err := json.Marshal(out)
	if err != nil {
		return textPayload(http.StatusInternalServerError, "encoding failed")
	}
	bodyLen, text := int64(len(resp.Body)), isText(contentType, encoding)
	if resp.Stream != nil {
		// A tile too big for the memory tier, read from disk or decoded as
		// it is read: its Content-Length, when it has one, is checked before
		// a byte is read.
		if n, err := strconv.ParseInt(resp.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
			bodyLen = n
		}
	}
	if size := payloadSize(len(stub), bodyLen, text, resp.Body); size > maxBufferedPayload {
		if resp.Stream != nil {
			resp.Stream.Close()
			resp.Stream = nil
		}
		return b.tooLarge(ev, size)
	}
	body := resp.Body
	var read *bytes.Buffer // the pooled buffer a stream was read into
	defer func() { pooled.PutBody(read) }()
	if resp.Stream != nil {
		// At most what fits a buffered payload (a stream without a
		// Content-Length is read this far to know), into a pooled buffer:
		// a disk hit leaves no garbage the size of its tile.
		size := int64(-1)
		if resp.Get("Content-Length") != "" {
			size = bodyLen
		}
		var err error
		read, err = pooled.ReadBody(resp.Stream, size, maxBufferedPayload/4*3+1)
		resp.Stream.Close()
		resp.Stream = nil
		if err != nil {
			b.log.Warn("tile stream failed", "path", ev.RawPath, "err", err)
			return textPayload(http.StatusBadGateway, "tile read failed")
		}
		body = read.Bytes()
		if len(body) > maxBufferedPayload/4*3 {
			return textPayload(http.StatusBadGateway,
				"tile exceeds the 6 MB limit of buffered function URLs; use INVOKE_MODE=RESPONSE_STREAM")
		}
		if size := payloadSize(len(stub), int64(len(body)), text, body); size > maxBufferedPayload {
			return b.tooLarge(ev, size)
		}
	}
	p := pooled.Build(stub, body, text && utf8.Valid(body))
	if p == nil {
		return textPayload(http.StatusInternalServerError, "encoding failed")
	}
	if n := p.Len(); n > maxBufferedPayload {
		p.Close()
		return b.tooLarge(ev, int64(n))
	}
	return p
}

// tooLarge is the answer to a payload of size bytes, past the buffered limit.
func (b *buffered) tooLarge(ev *urlEvent, size int64) io.Reader {
	b.log.Warn("response over the buffered 6 MB limit", "path", ev.RawPath, "bytes", size)
	return textPayload(http.StatusBadGateway,
		fmt.Sprintf("response of %d bytes exceeds the 6 MB limit of buffered function URLs; use INVOKE_MODE=RESPONSE_STREAM", size))
}

// payloadSize is the size of the payload whose JSON without a body (body
// "", isBase64Encoded false) is stubLen bytes, once a body of n bytes is in
// it: as a JSON string when it travels as text (body, when it is in memory,
// is scanned for what JSON escapes; a stream not read yet counts as n, the
// least it can take), else base64 (4/3) with isBase64Encoded true.
func payloadSize(stubLen int, n int64, text bool, body []byte) int64 {
	size := int64(stubLen)
	switch {
	case n == 0:
	case text && body == nil:
		size += n
	case text && utf8.Valid(body):
		size += jsonEscapedLen(body)
	default:
		size += int64(base64.StdEncoding.EncodedLen(int(n))) + int64(len("true")-len("false"))
	}
	return size
}

// jsonEscapedLen is the length of b inside a JSON string as encoding/json
// writes it (valid UTF-8, HTML characters escaped): what json.Marshal adds
// for b, without building it.
func jsonEscapedLen(b []byte) int64 {
	var n int64
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6 // \u00XX
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += int64(size)
		}
		i += size
	}
	return n
}

// admin serves the admin API through net/http, which it is written for.
func (b *buffered) admin(ctx context.Context, ev *urlEvent) io.Reader {
	req, err := ev.httpRequest(ctx)
	if err != nil {
		return textPayload(http.StatusBadRequest, "bad request")
	}
	rec := newRecorder()
	b.next.ServeHTTP(rec, req)
	p, err := json.Marshal(rec.response())
	if err != nil {
		return textPayload(http.StatusInternalServerError, "encoding failed")
	}
	return bytes.NewReader(p)
}

// httpRequest is the event as an *http.Request (no body: the admin API
// reads none).
func (ev *urlEvent) httpRequest(ctx context.Context) (*http.Request, error) {
	host := ev.RequestContext.DomainName
	if host == "" {
		host = "lambda-url.invalid"
	}
	target := "https://" + host + ev.RawPath
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, target, http.NoBody)
	if err != nil {
		return nil, err
	}
	h := &ev.Headers
	for name, v := range map[string]string{"Authorization": h.Authorization, admin.TokenHeader: h.Token,
		"X-Forwarded-Host": h.XForwardedHost, "X-Forwarded-Proto": h.XForwardedProto,
		tileserver.CDNSecretHeader: h.CDNSecret} {
		if v != "" {
			req.Header.Set(name, v)
		}
	}
	req.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	req.RequestURI = ev.RawPath
	return req, nil
}

// holeReader reads a prepared payload with its hole filled: the part
// before, the Server-Timing value and a reflected origin, the part after.
// It has no exported fields, so the runtime passes it through unencoded;
// the runtime closes it once sent, which releases the payload's bytes to
// the memory tier (lease).
type holeReader struct {
	parts [3][]byte
	hole  [128]byte
	lease memory.Lease
}

func newHoleReader(before []byte, timing, origin string, after []byte, lease memory.Lease) *holeReader {
	r := &holeReader{lease: lease}
	h := append(r.hole[:0], timing...)
	h = append(h, '"')
	if origin != "" {
		// Origins are from the configured list: scheme://host[:port], no
		// character that needs escaping in JSON.
		h = append(h, `,"Access-Control-Allow-Origin":"`...)
		h = append(h, origin...)
		h = append(h, `","Access-Control-Expose-Headers":"`+tileserver.ExposeHeaders+`"`...)
	}
	r.parts = [3][]byte{before, h, after}
	return r
}

func (r *holeReader) Read(p []byte) (int, error) {
	n := 0
	for i := range r.parts {
		if len(p) == 0 {
			break
		}
		m := copy(p, r.parts[i])
		r.parts[i] = r.parts[i][m:]
		p = p[m:]
		n += m
	}
	if n == 0 && len(r.parts[2]) == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Close releases the payload's bytes; it must not be read after.
func (r *holeReader) Close() error {
	r.parts = [3][]byte{}
	r.lease.Release()
	return nil
}

// WriteTo writes the rest of the payload to w without an intermediate copy.
func (r *holeReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for i := range r.parts {
		m, err := w.Write(r.parts[i])
		n += int64(m)
		r.parts[i] = r.parts[i][m:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// recorder collects an admin answer in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// Flush is a no-op: a buffered response goes out whole.
func (r *recorder) Flush() {}

func (r *recorder) response() *events.LambdaFunctionURLResponse {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	resp := &events.LambdaFunctionURLResponse{StatusCode: r.status, Headers: make(map[string]string, len(r.header))}
	for k, v := range r.header {
		if k == "Set-Cookie" {
			resp.Cookies = v
			continue
		}
		resp.Headers[k] = strings.Join(v, ",")
	}
	if _, ok := resp.Headers["Content-Length"]; !ok && r.status != http.StatusNotModified && r.status != http.StatusNoContent {
		resp.Headers["Content-Length"] = strconv.Itoa(r.body.Len())
	}
	body := r.body.Bytes()
	if isText(resp.Headers["Content-Type"], resp.Headers["Content-Encoding"]) && utf8.Valid(body) {
		resp.Body = string(body)
	} else {
		resp.Body = base64.StdEncoding.EncodeToString(body)
		resp.IsBase64Encoded = true
	}
	return resp
}

// isText reports whether a body can travel as a JSON string unencoded.
func isText(contentType, contentEncoding string) bool {
	if contentEncoding != "" {
		return false
	}
	ct := strings.ToLower(contentType)
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") || strings.Contains(ct, "xml") ||
		strings.Contains(ct, "javascript")
}

// textPayload is a short text answer as a payload.
func textPayload(status int, msg string) io.Reader {
	p, _ := json.Marshal(events.LambdaFunctionURLResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":   "text/plain; charset=utf-8",
			"Cache-Control":  "no-store",
			"Content-Length": strconv.Itoa(len(msg) + 1),
		},
		Body: msg + "\n",
	})
	return bytes.NewReader(p)
}
