// Package cdn purges the CDN (CloudFront) for the same prefixes the tiers
// purge: one CreateInvalidation per batch, with a caller reference derived
// from the batch so that a retried batch is not invalidated (and charged)
// twice, and a bounded, jittered retry when CloudFront throttles.
//
// A batch (InvalidateTargets) keeps within CloudFront's budget of paths in
// progress per distribution, across invocations and concurrent callers: it
// counts the paths of the invalidations still in progress, shrinks the batch
// through the caller's Shrink until it fits, and waits within its deadline
// when nothing fits. Directories and open prefixes become wildcard paths,
// single keys exact ones.
//
// The package knows nothing of how targets are coalesced: the caller (the
// purge pipeline) hands its coalescer in as a Shrink, so dependencies point
// one way, from purge to cdn.
package cdn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/smithy-go"

	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/wait"
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
	// Default: wait.Sleep.
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

	// CloudFront's quotas of invalidation paths in progress per distribution.
	MaxWildcardPathsInProgress = 15
	MaxExactPathsInProgress    = 3000
)

// ErrNoBudget means the distribution's invalidation budget did not free up
// before the wait ended; the caller should retry the batch later.
var ErrNoBudget = errors.New("cdn: too many invalidation paths in progress")

// Usage counts invalidation paths.
type Usage struct {
	Wildcard int // paths ending in *
	Exact    int
}

// Add sums two counts.
func (u Usage) Add(o Usage) Usage { return Usage{u.Wildcard + o.Wildcard, u.Exact + o.Exact} }

// Outcome is what InvalidateTargets did.
type Outcome struct {
	// Paths are the paths it sent; on an error, the ones it meant to send.
	Paths []string
	// Throttled counts the times CloudFront held the batch back:
	// CreateInvalidation answers of throttling or
	// TooManyInvalidationsInProgress (each retried), and waits for the
	// budget of paths in progress to free up.
	Throttled int
}

// Shrink coalesces a batch's targets further upward into at most limit
// targets that still cover all of them (purge.CoalesceConfig.Shrink is one).
// InvalidateTargets lowers limit until the batch fits the budget left.
type Shrink func(targets []string, limit int) []string

// Invalidator issues CloudFront invalidations. A nil or disabled Invalidator
// does nothing. Safe for concurrent use.
type Invalidator struct {
	api *cloudfront.Client
	cfg Config
	log *slog.Logger

	mu    sync.Mutex       // guards known
	known map[string]Usage // invalidation id → its paths; invalidations are immutable
}

// New returns an Invalidator that calls CloudFront through api.
func New(api *cloudfront.Client, cfg Config, log *slog.Logger) *Invalidator {
	cfg.MaxAttempts = defaults.Positive(cfg.MaxAttempts, DefaultMaxAttempts)
	cfg.BaseDelay = defaults.Positive(cfg.BaseDelay, DefaultBaseDelay)
	cfg.MaxDelay = defaults.Positive(cfg.MaxDelay, DefaultMaxDelay)
	cfg.BudgetWait = defaults.Positive(cfg.BudgetWait, DefaultBudgetWait)
	cfg.Reserve = defaults.Positive(cfg.Reserve, DefaultReserve)
	cfg.MaxWildcardPaths = defaults.Positive(cfg.MaxWildcardPaths, MaxWildcardPathsInProgress)
	cfg.MaxExactPaths = defaults.Positive(cfg.MaxExactPaths, MaxExactPathsInProgress)
	cfg.MaxListPages = defaults.Positive(cfg.MaxListPages, DefaultListPages)
	if cfg.Sleep == nil {
		cfg.Sleep = wait.Sleep
	}
	cfg.PathPrefix = normPathPrefix(cfg.PathPrefix)
	return &Invalidator{api: api, cfg: cfg, log: defaults.Logger(log), known: map[string]Usage{}}
}

// Enabled reports whether a distribution is configured.
func (v *Invalidator) Enabled() bool { return v != nil && v.cfg.DistributionID != "" }

// InvalidateTargets purges the distribution for a coalesced batch (see Paths
// for how targets become paths). batchID names the batch: the same batchID
// and paths give the same caller reference, so CloudFront answers a repeat
// with the invalidation it already made. Before creating the invalidation it
// counts the paths still in progress on the distribution; when the batch does
// not fit in what is left, shrink (which may be nil) coalesces it further.
// When nothing fits it waits with backoff, within BudgetWait and ctx's
// deadline less Reserve, and then fails with ErrNoBudget. CreateInvalidation
// is retried on throttling, TooManyInvalidationsInProgress and server errors
// up to MaxAttempts. Its Outcome says which paths it sent (or meant to send)
// and how often CloudFront held it back. A disabled Invalidator does nothing.
func (v *Invalidator) InvalidateTargets(ctx context.Context, targets []string, batchID string, shrink Shrink) (Outcome, error) {
	var out Outcome
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
			out.Paths = Paths(v.cfg.PathPrefix, targets)
			return out, err
		}
		free := Usage{Wildcard: v.cfg.MaxWildcardPaths - used.Wildcard, Exact: v.cfg.MaxExactPaths - used.Exact}
		batch, fits := Fit(v.cfg.PathPrefix, targets, free, shrink)
		if fits {
			paths := Paths(v.cfg.PathPrefix, batch)
			if len(batch) != len(targets) {
				v.log.InfoContext(ctx, "cdn batch coalesced to fit the invalidation budget", "targets", len(targets), "paths", len(paths),
					"wildcards_in_progress", used.Wildcard, "exact_in_progress", used.Exact)
			}
			refused, err := v.create(ctx, paths, batchID)
			out.Paths, out.Throttled = paths, out.Throttled+refused
			return out, err
		}
		out.Paths = Paths(v.cfg.PathPrefix, targets)
		d := v.backoff(attempt)
		if waited+d > limit {
			return out, fmt.Errorf("cdn: %d targets, %d wildcard and %d exact paths in progress after waiting %v: %w",
				len(targets), used.Wildcard, used.Exact, waited, ErrNoBudget)
		}
		out.Throttled++
		v.log.InfoContext(ctx, "cdn invalidation budget used up, waiting", "wildcards_in_progress", used.Wildcard, "exact_in_progress", used.Exact, "wait", d)
		if err := v.cfg.Sleep(ctx, d); err != nil {
			return out, fmt.Errorf("cdn: waiting for the invalidation budget: %w", err)
		}
		waited += d
	}
}

// Fit returns targets as they are when their paths (under pathPrefix) fit in
// free, or else shrunk through shrink to ever fewer entries until they do;
// ok is false, with targets unchanged, when none does.
func Fit(pathPrefix string, targets []string, free Usage, shrink Shrink) (batch []string, ok bool) {
	if within(Count(Paths(pathPrefix, targets)), free) {
		return targets, true
	}
	if shrink == nil || free.Wildcard < 0 || free.Exact < 0 {
		return targets, false
	}
	for limit := len(targets) - 1; limit >= 1; limit-- {
		if t := shrink(targets, limit); within(Count(Paths(pathPrefix, t)), free) {
			return t, true
		}
	}
	return targets, false
}

func within(u, free Usage) bool { return u.Wildcard <= free.Wildcard && u.Exact <= free.Exact }

// Count sorts CloudFront paths into wildcard (ending in *) and exact ones,
// as CloudFront counts them against its two budgets.
func Count(paths []string) Usage {
	var u Usage
	for _, p := range paths {
		if strings.HasSuffix(p, "*") {
			u.Wildcard++
		} else {
			u.Exact++
		}
	}
	return u
}

// InProgress counts the paths of the distribution's invalidations still in
// progress: one ListInvalidations page per 100 invalidations (at most
// MaxListPages), and one GetInvalidation per in-progress invalidation this
// Invalidator has not seen before (its own are known from their creation).
func (v *Invalidator) InProgress(ctx context.Context) (Usage, error) {
	var total Usage
	if !v.Enabled() {
		return total, nil
	}
	noRetry := func(o *cloudfront.Options) { o.Retryer = aws.NopRetryer{} }
	var inProgress []string
	var marker *string
	for page := 0; page < v.cfg.MaxListPages; page++ {
		out, err := v.api.ListInvalidations(ctx, &cloudfront.ListInvalidationsInput{
			DistributionId: aws.String(v.cfg.DistributionID), Marker: marker, MaxItems: aws.Int32(100),
		}, noRetry)
		if err != nil {
			return total, fmt.Errorf("cdn: list invalidations: %w", err)
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
	seen := make(map[string]Usage, len(inProgress))
	for _, id := range inProgress {
		v.mu.Lock()
		u, ok := v.known[id]
		v.mu.Unlock()
		if !ok {
			out, err := v.api.GetInvalidation(ctx, &cloudfront.GetInvalidationInput{
				DistributionId: aws.String(v.cfg.DistributionID), Id: aws.String(id),
			}, noRetry)
			if err != nil {
				return total, fmt.Errorf("cdn: get invalidation %s: %w", id, err)
			}
			if inv := out.Invalidation; inv != nil && inv.InvalidationBatch != nil && inv.InvalidationBatch.Paths != nil {
				u = Count(inv.InvalidationBatch.Paths.Items)
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
// InvalidateTargets says,
// and counts the answers that were throttling.
func (v *Invalidator) create(ctx context.Context, paths []string, batchID string) (throttledAnswers int, err error) {
	ref := CallerReference(batchID, paths)
	in := &cloudfront.CreateInvalidationInput{
		DistributionId: aws.String(v.cfg.DistributionID),
		InvalidationBatch: &types.InvalidationBatch{
			CallerReference: aws.String(ref),
			Paths:           &types.Paths{Quantity: aws.Int32(int32(len(paths))), Items: paths},
		},
	}
	// This loop is the retry policy; the SDK's own would multiply attempts
	// and does not retry TooManyInvalidationsInProgress.
	noRetry := func(o *cloudfront.Options) { o.Retryer = aws.NopRetryer{} }
	for attempt := 1; ; attempt++ {
		var out *cloudfront.CreateInvalidationOutput
		out, err = v.api.CreateInvalidation(ctx, in, noRetry)
		if err == nil {
			id := ""
			if out.Invalidation != nil {
				id = aws.ToString(out.Invalidation.Id)
			}
			if id != "" && (out.Invalidation.Status == nil || aws.ToString(out.Invalidation.Status) != "Completed") {
				v.mu.Lock()
				v.known[id] = Count(paths)
				v.mu.Unlock()
			}
			v.log.InfoContext(ctx, "cdn invalidation created", "id", id, "paths", len(paths), "caller_reference", ref, "attempts", attempt)
			return throttledAnswers, nil
		}
		if throttled(err) {
			throttledAnswers++
		}
		if !retryable(err) || attempt >= v.cfg.MaxAttempts {
			break
		}
		d := v.backoff(attempt)
		v.log.WarnContext(ctx, "cdn invalidation refused, retrying", "attempt", attempt, "wait", d, "err", err)
		if serr := v.cfg.Sleep(ctx, d); serr != nil {
			return throttledAnswers, fmt.Errorf("cdn: invalidate %d paths: %w (last error: %w)", len(paths), serr, err)
		}
	}
	return throttledAnswers, fmt.Errorf("cdn: invalidate %d paths: %w", len(paths), err)
}

// backoff is the wait before attempt+1: between half and all of an
// exponentially growing ceiling.
func (v *Invalidator) backoff(attempt int) time.Duration {
	ceil := v.cfg.BaseDelay << min(attempt-1, 20)
	if ceil <= 0 || ceil > v.cfg.MaxDelay {
		ceil = v.cfg.MaxDelay
	}
	return ceil/2 + rand.N(ceil/2+1)
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
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// IsWildcard reports whether a target stands for everything under it rather
// than for one key: a directory ("a/b/", or "" for everything) or an open
// prefix, marked by a trailing "*" ("osm/1*" is every key starting "osm/1",
// as the admin API purges). An S3 key that itself ends in "*" is taken as an
// open prefix too, which purges more than it, never less.
func IsWildcard(target string) bool {
	return target == "" || strings.HasSuffix(target, "/") || strings.HasSuffix(target, "*")
}

// Paths turns targets into CloudFront paths, escaped as CloudFront asks (see
// escapePath): a directory becomes the wildcard path "/" + pathPrefix + dir +
// "*" ("" becomes "/"+pathPrefix+"*"), an open prefix "p*" the wildcard path
// "/" + pathPrefix + p + "*", and a single key the exact path "/" +
// pathPrefix + key, which CloudFront counts against its far larger budget of
// exact paths. pathPrefix is normalised as Config.PathPrefix.
func Paths(pathPrefix string, targets []string) []string {
	pathPrefix = normPathPrefix(pathPrefix)
	paths := make([]string, 0, len(targets))
	for _, t := range targets {
		if IsWildcard(t) {
			paths = append(paths, "/"+escapePath(pathPrefix+strings.TrimSuffix(t, "*"))+"*")
			continue
		}
		paths = append(paths, "/"+escapePath(pathPrefix+t))
	}
	return paths
}

func normPathPrefix(p string) string {
	p = strings.TrimLeft(p, "/")
	if p != "" && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// escapePath percent-encodes what CloudFront asks to be encoded in an
// invalidation path (non-ASCII bytes and the characters RFC 1738 calls
// unsafe) and what would change the path's meaning there: "*" (the wildcard),
// "?" (a query string) and "%" itself. Everything else stays as it is,
// because CloudFront does not invalidate a path whose safe characters were
// encoded differently from the request.
func escapePath(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if safePathByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func safePathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("/-._$+!'(),;:@=&", c) >= 0
}

// CallerReference derives the caller reference of a batch: the hex SHA-256 of
// batchID and the sorted paths (64 characters; CloudFront allows 128).
func CallerReference(batchID string, paths []string) string {
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	h := sha256.New()
	h.Write([]byte(batchID))
	for _, p := range sorted {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
