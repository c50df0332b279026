package tileserver_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/tileserver"
	"github.com/tilesieve/tilesieve/shared/tileserver/servertest"
)

// BenchmarkServeMemoryHitMetrics is a memory hit through the core with the
// tile function's metrics off and on, side by side in one run: the cost of
// metrics on the hot path (requests by tier and tileset, bytes, latency,
// the flush check).
//
//	go test -run '^$' -bench BenchmarkServeMemoryHitMetrics -benchmem -count 6 ./shared/tileserver/
func BenchmarkServeMemoryHitMetrics(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var m servertest.Metrics
			if mode == "on" {
				tm, err := obs.NewTileMetrics(obs.MetricsConfig{FunctionName: "bench", Interval: time.Hour}, io.Discard, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				m = tm
			}
			e := newEnv(b, func(e *env, _ *servertest.Config, _ *origin.Config) { e.metrics = m })
			e.put("b/1/0/0.png", make([]byte, 30<<10), "image/png", "")
			var req tileserver.Request
			req.Method, req.Path = "GET", "/b/1/0/0.png"
			resp := new(tileserver.Response)
			e.srv.Serve(context.Background(), &req, resp) // the miss
			b.ReportAllocs()
			for b.Loop() {
				e.srv.Serve(context.Background(), &req, resp)
				if resp.Status != 200 {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
