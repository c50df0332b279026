package app

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/purge"
)

// QueueHandoff hands admin purges' CDN invalidations to the sync worker as
// messages on the worker's own queue, beside the S3 notifications.
//
// A queue message rather than a path driven by the journal: the worker
// already consumes this queue, so a handed-over invalidation gets its settle
// delay, CDN budget, retries and dead-letter queue exactly as an S3 change
// does, and is applied within seconds; the tile function needs only
// sqs:SendMessage on that one queue, no CloudFront permission and no
// distribution id (which it could only learn from a second deploy). A
// journal-driven path would need the worker to poll the journal on a
// schedule and keep a position of its own.
type QueueHandoff struct {
	api *sqs.Client
	url string
}

// NewQueueHandoff sends to the queue at url with the SDK's configuration
// (awsclient.Load: the function's role; AWS_ENDPOINT_URL off AWS) adjusted
// by s.
func NewQueueHandoff(ctx context.Context, url string, s awsclient.Settings) (*QueueHandoff, error) {
	awsCfg, err := awsclient.Load(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("app: SQS client: %w", err)
	}
	return &QueueHandoff{api: sqs.NewFromConfig(awsCfg), url: url}, nil
}

// Hand sends inv to the worker's queue.
func (h *QueueHandoff) Hand(ctx context.Context, inv purge.Invalidation) error {
	body, err := inv.Message()
	if err != nil {
		return fmt.Errorf("app: encode the invalidation: %w", err)
	}
	if _, err := h.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.url), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("app: send the invalidation to the worker's queue: %w", err)
	}
	return nil
}
