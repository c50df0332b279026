// Package cloudfront purges the CDN (CloudFront) for the same prefixes the
// tiers purge: one CreateInvalidation per batch, with a caller reference
// derived from the batch (cdn.CallerReference) so that a retried batch is not
// invalidated (and charged) twice, and a bounded, jittered retry when
// CloudFront throttles. Only the sync worker links it: the tile function
// hands its purges' CDN stage over to the worker.
//
// A batch (InvalidateTargets) keeps within CloudFront's budget of paths in
// progress per distribution, across invocations and concurrent callers: it
// counts the paths of the invalidations still in progress, shrinks the batch
// through the caller's cdn.Shrink until it fits, and waits within its
// deadline when nothing fits. Directories and open prefixes become wildcard
// paths, single keys exact ones (cdn.Paths).
package cloudfront

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	cfapi "github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/smithy-go"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/internal/retry"
	"github.com/tilesieve/tilesieve/shared/purge/cdn"
)

// Config configures an Invalidator.
type Config struct {
	// DistributionID is the CloudFront distribution; "" disables invalidation.
	DistributionID string
	// PathPrefix (CDN_PATH_PREFIX) is where the tiles sit in the
	// distribution's URL space: the path of key k is "/"+PathPrefix+k.
	// Leading slashes are dropped and a trailing one is added ("maps" and
	// "/maps/" both put key k at "/maps/k").
	PathPrefix string
	// MaxAttempts bounds the CreateInvalidation calls for one batch; default 5.
	MaxAttempts int
	// BaseDelay is the first backoff; it doubles per attempt up to MaxDelay,
	// and each wait is drawn between half of it and all of it (jitter that
	// spreads retrying workers but still lets an invalidation in progress
	// finish). Defaults 500ms and 10s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// BudgetWait bounds how long InvalidateTargets waits for CloudFront's
	// in-progress budget to free up; it stops earlier so that Reserve is
	// left before ctx's deadline. Default 5m.
	BudgetWait time.Duration
	// Reserve is the time InvalidateTargets leaves before ctx's deadline,
	// so that a Lambda handler can still report the batch as failed.
	// Default 3s.
	Reserve time.Duration
	// MaxWildcardPaths and MaxExactPaths are CloudFront's limits of paths
	// in progress per distribution; defaults 15 and 3,000.
	MaxWildcardPaths int
	MaxExactPaths    int
	// MaxListPages bounds the ListInvalidations pages (100 each) read per
	// count; default 3. CloudFront lists the newest first, and invalidations
	// in progress are recent.
	MaxListPages int
	// Sleep waits d or until ctx ends; tests inject a clock through it.
	// Default: a real sleep (retry.Sleep).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Defaults of Config.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 10 * time.Second
	DefaultBudgetWait  = 5 * time.Minute
	DefaultReserve     = 3 * time.Second
	DefaultListPages   = 3
)

// Invalidator issues CloudFront invalidations. A nil or disabled Invalidator
// does nothing. Safe for concurrent use.
type Invalidator struct {
	api   *cfapi.Client
	cfg   Config
	retry retry.Policy // CreateInvalidation's retries; its Backoff also paces the wait for budget
	log   *slog.Logger

	mu    sync.Mutex           // guards known
	known map[string]cdn.Usage // invalidation id → its paths; invalidations are immutable
}

// NewFromConfig returns an Invalidator that calls CloudFront with the SDK's
// configuration awsCfg.
func NewFromConfig(awsCfg aws.Config, cfg Config, log *slog.Logger) *Invalidator {
	return New(cfapi.NewFromConfig(awsCfg), cfg, log)
}

// New returns an Invalidator that calls CloudFront through api.
func New(api *cfapi.Client, cfg Config, log *slog.Logger) *Invalidator {
	cfg.MaxAttempts = defaults.Positive(cfg.MaxAttempts, DefaultMaxAttempts)
	cfg.BaseDelay = defaults.Positive(cfg.BaseDelay, DefaultBaseDelay)
	cfg.MaxDelay = defaults.Positive(cfg.MaxDelay, DefaultMaxDelay)
	cfg.BudgetWait = defaults.Positive(cfg.BudgetWait, DefaultBudgetWait)
	cfg.Reserve = defaults.Positive(cfg.Reserve, DefaultReserve)
	cfg.MaxWildcardPaths = defaults.Positive(cfg.MaxWildcardPaths, cdn.MaxWildcardPathsInProgress)
	cfg.MaxExactPaths = defaults.Positive(cfg.MaxExactPaths, cdn.MaxExactPathsInProgress)
	cfg.MaxListPages = defaults.Positive(cfg.MaxListPages, DefaultListPages)
	if cfg.Sleep == nil {
		cfg.Sleep = retry.Sleep
	}
	return &Invalidator{
		api: api, cfg: cfg, log: defaults.Logger(log), known: map[string]cdn.Usage{},
		retry: retry.Policy{
			Attempts: cfg.MaxAttempts, Base: cfg.BaseDelay, Cap: cfg.MaxDelay, Jitter: retry.Equal,
			Retryable: retryable, Wait: cfg.Sleep,
		},
	}
}

// Enabled reports whether a distribution is configured.
func (v *Invalidator) Enabled() bool { return v != nil && v.cfg.DistributionID != "" }

// InvalidateTargets purges the distribution for a coalesced batch (see cdn.Paths
// for how targets become paths). batchID names the batch: the same batchID
// and paths give the same caller reference, so CloudFront answers a repeat
// with the invalidation it already made. Before creating the invalidation it
// counts the paths still in progress on the distribution; when the batch does
// not fit in what is left, shrink (which may be nil) coalesces it further.
// When nothing fits it waits with backoff, within BudgetWait and ctx's
// deadline less Reserve, and then fails with cdn.ErrNoBudget. CreateInvalidation
// is retried on throttling, TooManyInvalidationsInProgress and server errors
// up to MaxAttempts. Its cdn.Outcome says which paths it sent (or meant to send)
// and how often CloudFront held it back. A disabled Invalidator does nothing.
func (v *Invalidator) InvalidateTargets(ctx context.Context, targets []string, batchID string, shrink cdn.Shrink) (cdn.Outcome, error) {
	var out cdn.Outcome
	if !v.Enabled() || len(targets) == 0 {
		return out, nil
	}
	limit := v.cfg.BudgetWait
	if dl, ok := ctx.Deadline(); ok {
		limit = min(limit, time.Until(dl)-v.cfg.Reserve)
	}
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		used, err := v.InProgress(ctx)
		if err != nil {
			out.Paths = cdn.Paths(v.cfg.PathPrefix, targets)
			return out, err
		}
		free := cdn.Usage{Wildcard: v.cfg.MaxWildcardPaths - used.Wildcard, Exact: v.cfg.MaxExactPaths - used.Exact}
		batch, fits := cdn.Fit(v.cfg.PathPrefix, targets, free, shrink)
		if fits {
			paths := cdn.Paths(v.cfg.PathPrefix, batch)
			if len(batch) != len(targets) {
				v.log.InfoContext(ctx, "cdn batch coalesced to fit the invalidation budget", "targets", len(targets), "paths", len(paths),
					"wildcards_in_progress", used.Wildcard, "exact_in_progress", used.Exact)
			}
			refused, err := v.create(ctx, paths, batchID)
			out.Paths, out.Throttled = paths, out.Throttled+refused
			return out, err
		}
		out.Paths = cdn.Paths(v.cfg.PathPrefix, targets)
		d := v.retry.Backoff(attempt)
		if waited+d > limit {
			return out, fmt.Errorf("cloudfront: %d targets, %d wildcard and %d exact paths in progress after waiting %v: %w",
				len(targets), used.Wildcard, used.Exact, waited, cdn.ErrNoBudget)
		}
		out.Throttled++
		v.log.InfoContext(ctx, "cdn invalidation budget used up, waiting", "wildcards_in_progress", used.Wildcard, "exact_in_progress", used.Exact, "wait", d)
		if err := v.cfg.Sleep(ctx, d); err != nil {
			return out, fmt.Errorf("cloudfront: waiting for the invalidation budget: %w", err)
		}
		waited += d
	}
}

// InProgress counts the paths of the distribution's invalidations still in
// progress: one ListInvalidations page per 100 invalidations (at most
// MaxListPages), and one GetInvalidation per in-progress invalidation this
// Invalidator has not seen before (its own are known from their creation).
func (v *Invalidator) InProgress(ctx context.Context) (cdn.Usage, error) {
	var total cdn.Usage
	if !v.Enabled() {
		return total, nil
	}
	noRetry := func(o *cfapi.Options) { o.Retryer = aws.NopRetryer{} }
	var inProgress []string
	var marker *string
	for page := 0; page < v.cfg.MaxListPages; page++ {
		out, err := v.api.ListInvalidations(ctx, &cfapi.ListInvalidationsInput{
			DistributionId: aws.String(v.cfg.DistributionID), Marker: marker, MaxItems: aws.Int32(100),
		}, noRetry)
		if err != nil {
			return total, fmt.Errorf("cloudfront: list invalidations: %w", err)
		}
		l := out.InvalidationList
		if l == nil {
			break
		}
		pageHas := false
		for _, it := range l.Items {
			if aws.ToString(it.Status) != "Completed" {
				inProgress = append(inProgress, aws.ToString(it.Id))
				pageHas = true
			}
		}
		// The newest come first: a page with nothing in progress means the
		// older pages have nothing either.
		if !pageHas || !aws.ToBool(l.IsTruncated) || l.NextMarker == nil {
			break
		}
		marker = l.NextMarker
	}
	seen := make(map[string]cdn.Usage, len(inProgress))
	for _, id := range inProgress {
		v.mu.Lock()
		u, ok := v.known[id]
		v.mu.Unlock()
		if !ok {
			out, err := v.api.GetInvalidation(ctx, &cfapi.GetInvalidationInput{
				DistributionId: aws.String(v.cfg.DistributionID), Id: aws.String(id),
			}, noRetry)
			if err != nil {
				return total, fmt.Errorf("cloudfront: get invalidation %s: %w", id, err)
			}
			if inv := out.Invalidation; inv != nil && inv.InvalidationBatch != nil && inv.InvalidationBatch.Paths != nil {
				u = cdn.Count(inv.InvalidationBatch.Paths.Items)
			}
		}
		seen[id] = u
		total = total.Add(u)
	}
	// Keep only what is still in progress: a completed invalidation never
	// comes back, so the cache stays as small as the budget.
	v.mu.Lock()
	for id := range v.known {
		if _, ok := seen[id]; !ok {
			delete(v.known, id)
		}
	}
	maps.Copy(v.known, seen)
	v.mu.Unlock()
	return total, nil
}

// create sends one CreateInvalidation with paths, retrying as
// InvalidateTargets says, and counts the answers that were throttling.
func (v *Invalidator) create(ctx context.Context, paths []string, batchID string) (throttledAnswers int, err error) {
	ref := cdn.CallerReference(batchID, paths)
	in := &cfapi.CreateInvalidationInput{
		DistributionId: aws.String(v.cfg.DistributionID),
		InvalidationBatch: &types.InvalidationBatch{
			CallerReference: aws.String(ref),
			Paths:           &types.Paths{Quantity: aws.Int32(int32(len(paths))), Items: paths},
		},
	}
	// The SDK's retryer is off: it would multiply attempts and does not
	// retry TooManyInvalidationsInProgress.
	noRetry := func(o *cfapi.Options) { o.Retryer = aws.NopRetryer{} }
	policy := v.retry
	policy.OnRetry = func(attempt int, d time.Duration, err error) {
		v.log.WarnContext(ctx, "cdn invalidation refused, retrying", "attempt", attempt, "wait", d, "err", err)
	}
	attempts := 0
	err = policy.Do(ctx, func(ctx context.Context) error {
		attempts++
		out, err := v.api.CreateInvalidation(ctx, in, noRetry)
		if err != nil {
			if throttled(err) {
				throttledAnswers++
			}
			return err
		}
		id := ""
		if out.Invalidation != nil {
			id = aws.ToString(out.Invalidation.Id)
		}
		if id != "" && (out.Invalidation.Status == nil || aws.ToString(out.Invalidation.Status) != "Completed") {
			v.mu.Lock()
			v.known[id] = cdn.Count(paths)
			v.mu.Unlock()
		}
		v.log.InfoContext(ctx, "cdn invalidation created", "id", id, "paths", len(paths), "caller_reference", ref, "attempts", attempts)
		return nil
	})
	if re, ok := errors.AsType[*retry.Error](err); ok {
		if re.Stop == retry.StopWait {
			return throttledAnswers, fmt.Errorf("cloudfront: invalidate %d paths: %w (last error: %w)", len(paths), re.Cause, re.Err)
		}
		return throttledAnswers, fmt.Errorf("cloudfront: invalidate %d paths: %w", len(paths), re.Err)
	}
	return throttledAnswers, err
}

// throttled reports whether CloudFront refused a call for its rate or its
// budget of invalidations in progress, rather than for what it asked.
func throttled(err error) bool {
	var tooMany *types.TooManyInvalidationsInProgress
	if errors.As(err, &tooMany) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded", "TooManyInvalidationsInProgress":
			return true
		}
	}
	return false
}

// retryable reports whether a failed CreateInvalidation may succeed later.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if throttled(err) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ServiceUnavailable", "InternalError", "InternalFailure":
			return true
		}
	}
	// 5xx, connection resets and timeouts, as the SDK classifies them.
	return awsretry.IsErrorRetryables(awsretry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}
