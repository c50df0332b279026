package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/origin/s3local/s3localtest"
	"github.com/tilesieve/tilesieve/shared/testkit/lambdatest"
)

// TestBootstrapExitsOnSIGTERM: when the emulator ends the execution
// environment (SIGTERM, then SIGKILL at its deadline, 600 ms later), the
// bootstrap writes its last metrics line and exits by itself within 500 ms,
// in both invoke modes, instead of being killed at the deadline.
func TestBootstrapExitsOnSIGTERM(t *testing.T) {
	bootstrap := lambdatest.Bootstrap(t, "github.com/tilesieve/tilesieve/functions/tiles")
	s3e := s3localtest.Start(t, "tiles")
	health, err := fixtures.FS.ReadFile("url-health.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"BUFFERED", "RESPONSE_STREAM"} {
		t.Run(mode, func(t *testing.T) {
			emu := lambdatest.Start(t, bootstrap, append(lambdatest.S3Env(s3e.URL), lambdatest.Env(
				"TILES_BUCKET", "tiles", "TILES_PREFIX", "tiles/", "INVOKE_MODE", mode, "METRICS", "true",
				"DISK_CACHE_BYTES", "0",
			)...)...)
			out := emu.Invoke(t, health)
			if mode == "BUFFERED" {
				var r events.LambdaFunctionURLResponse
				if err := json.Unmarshal(out, &r); err != nil || r.StatusCode != http.StatusOK {
					t.Fatalf("health: got %+v, %v; want 200", r, err)
				}
			}
			took := emu.Stop(t)
			log := emu.Output()
			if emu.Killed() {
				t.Errorf("the bootstrap was killed at the emulator's deadline (the emulator took %v to stop), want it to exit on SIGTERM\n%s", took, log)
			}
			if took > 500*time.Millisecond {
				t.Errorf("the emulator took %v to stop, want the bootstrap gone within 500ms of SIGTERM", took)
			}
			_, after, ok := strings.Cut(log, "Received signal")
			if !ok {
				t.Fatalf("the emulator logged no signal\n%s", log)
			}
			if !strings.Contains(after, `"CloudWatchMetrics"`) {
				t.Errorf("got no metrics line after the signal, want the last interval flushed\n%s", log)
			}
			t.Logf("emulator stopped %v after its interrupt", took.Round(time.Millisecond))
		})
	}
}

// TestRegisterExtension: the SIGTERM extension registers as the Extensions
// API asks (its name, no events) and parks its event/next call with the
// identifier it was given; a refused registration is an error for the
// join, which the bootstrap logs and serves on.
func TestRegisterExtension(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		status  int
		id      string
		wantErr bool
	}{
		{"registered", http.StatusOK, "ext-1", false},
		{"refused", http.StatusForbidden, "", true},
		{"no identifier", http.StatusOK, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nexts := make(chan string, 1)
			// ended releases a parked event/next at the end of the test. The
			// request's context alone does not: closing the connection under
			// a GET that reused the register's connection makes the client's
			// transport send it again on a new one, which Close then waits for.
			ended := make(chan struct{})
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/2020-01-01/extension/register":
					body, _ := io.ReadAll(r.Body)
					if r.Method != http.MethodPost || r.Header.Get("Lambda-Extension-Name") != sigtermExtension || string(body) != `{"events":[]}` {
						t.Errorf("register: got %s %q %s, want POST named %s with no events", r.Method, r.Header.Get("Lambda-Extension-Name"), body, sigtermExtension)
					}
					if tt.id != "" {
						w.Header().Set("Lambda-Extension-Identifier", tt.id)
					}
					w.WriteHeader(tt.status)
				case "/2020-01-01/extension/event/next":
					select {
					case nexts <- r.Header.Get("Lambda-Extension-Identifier"):
					default: // a resend after the test took the first
					}
					select { // parked, as Lambda parks it
					case <-r.Context().Done():
					case <-ended:
					}
				default:
					t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
				}
			}))
			t.Cleanup(func() { close(ended); api.Close() })
			err := registerExtension(strings.TrimPrefix(api.URL, "http://"))
			if (err != nil) != tt.wantErr {
				t.Fatalf("got %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr {
				if got := <-nexts; got != tt.id {
					t.Errorf("event/next with identifier %q, want %q", got, tt.id)
				}
			}
		})
	}
}
