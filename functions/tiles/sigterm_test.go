package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	fixtures "github.com/tilesieve/tilesieve/events"
	"github.com/tilesieve/tilesieve/shared/testkit/lambdatest"
	"github.com/tilesieve/tilesieve/shared/testkit/s3localtest"
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
