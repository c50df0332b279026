package main

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
)

// streamRequest is the event as lambdaurl takes it, with the headers the
// server reads (urlHeaders) and no body (the server reads none). The
// runtime's decoder has checked the payload once already; decoding it
// into urlEvent (decodeEvent's one pass) rather than the whole
// events.LambdaFunctionURLRequest with encoding/json does not check it
// again, and gives both modes the same decoding: what one answers 400 as
// not an event, so does the other.
func (ev *urlEvent) streamRequest() *events.LambdaFunctionURLRequest {
	req := &events.LambdaFunctionURLRequest{RawPath: ev.RawPath, RawQueryString: ev.RawQueryString}
	req.RequestContext.DomainName = ev.RequestContext.DomainName
	req.RequestContext.HTTP.Method = ev.RequestContext.HTTP.Method
	req.RequestContext.HTTP.SourceIP = ev.RequestContext.HTTP.SourceIP
	h := reflect.ValueOf(&ev.Headers).Elem()
	for i, name := range headerTags() {
		if v := h.Field(i).String(); v != "" {
			if req.Headers == nil {
				req.Headers = make(map[string]string, 8)
			}
			req.Headers[name] = v
		}
	}
	return req
}

// headerTags are urlHeaders' JSON tags by field index: the names function
// URLs send the headers under.
var headerTags = sync.OnceValue(func() []string {
	t := reflect.TypeFor[urlHeaders]()
	tags := make([]string, t.NumField())
	for i := range tags {
		tags[i] = t.Field(i).Tag.Get("json")
	}
	return tags
})

// notEventMessage is the body of the 400 for a payload that is not a
// function-URL event, in both modes.
const notEventMessage = "bad request: not a function URL event"

// streamHandler answers function-URL invocations in RESPONSE_STREAM mode
// through h. A null payload, or one that is not an event, is a 400 here:
// lambdaurl would dereference it, and a panic that reaches the runtime
// ends the process. So is an event whose method or path
// http.NewRequest refuses (a bad escape, a method with a space): the only
// error lambdaurl returns, and the client's, which as a failed invocation
// would reach the client as a 502 and count as the function's error.
func streamHandler(h http.Handler, log *slog.Logger) func(context.Context, *urlEvent) (*events.LambdaFunctionURLStreamingResponse, error) {
	wrapped := lambdaurl.Wrap(h)
	return func(ctx context.Context, ev *urlEvent) (*events.LambdaFunctionURLStreamingResponse, error) {
		if ev == nil || ev.notEvent {
			log.Warn("invocation is not a function-URL event; answered 400")
			return streamedBadRequest(notEventMessage), nil
		}
		resp, err := wrapped(ctx, ev.streamRequest())
		if err != nil {
			log.Info("request line refused; answered 400", "err", err)
			return streamedBadRequest("bad request"), nil
		}
		return resp, nil
	}
}

// streamedBadRequest is a 400 with msg as its body.
func streamedBadRequest(msg string) *events.LambdaFunctionURLStreamingResponse {
	body := msg + "\n"
	return &events.LambdaFunctionURLStreamingResponse{
		StatusCode: http.StatusBadRequest,
		Headers: map[string]string{
			"Content-Type":   "text/plain; charset=utf-8",
			"Cache-Control":  "no-store",
			"Content-Length": strconv.Itoa(len(body)),
		},
		Body: strings.NewReader(body),
	}
}
