package app

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
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/wait"
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
//
// The message is one SendMessage in SQS's JSON protocol (AWS JSON 1.0),
// signed with the SDK's SigV4 signer and the function's credentials, not a
// call through the SDK's SQS client: that package's init (its serialization
// schemas and endpoint tables) costs every cold start of the tile function
// about 0.8 ms of CPU (measured: a bootstrap that only links it, against one
// that does not), for the one call the admin API makes. The request is what
// the SDK's client sends: POST to the queue's endpoint with the
// X-Amz-Target header, retried on throttling, 5xx answers and transport
// errors, and the answer's MD5OfMessageBody checked as the SDK checks it.
type QueueHandoff struct {
	hc       aws.HTTPClient
	creds    aws.CredentialsProvider
	region   string
	endpoint string // where the request goes: BaseEndpoint, else the queue URL's scheme and host
	queue    string
	attempts int
	signer   *v4.Signer
	sleep    func(ctx context.Context, d time.Duration) error
}

// Handoff retries: attempts in all (Settings.RetryMaxAttempts overrides),
// the first backoff (doubling, each wait drawn between half of it and all of
// it), and the bound of one attempt when ctx has no deadline.
const (
	handoffAttempts   = 3
	handoffBackoff    = 100 * time.Millisecond
	handoffTryTimeout = 10 * time.Second
)

// NewQueueHandoff sends to the queue at queueURL with the SDK's
// configuration (awsclient.Load: the function's role; AWS_ENDPOINT_URL off
// AWS) adjusted by s.
func NewQueueHandoff(ctx context.Context, queueURL string, s awsclient.Settings) (*QueueHandoff, error) {
	u, err := url.Parse(queueURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("app: purge queue URL %q: want an http or https URL", queueURL)
	}
	awsCfg, err := awsclient.Load(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("app: SQS configuration: %w", err)
	}
	if awsCfg.Credentials == nil {
		return nil, errors.New("app: SQS configuration: no credentials")
	}
	h := &QueueHandoff{
		hc: awsCfg.HTTPClient, creds: aws.NewCredentialsCache(awsCfg.Credentials), region: awsCfg.Region,
		endpoint: u.Scheme + "://" + u.Host, queue: queueURL,
		attempts: handoffAttempts, signer: v4.NewSigner(), sleep: wait.Sleep,
	}
	if e := aws.ToString(awsCfg.BaseEndpoint); e != "" {
		h.endpoint = strings.TrimSuffix(e, "/")
	}
	if h.hc == nil {
		h.hc = &http.Client{}
	}
	if awsCfg.RetryMaxAttempts > 0 {
		h.attempts = awsCfg.RetryMaxAttempts
	}
	return h, nil
}

// Hand sends inv to the worker's queue.
func (h *QueueHandoff) Hand(ctx context.Context, inv purge.Invalidation) error {
	body, err := inv.Message()
	if err != nil {
		return fmt.Errorf("app: encode the invalidation: %w", err)
	}
	if err := h.send(ctx, string(body)); err != nil {
		return fmt.Errorf("app: send the invalidation to the worker's queue: %w", err)
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
// throttled or failing on its side.
func (e *sqsError) retryable() bool {
	return e.status >= 500 || e.status == http.StatusTooManyRequests ||
		strings.Contains(e.code, "Throttl") // ThrottlingException, RequestThrottled
}

// send makes one SendMessage of body, retried as the type says.
func (h *QueueHandoff) send(ctx context.Context, body string) error {
	payload, err := json.Marshal(struct {
		QueueUrl    string
		MessageBody string
	}{h.queue, body})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	payloadHash := hex.EncodeToString(sum[:])
	backoff := handoffBackoff
	for attempt := 1; ; attempt++ {
		err := h.try(ctx, payload, payloadHash, body)
		var api *sqsError
		if err == nil || attempt >= h.attempts || ctx.Err() != nil || (errors.As(err, &api) && !api.retryable()) {
			return err
		}
		if serr := h.sleep(ctx, backoff/2+rand.N(backoff/2+1)); serr != nil {
			return err
		}
		backoff *= 2
	}
}

// try is one signed SendMessage request.
func (h *QueueHandoff) try(ctx context.Context, payload []byte, payloadHash, body string) error {
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
	var out struct{ MessageId, MD5OfMessageBody string }
	if err := json.Unmarshal(answer, &out); err != nil {
		return fmt.Errorf("SQS SendMessage: undecodable answer: %w", err)
	}
	if want := md5.Sum([]byte(body)); out.MD5OfMessageBody != hex.EncodeToString(want[:]) {
		return fmt.Errorf("SQS SendMessage: MD5OfMessageBody %q does not match the message sent (%x)", out.MD5OfMessageBody, want)
	}
	return nil
}
