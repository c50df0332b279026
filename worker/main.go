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
	"io"
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
	if len(os.Args) > 1 {
		os.Exit(answerArgs(os.Args[1:], os.Stdout, os.Stderr))
	}
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

// usage is the answer to -h, --help and help: the worker takes no flags,
// so it says what it is and where its settings come from.
const usage = `usage: worker

worker is tilesieve's sync worker, a Lambda function: it turns S3 uploads
and deletions (S3 notifications, through SQS or EventBridge) into purges,
recorded in the purge journal every tile function instance follows, and
into CDN invalidations. It runs under the Lambda runtime only.

It takes no flags: it reads its configuration from the environment, once
at start. These are the variables, with their defaults;
docs/configuration.md says what each does:

`

// answerArgs answers a command line, which Lambda never passes
// (config.AnswerArgs).
func answerArgs(args []string, stdout, stderr io.Writer) int {
	return config.AnswerArgs("worker", usage, config.WorkerVars(), args, stdout, stderr)
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
