// Package queue hands admin purges' CDN invalidations to the sync worker as
// messages on the worker's own SQS queue (PURGE_QUEUE_URL), beside the S3
// notifications it consumes: a handed-over invalidation then gets the
// settle delay, CDN budget, retries and dead-letter queue of an S3 change,
// and the tile function needs only sqs:SendMessage on that queue, no
// CloudFront permission and no distribution id.
//
// What it promises: one SendMessage per invalidation, as the SDK's SQS
// client would send it (AWS JSON 1.0, SigV4 with the function's
// credentials, the answer's MD5OfMessageBody checked), to the endpoint the
// AWS SDKs would choose for SQS; throttling, 5xx answers, transport errors
// and a wrong MD5 are retried, a refusal (no such queue) is not; every
// error is prefixed "queue: ".
package queue

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
	"github.com/tilesieve/tilesieve/shared/internal/retry"
	"github.com/tilesieve/tilesieve/shared/purge"
)

// Handoff is a purge.Handoff that sends each invalidation to the worker's
// queue. It is safe for concurrent use.
type Handoff struct {
	hc       aws.HTTPClient
	creds    aws.CredentialsProvider
	region   string
	endpoint string // where the request goes, see endpoint
	queue    string
	signer   *v4.Signer
	retry    retry.Policy
}

// Retries: attempts in all (Settings.RetryMaxAttempts overrides), the first
// backoff (doubling, each wait drawn between half of it and all of it), and
// the bound of one attempt when ctx has no deadline.
const (
	handoffAttempts   = 3
	handoffBackoff    = 100 * time.Millisecond
	handoffTryTimeout = 10 * time.Second
)

// NewHandoff sends to the queue at queueURL with the SDK's configuration
// (awsclient.Load: the function's role; AWS_ENDPOINT_URL off AWS) adjusted
// by s.
func NewHandoff(ctx context.Context, queueURL string, s awsclient.Settings) (*Handoff, error) {
	u, ok := httpurl.Parse(queueURL)
	if !ok {
		return nil, fmt.Errorf("queue: purge queue URL %q: want an http or https URL", queueURL)
	}
	awsCfg, err := awsclient.Load(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("queue: SQS configuration: %w", err)
	}
	if awsCfg.Credentials == nil {
		return nil, errors.New("queue: SQS configuration: no credentials")
	}
	ep, err := endpoint(os.Getenv, s.BaseEndpoint, aws.ToString(awsCfg.BaseEndpoint), u)
	if err != nil {
		return nil, err
	}
	h := &Handoff{
		hc: awsCfg.HTTPClient, creds: aws.NewCredentialsCache(awsCfg.Credentials), region: awsCfg.Region,
		endpoint: ep, queue: queueURL, signer: v4.NewSigner(),
		retry: retry.Policy{
			Attempts: handoffAttempts, Base: handoffBackoff, Jitter: retry.Equal, Retryable: retryable,
		},
	}
	if h.hc == nil {
		h.hc = &http.Client{}
	}
	if awsCfg.RetryMaxAttempts > 0 {
		h.retry.Attempts = awsCfg.RetryMaxAttempts
	}
	return h, nil
}

// endpoint is where SendMessage goes, chosen as the AWS SDKs choose a
// service's endpoint: one set in code (explicit) first; then, unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true, AWS_ENDPOINT_URL_SQS before
// the global one (global: AWS_ENDPOINT_URL, as awsclient.Load read it);
// else the queue URL's own host, SQS's regional endpoint.
func endpoint(getenv func(string) string, explicit, global string, queue *url.URL) (string, error) {
	name, e := "BaseEndpoint", explicit
	if e == "" && !strings.EqualFold(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true") {
		name, e = "AWS_ENDPOINT_URL_SQS", getenv("AWS_ENDPOINT_URL_SQS")
		if e == "" {
			name, e = "AWS_ENDPOINT_URL", global
		}
	}
	if e == "" {
		return queue.Scheme + "://" + queue.Host, nil
	}
	if _, ok := httpurl.Parse(e); !ok {
		return "", fmt.Errorf("queue: SQS endpoint %s=%q: want an http or https URL", name, e)
	}
	return strings.TrimSuffix(e, "/"), nil
}

// Hand sends inv to the worker's queue.
func (h *Handoff) Hand(ctx context.Context, inv purge.Invalidation) error {
	body, err := inv.Message()
	if err != nil {
		return fmt.Errorf("queue: encode the invalidation: %w", err)
	}
	if err := h.send(ctx, string(body)); err != nil {
		return fmt.Errorf("queue: send the invalidation to the worker's queue: %w", err)
	}
	return nil
}

// sqsError is an SQS error answer.
type sqsError struct {
	status       int
	code, detail string
}

func (e *sqsError) Error() string {
	return fmt.Sprintf("SQS SendMessage: %d %s: %s", e.status, e.code, e.detail)
}

// retryable reports whether SQS may take the message on another attempt:
// any failure but an SQS answer that is neither throttling nor SQS failing
// on its side.
func retryable(err error) bool {
	e, ok := errors.AsType[*sqsError](err)
	return !ok || e.status >= 500 || e.status == http.StatusTooManyRequests ||
		strings.Contains(e.code, "Throttl") // ThrottlingException, RequestThrottled
}

// send makes one SendMessage of body, retried by h.retry.
func (h *Handoff) send(ctx context.Context, body string) error {
	payload, err := json.Marshal(struct {
		QueueUrl    string
		MessageBody string
	}{h.queue, body})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	payloadHash := hex.EncodeToString(sum[:])
	err = h.retry.Do(ctx, func(ctx context.Context) error { return h.try(ctx, payload, payloadHash, body) })
	if re, ok := errors.AsType[*retry.Error](err); ok {
		return re.Err
	}
	return err
}

// try is one signed SendMessage request.
func (h *Handoff) try(ctx context.Context, payload []byte, payloadHash, body string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, handoffTryTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.endpoint+"/", bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	creds, err := h.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	// Signed here, not sent through the SDK's SQS client, whose package init
	// every cold start of the tile function would pay for this one call.
	if err := h.signer.SignHTTP(ctx, creds, req, payloadHash, "sqs", h.region, time.Now()); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return answerError(resp, answer)
	}
	var out struct{ MessageId, MD5OfMessageBody string }
	if err := json.Unmarshal(answer, &out); err != nil {
		return fmt.Errorf("SQS SendMessage: undecodable answer: %w", err)
	}
	if want := md5.Sum([]byte(body)); out.MD5OfMessageBody != hex.EncodeToString(want[:]) {
		return fmt.Errorf("SQS SendMessage: MD5OfMessageBody %q does not match the message sent (%x)", out.MD5OfMessageBody, want)
	}
	return nil
}

// answerError is the *sqsError of an answer that is not a 200.
func answerError(resp *http.Response, answer []byte) error {
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	json.Unmarshal(answer, &e) // a body that is not SQS's leaves the status alone to tell
	code := e.Type[strings.LastIndexByte(e.Type, '#')+1:]
	if q, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Query-Error"), ";"); q != "" {
		code = q
	}
	return &sqsError{status: resp.StatusCode, code: code, detail: e.Message}
}
