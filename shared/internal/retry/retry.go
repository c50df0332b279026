// Package retry is the product's one retry policy: how many attempts, how
// long to wait between them (exponential backoff with jitter, capped), which
// errors are worth another attempt, and whether to give up rather than wait
// into the caller's deadline. Each client that retries (S3 reads, CloudFront
// invalidations, the purge hand-off to the worker's queue) keeps its own
// numbers and its own judgement of its errors in a Policy and runs its
// attempts through Do.
//
// What it promises: Do makes at most Policy.Attempts attempts, stops once ctx
// has ended, and returns nil or an *Error that says why it stopped and
// carries the last attempt's error. The waits go through
// Policy.Wait and the jitter through Policy.Rand, so tests replace the clock
// and the random source instead of sleeping.
package retry

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Jitter is how a wait is drawn below the backoff's ceiling.
type Jitter int

const (
	// Full draws a wait uniformly in [0, ceiling): retrying clients spread
	// out the most.
	Full Jitter = iota
	// Equal draws a wait uniformly in [ceiling/2, ceiling]: spread out, yet
	// never much shorter than the ceiling, so what was busy has time to
	// finish.
	Equal
)

// Policy is one client's retry rules. The zero value makes one attempt.
// A Policy is a value: copy it to vary a field for one call.
type Policy struct {
	// Attempts is how many times Do calls op in all, the first included;
	// below 1 counts as 1.
	Attempts int
	// Base is the ceiling of the wait after the first attempt; it doubles
	// after each further attempt, up to Cap (0: no cap).
	Base, Cap time.Duration
	// Jitter draws each wait below its ceiling; Full by default.
	Jitter Jitter
	// Retryable reports whether an attempt's error may succeed on another
	// attempt; nil retries every error.
	Retryable func(error) bool
	// GiveUpNearDeadline makes Do stop at once (StopDeadline) when ctx's
	// deadline would pass before the next wait ends, instead of sleeping
	// into the deadline for an attempt that could not finish.
	GiveUpNearDeadline bool
	// OnRetry, when set, is told of each retry before its wait: the
	// attempts made, the wait, and the error being retried.
	OnRetry func(attempts int, wait time.Duration, err error)
	// Wait waits d or until ctx ends, returning ctx's error then; nil is
	// Sleep. Tests inject a fake clock here.
	Wait func(ctx context.Context, d time.Duration) error
	// Rand returns a uniform random number in [0, n) for the jitter; nil is
	// math/rand/v2's N.
	Rand func(n int64) int64
}

// Stop says why Do gave up.
type Stop int

const (
	// StopPermanent: the attempt's error is not retryable.
	StopPermanent Stop = iota + 1
	// StopExhausted: every attempt failed.
	StopExhausted
	// StopEnded: ctx ended while an attempt ran.
	StopEnded
	// StopWait: the wait before the next attempt failed (ctx ended in it).
	StopWait
	// StopDeadline: ctx's deadline is nearer than the next wait
	// (Policy.GiveUpNearDeadline).
	StopDeadline
)

// Error is Do's answer when op did not succeed. It unwraps to the last
// attempt's error and, for StopEnded and StopWait, to Cause.
type Error struct {
	Stop     Stop
	Attempts int   // attempts made
	Err      error // the last attempt's error
	Cause    error // ctx's error (StopEnded) or the wait's (StopWait); nil otherwise
}

func (e *Error) Error() string {
	switch e.Stop {
	case StopPermanent:
		return fmt.Sprintf("retry: attempt %d: %v", e.Attempts, e.Err)
	case StopEnded:
		return fmt.Sprintf("retry: %v during attempt %d: %v", e.Cause, e.Attempts, e.Err)
	case StopWait:
		return fmt.Sprintf("retry: %v: after %d attempt(s): %v", e.Cause, e.Attempts, e.Err)
	case StopDeadline:
		return fmt.Sprintf("retry: gave up after %d attempt(s), deadline too near to retry: %v", e.Attempts, e.Err)
	default:
		return fmt.Sprintf("retry: gave up after %d attempt(s): %v", e.Attempts, e.Err)
	}
}

func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// Do calls op until it succeeds, its error is not retryable, the attempts
// are used up, or ctx ends (or, with GiveUpNearDeadline, its deadline
// leaves no room for the next wait). It returns nil or an *Error.
func (p Policy) Do(ctx context.Context, op func(context.Context) error) error {
	wait := p.Wait
	if wait == nil {
		wait = Sleep
	}
	for n := 1; ; n++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		fail := &Error{Attempts: n, Err: err}
		switch {
		case ctx.Err() != nil:
			fail.Stop, fail.Cause = StopEnded, ctx.Err()
			return fail
		case p.Retryable != nil && !p.Retryable(err):
			fail.Stop = StopPermanent
			return fail
		case n >= p.Attempts:
			fail.Stop = StopExhausted
			return fail
		}
		d := p.Backoff(n)
		if dl, ok := ctx.Deadline(); ok && p.GiveUpNearDeadline && time.Until(dl) <= d {
			fail.Stop = StopDeadline
			return fail
		}
		if p.OnRetry != nil {
			p.OnRetry(n, d, err)
		}
		if werr := wait(ctx, d); werr != nil {
			fail.Stop, fail.Cause = StopWait, werr
			return fail
		}
	}
}

// Backoff is the wait after attempt n (n ≥ 1) fails: drawn by Jitter below
// a ceiling of Base·2^(n-1), at most Cap.
func (p Policy) Backoff(n int) time.Duration {
	ceil := p.ceiling(n)
	if ceil <= 0 {
		return 0
	}
	random := p.Rand
	if random == nil {
		random = rand.N[int64]
	}
	if p.Jitter == Equal {
		return ceil/2 + time.Duration(random(int64(ceil/2)+1))
	}
	return time.Duration(random(int64(ceil)))
}

// ceiling is Base doubled n-1 times, saturating, then capped.
func (p Policy) ceiling(n int) time.Duration {
	ceil := p.Base
	for i := 1; i < n && ceil > 0 && (p.Cap <= 0 || ceil < p.Cap); i++ {
		if ceil > math.MaxInt64/2 {
			ceil = math.MaxInt64
			break
		}
		ceil *= 2
	}
	if p.Cap > 0 && ceil > p.Cap {
		ceil = p.Cap
	}
	return ceil
}

// Sleep waits d, or until ctx ends, whichever comes first; it returns
// ctx.Err() in the second case. A d of zero or less returns at once (nil
// unless ctx has already ended). It is the default Policy.Wait, and the wait
// of the product's other loops that let tests inject a clock.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
