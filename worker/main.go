// Command worker is the sync worker Lambda. It reacts to S3 changes (S3
// notifications directly, through SQS, or through EventBridge) by recording a
// purge of the changed tiles in the purge journal, which every tile function
// instance follows, and by invalidating the CDN for the same prefixes.
//
// The environment is read once (shared/config); the S3 and CloudFront clients,
// the metrics and the worker are built once and shared by every invocation.
// Logs are JSON lines carrying each invocation's request and trace ids
// (shared/obs); the metrics are one EMF line per invocation.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/cdn"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/purge"
)

func main() {
	start := time.Now()
	cfg, err := config.LoadWorker(config.OS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	// Log lines and metric lines share stdout, a line at a time.
	out := &obs.LineWriter{W: os.Stdout}
	env := obs.NewEnvironment()
	log := slog.New(env.Handler(obs.NewJSONHandler(out, cfg.LogLevel)))
	w, err := build(context.Background(), cfg, log, out)
	if err != nil {
		log.Error("sync worker: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(handler(env, log, obs.InitDurations{Config: time.Since(start)}, w))
}

// handler is the Lambda handler: it marks the invocation for the logs (the
// first is the environment's cold start, which logs the init durations) and
// hands the event to the worker.
func handler(env *obs.Environment, log *slog.Logger, init obs.InitDurations, w *purge.Worker) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		env.Begin(ctx)
		env.LogColdStart(ctx, log, init)
		return w.Handle(ctx, raw)
	}
}

// defaultFunctionName is the FunctionName dimension of the metrics off
// Lambda (AWS_LAMBDA_FUNCTION_NAME unset).
const defaultFunctionName = "tilesieve-sync-worker"

// build makes the clients, the metrics (written to metricsOut) and the
// worker. opts add to the AWS configuration (tests pass the local
// endpoint's credentials).
func build(ctx context.Context, cfg config.Worker, log *slog.Logger, metricsOut io.Writer, opts ...func(*awsconfig.LoadOptions) error) (*purge.Worker, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	s3c := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	journal := purge.NewJournal(s3c, cfg.Bucket, cfg.JournalPrefix, purge.JournalOptions{Logger: log})
	var inv purge.Invalidator
	if cfg.DistributionID != "" {
		inv = cdn.New(cloudfront.NewFromConfig(awsCfg), cdn.Config{
			DistributionID: cfg.DistributionID,
			PathPrefix:     cfg.CDNPathPrefix,
		}, log)
	}
	wcfg := purge.WorkerConfig{
		Bucket:      cfg.Bucket,
		TilesPrefix: cfg.TilesPrefix,
		Coalesce:    purge.CoalesceConfig{Threshold: cfg.CoalesceThreshold, Cap: cfg.CoalesceCap},
		// Wait until every busy instance has applied the journal entry before
		// purging the CDN, so none refills it with the old bytes.
		SettleDelay: cfg.SyncInterval + cfg.SyncTimeout,
	}
	if cfg.Metrics.Enabled {
		m, err := obs.NewWorkerMetrics(obs.MetricsConfig{
			Namespace:    cfg.Metrics.Namespace,
			FunctionName: cmp.Or(lambdacontext.FunctionName, defaultFunctionName),
		}, metricsOut, time.Now())
		if err != nil {
			return nil, err
		}
		wcfg.Metrics = m
	}
	if err := wcfg.Validate(); err != nil {
		return nil, err
	}
	log.Info("sync worker ready", "bucket", cfg.Bucket, "tiles_prefix", cfg.TilesPrefix,
		"journal_prefix", cfg.JournalPrefix, "cdn", cfg.DistributionID != "", "settle", wcfg.SettleDelay,
		"metrics", cfg.Metrics.Enabled)
	return purge.NewWorker(wcfg, journal, inv, log), nil
}
