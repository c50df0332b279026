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
// ends the process.
func streamHandler(h http.Handler, log *slog.Logger) func(context.Context, *urlEvent) (*events.LambdaFunctionURLStreamingResponse, error) {
	wrapped := lambdaurl.Wrap(h)
	return func(ctx context.Context, ev *urlEvent) (*events.LambdaFunctionURLStreamingResponse, error) {
		if ev == nil || ev.notEvent {
			log.Warn("invocation is not a function-URL event; answered 400")
			body := notEventMessage + "\n"
			return &events.LambdaFunctionURLStreamingResponse{
				StatusCode: http.StatusBadRequest,
				Headers: map[string]string{
					"Content-Type":   "text/plain; charset=utf-8",
					"Cache-Control":  "no-store",
					"Content-Length": strconv.Itoa(len(body)),
				},
				Body: strings.NewReader(body),
			}, nil
		}
		return wrapped(ctx, ev.streamRequest())
	}
}
