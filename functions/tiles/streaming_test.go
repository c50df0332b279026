package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

	fixtures "github.com/tilesieve/tilesieve/events"
)

// seenRequest is what the handler lambdaurl wraps is handed for ev.
func seenRequest(t *testing.T, ev *events.LambdaFunctionURLRequest) *http.Request {
	t.Helper()
	var seen *http.Request
	wrapped := lambdaurl.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r }))
	resp, err := wrapped(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil { // the handler has returned
		t.Fatal(err)
	}
	return seen
}

// TestStreamRequest: for every function-URL fixture, and for an event
// carrying every header the server reads (in mixed case, beside headers it
// does not read), the request the streaming handler hands the server from
// urlEvent.streamRequest has the method, URL, host, remote address and
// values of those headers that lambdaurl gives it from the whole event
// decoded by encoding/json.
func TestStreamRequest(t *testing.T) {
	t.Parallel()
	payloads := map[string][]byte{}
	for _, name := range urlFixtures(t) {
		payloads[name] = fixtures.Read(t, name)
	}
	var all map[string]any
	if err := json.Unmarshal(fixtures.Read(t, "url-get-tile.json"), &all); err != nil {
		t.Fatal(err)
	}
	headers := map[string]any{"user-agent": "curl/8", "cookie": "a=b", "x-amz-cf-id": "abc"}
	for i, tag := range headerTags() {
		if i%2 == 1 {
			tag = strings.ToUpper(tag)
		}
		headers[tag] = "value of " + tag
	}
	all["headers"] = headers
	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	payloads["every header"] = b

	for name, b := range payloads {
		t.Run(name, func(t *testing.T) {
			var whole events.LambdaFunctionURLRequest
			if err := json.Unmarshal(b, &whole); err != nil {
				t.Fatal(err)
			}
			var ev urlEvent
			if err := json.Unmarshal(b, &ev); err != nil || ev.notEvent {
				t.Fatalf("urlEvent: %v (not an event: %v)", err, ev.notEvent)
			}
			want, got := seenRequest(t, &whole), seenRequest(t, ev.streamRequest())
			if got.Method != want.Method || got.URL.String() != want.URL.String() || got.Host != want.Host || got.RemoteAddr != want.RemoteAddr {
				t.Errorf("got %s %s host %q from %q, want %s %s host %q from %q",
					got.Method, got.URL, got.Host, got.RemoteAddr, want.Method, want.URL, want.Host, want.RemoteAddr)
			}
			for _, tag := range headerTags() {
				if g, w := got.Header.Values(tag), want.Header.Values(tag); !slices.Equal(g, w) {
					t.Errorf("header %s: got %q, want %q", tag, g, w)
				}
			}
			if name == "every header" && len(got.Header) != len(headerTags()) {
				t.Errorf("got %d headers, want the %d the server reads: %v", len(got.Header), len(headerTags()), got.Header)
			}
		})
	}
}
