// Package app assembles the sync worker from its configuration, once: the S3
// client and the purge journal, the CloudFront invalidator, the metrics, the
// settle delay and the purge pipeline (purge.Purger) under purge.Worker. It
// also owns the worker's Lambda edge: Handle takes the invocation as Lambda
// delivers it (an SQS batch, S3 notifications, an EventBridge event) and
// answers an SQS batch with its failed messages. The Lambda entry (worker/)
// and the local stack (infra/devstack) both start here, so the worker that
// runs locally is the one that runs on Lambda.
package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/cdn/cloudfront"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/purge/s3event"
)

// DefaultFunctionName is the FunctionName dimension of the metrics off
// Lambda (AWS_LAMBDA_FUNCTION_NAME unset).
const DefaultFunctionName = "tilesieve-sync-worker"

// Options adjust the assembly.
type Options struct {
	// AWS adjust the SDK's configuration (tests pass the local endpoints'
	// credentials and region).
	AWS awsclient.Settings
	// S3, when set, is the client of the journal instead of one built from
	// the configuration (the local stack passes its embedded endpoint's).
	S3 *s3.Client
	// MetricsOut receives the EMF lines when METRICS is on; nil writes none.
	MetricsOut io.Writer
	// SettleDelay, when set, replaces SYNC_INTERVAL + SYNC_TIMEOUT; the
	// local stack sets it, and says why.
	SettleDelay *time.Duration
	// Sleep is the settle delay's and the CDN's wait; tests inject a clock
	// through it. Default: a real sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// CDN, when set, is the CDN to invalidate instead of one built from
	// DISTRIBUTION_ID (the local stack's tests put a cache and a CloudFront
	// stand-in there).
	CDN *cloudfront.Invalidator
	// Logger receives the worker's logs; nil discards.
	Logger *slog.Logger
}

// App is an assembled sync worker.
type App struct {
	Worker  *purge.Worker
	Purger  *purge.Purger
	Journal *journal.Journal
	CDN     *cloudfront.Invalidator // nil without DISTRIBUTION_ID
	Metrics *obs.WorkerMetrics
	// Settle is the delay between a journal entry and its CDN invalidation.
	Settle time.Duration
	log    *slog.Logger
}

// New assembles the worker that cfg describes.
func New(ctx context.Context, cfg config.Worker, o Options) (*App, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &App{log: log, Settle: cfg.SyncInterval + cfg.SyncTimeout}
	if o.SettleDelay != nil {
		a.Settle = *o.SettleDelay
	}
	s3c := o.S3
	if s3c == nil || cfg.DistributionID != "" {
		awsCfg, err := awsclient.Load(ctx, o.AWS)
		if err != nil {
			return nil, fmt.Errorf("app: %w", err)
		}
		if s3c == nil {
			s3c = awsclient.S3(awsCfg, cfg.Endpoint, cfg.PathStyle)
		}
		if cfg.DistributionID != "" {
			a.CDN = cloudfront.NewFromConfig(awsCfg, cloudfront.Config{
				DistributionID: cfg.DistributionID,
				PathPrefix:     cfg.CDNPathPrefix,
				Sleep:          o.Sleep,
			}, log)
		}
	}
	a.Journal = journal.New(s3c, cfg.Bucket, cfg.JournalPrefix, journal.Options{Logger: log})
	var metrics purge.WorkerMetrics
	if cfg.Metrics.Enabled && o.MetricsOut != nil {
		m, err := obs.NewWorkerMetrics(obs.MetricsConfig{
			Namespace:    cfg.Metrics.Namespace,
			FunctionName: cmp.Or(lambdacontext.FunctionName, DefaultFunctionName),
		}, o.MetricsOut, time.Now())
		if err != nil {
			return nil, fmt.Errorf("app: metrics: %w", err)
		}
		a.Metrics, metrics = m, m
	}
	coalesce := purge.CoalesceConfig{Threshold: cfg.CoalesceThreshold, Cap: cfg.CoalesceCap}
	pcfg := purge.PurgerConfig{
		Coalesce: coalesce,
		// Wait until every busy instance has applied the journal entry
		// before purging the CDN, so none refills it with the old bytes.
		SettleDelay: a.Settle,
		Sleep:       o.Sleep,
		Metrics:     metrics,
	}
	if o.CDN.Enabled() {
		a.CDN = o.CDN
	}
	if a.CDN != nil {
		pcfg.CDN = a.CDN
	}
	wcfg := purge.WorkerConfig{Bucket: cfg.Bucket, TilesPrefix: cfg.TilesPrefix, Sources: cfg.Table(), Coalesce: coalesce, Metrics: metrics}
	if err := wcfg.Validate(); err != nil {
		return nil, err
	}
	if err := pcfg.Validate(); err != nil {
		return nil, err
	}
	a.Purger = purge.NewPurger(a.Journal, pcfg, log)
	a.Worker = purge.NewWorker(wcfg, a.Purger, log)
	log.Info("sync worker ready", "bucket", cfg.Bucket, "tiles_prefix", cfg.TilesPrefix,
		"journal_prefix", cfg.JournalPrefix, "sources", len(cfg.Sources), "cdn", a.CDN != nil, "settle", a.Settle,
		"metrics", a.Metrics != nil)
	return a, nil
}

// HandoffTimeout bounds the worker's run for one in-process handoff: the
// longest a Lambda invocation may run.
const HandoffTimeout = 15 * time.Minute

// Event is one invocation's payload, whichever shape Lambda delivers: an
// SQS batch (the queue's event source mapping), S3 notifications (a direct
// invoke) or an EventBridge event. s3event tells them apart.
type Event json.RawMessage

// UnmarshalJSON keeps the payload as it came, for s3event to decode.
func (e *Event) UnmarshalJSON(b []byte) error {
	*e = append((*e)[:0], b...)
	return nil
}

// Handle is the worker's Lambda handler. An SQS batch is answered with its
// failed messages (malformed ones; every message with a change if the purge
// could not be recorded; handed-over invalidations that failed) and no
// error, so only those come back; a direct or EventBridge invoke returns an
// error when the purge could not be recorded, so Lambda retries it. The
// metrics are flushed before it returns: Lambda may freeze the environment
// as soon as it has.
func (a *App) Handle(ctx context.Context, ev Event) (*events.SQSEventResponse, error) {
	defer a.Worker.Flush(ctx)
	b, err := s3event.Decode(ev)
	if err != nil {
		a.log.ErrorContext(ctx, "event not recognised", "err", err, "bytes", len(ev))
		return nil, err
	}
	res := a.Worker.Process(ctx, b)
	if b.Source != s3event.SourceSQS {
		return nil, res.Err
	}
	resp := &events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, id := range res.Failed {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
	}
	return resp, nil
}

// Handoff is an in-process purge.Handoff to this worker, for where there is
// no queue (the local stack, tests): it delivers each invalidation to Handle
// as an SQS batch of one message, the shape the worker's queue gives it on
// AWS, at once and while the caller waits. As behind a queue, the worker's
// run is not bound by the caller's deadline (an admin request's) but by its
// own, HandoffTimeout. It fails when the worker reports the message as
// failed.
func (a *App) Handoff() purge.Handoff { return &handoff{a: a} }

type handoff struct {
	a *App
	n atomic.Int64 // numbers the message ids
}

func (h *handoff) Hand(ctx context.Context, inv purge.Invalidation) error {
	body, err := inv.Message()
	if err != nil {
		return fmt.Errorf("app: handoff: %w", err)
	}
	id := fmt.Sprintf("handoff-%d", h.n.Add(1))
	raw, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, EventSource: "aws:sqs", Body: string(body)}}})
	if err != nil {
		return fmt.Errorf("app: handoff: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), HandoffTimeout)
	defer cancel()
	resp, err := h.a.Handle(ctx, Event(raw))
	if err != nil {
		return fmt.Errorf("app: handoff %s: %w", id, err)
	}
	if resp != nil && len(resp.BatchItemFailures) > 0 {
		return fmt.Errorf("app: handoff %s: the worker failed it", id)
	}
	return nil
}
