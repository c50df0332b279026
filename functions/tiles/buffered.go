package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// maxBufferedPayload is Lambda's limit on a buffered response: 6 MB for the
// whole JSON payload. Base64 makes a body 4/3 larger, so binary bodies reach
// it sooner; the check is on the encoded payload, headers included.
const maxBufferedPayload = 6 * 1024 * 1024

// bufferedHandler adapts h to function-URL invocations in BUFFERED mode:
// the request event becomes an *http.Request, the response is collected and
// returned as one event, binary bodies base64-encoded.
func bufferedHandler(h http.Handler, log *slog.Logger) func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLResponse, error) {
	return func(ctx context.Context, ev *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLResponse, error) {
		req, err := requestFromEvent(ctx, ev)
		if err != nil {
			return textResponse(http.StatusBadRequest, "bad request"), nil
		}
		rec := newRecorder()
		h.ServeHTTP(rec, req)
		resp := rec.response()
		if n := payloadSize(resp); n > maxBufferedPayload {
			log.Warn("response over the buffered 6 MB limit", "path", ev.RawPath, "bytes", n)
			return textResponse(http.StatusBadGateway,
				fmt.Sprintf("response of %d bytes exceeds the 6 MB limit of buffered function URLs; use INVOKE_MODE=RESPONSE_STREAM", n)), nil
		}
		return resp, nil
	}
}

func requestFromEvent(ctx context.Context, ev *events.LambdaFunctionURLRequest) (*http.Request, error) {
	var body io.Reader = strings.NewReader(ev.Body)
	if ev.IsBase64Encoded {
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
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
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	for _, c := range ev.Cookies {
		req.Header.Add("Cookie", c)
	}
	req.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	req.RequestURI = ev.RawPath
	return req, nil
}

// recorder collects a response in memory.
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

func payloadSize(r *events.LambdaFunctionURLResponse) int {
	n := len(r.Body) + 128
	for k, v := range r.Headers {
		n += len(k) + len(v) + 6
	}
	return n
}

func textResponse(status int, msg string) *events.LambdaFunctionURLResponse {
	return &events.LambdaFunctionURLResponse{
		StatusCode: status,
		Headers: map[string]string{
			"Content-Type":   "text/plain; charset=utf-8",
			"Cache-Control":  "no-store",
			"Content-Length": strconv.Itoa(len(msg) + 1),
		},
		Body: msg + "\n",
	}
}
