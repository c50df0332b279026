package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"
)

// streamEvent is a function-URL event in RESPONSE_STREAM mode. As with
// urlEvent, any other JSON value decodes without error as an event marked
// notEvent, which the handler answers 400.
type streamEvent struct {
	events.LambdaFunctionURLRequest
	notEvent bool
}

// UnmarshalJSON decodes the event, or marks a payload that is not one.
func (ev *streamEvent) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &ev.LambdaFunctionURLRequest); err != nil {
		*ev = streamEvent{notEvent: true}
	}
	return nil
}

// notEventMessage is the body of the 400 for a payload that is not a
// function-URL event, in both modes.
const notEventMessage = "bad request: not a function URL event"

// streamHandler answers function-URL invocations in RESPONSE_STREAM mode
// through h. A null payload, or one that is not an event, is a 400 here:
// lambdaurl would dereference it, and a panic that reaches the runtime
// ends the process.
func streamHandler(h http.Handler, log *slog.Logger) func(context.Context, *streamEvent) (*events.LambdaFunctionURLStreamingResponse, error) {
	wrapped := lambdaurl.Wrap(h)
	return func(ctx context.Context, ev *streamEvent) (*events.LambdaFunctionURLStreamingResponse, error) {
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
		return wrapped(ctx, &ev.LambdaFunctionURLRequest)
	}
}
