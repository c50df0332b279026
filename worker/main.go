// Command worker is the sync worker Lambda. It reacts to S3 changes (S3
// notifications directly, through SQS, or through EventBridge) by recording a
// purge of the changed tiles in the purge journal, which every tile function
// instance follows, and by invalidating the CDN for the same prefixes after
// the settle delay; it also applies the CDN invalidations of admin purges,
// which the tile function hands over on the same queue.
//
// The environment is read once (shared/config); worker/app assembles the
// clients, the metrics and the worker once, shared by every invocation, and
// owns the typed handler. Logs are JSON lines carrying each invocation's
// request and trace ids (shared/obs); the metrics are one EMF line per
// invocation.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/worker/app"
)

func main() {
	start := time.Now()
	cfg, err := config.LoadWorker(config.OS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	// Log lines and metric lines share stdout, a line at a time.
	out, env, log := obs.NewOutput(os.Stdout, cfg.LogLevel)
	a, err := app.New(context.Background(), cfg, app.Options{Logger: log, MetricsOut: out})
	if err != nil {
		log.Error("sync worker: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(handler(env, log, obs.InitDurations{Config: time.Since(start)}, a))
}

// handler is the Lambda handler: it marks the invocation for the logs (the
// first is the environment's cold start, which logs the init durations) and
// hands the event to the worker.
func handler(env *obs.Environment, log *slog.Logger, init obs.InitDurations, a *app.App) func(context.Context, app.Event) (*events.SQSEventResponse, error) {
	return func(ctx context.Context, ev app.Event) (*events.SQSEventResponse, error) {
		env.Begin(ctx)
		env.LogColdStart(ctx, log, init)
		return a.Handle(ctx, ev)
	}
}
