// Command worker is the sync worker Lambda. It reacts to S3 changes (S3
// notifications directly, through SQS, or through EventBridge) by recording a
// purge of the changed tiles in the purge journal, which every tile function
// instance follows, and by invalidating the CDN for the same prefixes.
//
// The environment is read once (shared/config); the S3 and CloudFront clients
// and the worker are built once and shared by every invocation.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
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
	cfg, err := config.LoadWorker(config.OS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	log := obs.NewLogger(os.Stdout, cfg.LogLevel)
	w, err := build(context.Background(), cfg, log)
	if err != nil {
		log.Error("sync worker: init", "err", err)
		os.Exit(1)
	}
	lambda.Start(w.Handle)
}

// build makes the clients and the worker. opts add to the AWS configuration
// (tests pass the local endpoint's credentials).
func build(ctx context.Context, cfg config.Worker, log *slog.Logger, opts ...func(*awsconfig.LoadOptions) error) (*purge.Worker, error) {
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
	if err := wcfg.Validate(); err != nil {
		return nil, err
	}
	log.Info("sync worker ready", "bucket", cfg.Bucket, "tiles_prefix", cfg.TilesPrefix,
		"journal_prefix", cfg.JournalPrefix, "cdn", cfg.DistributionID != "", "settle", wcfg.SettleDelay)
	return purge.NewWorker(wcfg, journal, inv, log), nil
}
