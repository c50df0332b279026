// Package cdn purges the CDN (CloudFront) for the same prefixes the tiers
// purge: one CreateInvalidation per batch, each prefix a wildcard path, with a
// caller reference derived from the batch so that a retried batch is not
// invalidated (and charged) twice, and a bounded, jittered retry when
// CloudFront throttles or has too many invalidations in progress.
package cdn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"
	"github.com/aws/smithy-go"
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
}

// Defaults of Config.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 10 * time.Second
)

// Invalidator issues CloudFront invalidations. A nil or disabled Invalidator
// does nothing. Safe for concurrent use.
type Invalidator struct {
	api *cloudfront.Client
	cfg Config
	log *slog.Logger
}

// New returns an Invalidator that calls CloudFront through api.
func New(api *cloudfront.Client, cfg Config, log *slog.Logger) *Invalidator {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = DefaultBaseDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	cfg.PathPrefix = normPathPrefix(cfg.PathPrefix)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Invalidator{api: api, cfg: cfg, log: log}
}

// Enabled reports whether a distribution is configured.
func (v *Invalidator) Enabled() bool { return v != nil && v.cfg.DistributionID != "" }

// Invalidate purges the distribution for the key prefixes of one batch with
// one CreateInvalidation call, and returns the paths it sent. batchID names
// the batch: the same batchID and prefixes give the same caller reference, so
// CloudFront answers a repeat with the invalidation it already made. It
// retries throttling, TooManyInvalidationsInProgress and server errors up to
// MaxAttempts, and stops when ctx ends. A disabled Invalidator returns nil,
// nil.
func (v *Invalidator) Invalidate(ctx context.Context, prefixes []string, batchID string) ([]string, error) {
	if !v.Enabled() || len(prefixes) == 0 {
		return nil, nil
	}
	paths := Paths(v.cfg.PathPrefix, prefixes)
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
	var err error
	for attempt := 1; ; attempt++ {
		var out *cloudfront.CreateInvalidationOutput
		out, err = v.api.CreateInvalidation(ctx, in, noRetry)
		if err == nil {
			id := ""
			if out.Invalidation != nil {
				id = aws.ToString(out.Invalidation.Id)
			}
			v.log.Info("cdn invalidation created", "id", id, "paths", len(paths), "caller_reference", ref, "attempts", attempt)
			return paths, nil
		}
		if !retryable(err) || attempt >= v.cfg.MaxAttempts {
			break
		}
		d := v.backoff(attempt)
		v.log.Warn("cdn invalidation refused, retrying", "attempt", attempt, "wait", d, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return paths, fmt.Errorf("cdn: invalidate %d paths: %w (last error: %w)", len(paths), ctx.Err(), err)
		case <-t.C:
		}
	}
	return paths, fmt.Errorf("cdn: invalidate %d paths: %w", len(paths), err)
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

// retryable reports whether a failed CreateInvalidation may succeed later.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var tooMany *types.TooManyInvalidationsInProgress
	if errors.As(err, &tooMany) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded",
			"ServiceUnavailable", "InternalError", "InternalFailure", "TooManyInvalidationsInProgress":
			return true
		}
	}
	// 5xx, connection resets and timeouts, as the SDK classifies them.
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// Paths turns key prefixes into CloudFront wildcard paths: "/" + pathPrefix +
// prefix + "*", escaped as CloudFront asks (see escapePath). The prefix ""
// becomes "/"+pathPrefix+"*". pathPrefix is normalised as Config.PathPrefix.
func Paths(pathPrefix string, prefixes []string) []string {
	pathPrefix = normPathPrefix(pathPrefix)
	paths := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		paths = append(paths, "/"+escapePath(pathPrefix+p)+"*")
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
