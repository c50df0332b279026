package retry_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tilesieve/tilesieve/shared/internal/retry"
)

// lowest and highest pin the jitter to either end of its range.
func lowest(int64) int64    { return 0 }
func highest(n int64) int64 { return n - 1 }

func TestBackoff(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	for _, tt := range []struct {
		name     string
		p        retry.Policy
		n        int
		min, max time.Duration // the wait with the jitter at its lowest and at its highest
	}{
		{"full, first", retry.Policy{Base: 25 * ms, Cap: time.Second}, 1, 0, 25*ms - 1},
		{"full, doubled", retry.Policy{Base: 25 * ms, Cap: time.Second}, 3, 0, 100*ms - 1},
		{"full, capped", retry.Policy{Base: 25 * ms, Cap: time.Second}, 7, 0, time.Second - 1},
		{"full, capped far on", retry.Policy{Base: 25 * ms, Cap: time.Second}, 1000, 0, time.Second - 1},
		{"equal, first", retry.Policy{Base: 100 * ms, Jitter: retry.Equal}, 1, 50 * ms, 100 * ms},
		{"equal, doubled", retry.Policy{Base: 100 * ms, Jitter: retry.Equal}, 3, 200 * ms, 400 * ms},
		{"equal, capped", retry.Policy{Base: 500 * ms, Cap: 10 * time.Second, Jitter: retry.Equal}, 9, 5 * time.Second, 10 * time.Second},
		{"equal, cap below base", retry.Policy{Base: time.Second, Cap: 100 * ms, Jitter: retry.Equal}, 1, 50 * ms, 100 * ms},
		{"no cap saturates", retry.Policy{Base: time.Second, Jitter: retry.Equal}, 200, math.MaxInt64 / 2, math.MaxInt64 - 1},
		{"no base", retry.Policy{}, 3, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lo, hi := tt.p, tt.p
			lo.Rand, hi.Rand = lowest, highest
			if got := lo.Backoff(tt.n); got != tt.min {
				t.Errorf("lowest: got %v, want %v", got, tt.min)
			}
			if got := hi.Backoff(tt.n); got != tt.max {
				t.Errorf("highest: got %v, want %v", got, tt.max)
			}
			for range 100 { // the default source stays in the range
				if got := tt.p.Backoff(tt.n); got < tt.min || got > tt.max {
					t.Fatalf("got %v, want within [%v, %v]", got, tt.min, tt.max)
				}
			}
		})
	}
}

// clock is a fake wait: it records the waits and fails with err, when set.
type clock struct {
	waits []time.Duration
	err   error
}

func (c *clock) wait(ctx context.Context, d time.Duration) error {
	c.waits = append(c.waits, d)
	if c.err != nil {
		return c.err
	}
	return ctx.Err()
}

var (
	errBusy = errors.New("busy")
	errNo   = errors.New("no")
)

// TestDo: the attempts, the waits between them and why Do stops.
func TestDo(t *testing.T) {
	t.Parallel()
	errWait := errors.New("wait failed")
	for _, tt := range []struct {
		name      string
		p         retry.Policy
		fails     []error // op's answers in turn; nil after them
		waitErr   error
		wantCalls int
		wantWaits int
		wantStop  retry.Stop // 0: success
		wantCause error
	}{
		{name: "first attempt", p: retry.Policy{Attempts: 3}, wantCalls: 1},
		{name: "zero attempts make one", p: retry.Policy{}, fails: []error{errBusy}, wantCalls: 1, wantStop: retry.StopExhausted},
		{name: "retried, then done", p: retry.Policy{Attempts: 3}, fails: []error{errBusy, errBusy}, wantCalls: 3, wantWaits: 2},
		{name: "exhausted", p: retry.Policy{Attempts: 3}, fails: []error{errBusy, errBusy, errBusy, errBusy},
			wantCalls: 3, wantWaits: 2, wantStop: retry.StopExhausted},
		{name: "not retryable", p: retry.Policy{Attempts: 3, Retryable: func(err error) bool { return err != errNo }},
			fails: []error{errBusy, errNo}, wantCalls: 2, wantWaits: 1, wantStop: retry.StopPermanent},
		{name: "wait fails", p: retry.Policy{Attempts: 3}, fails: []error{errBusy}, waitErr: errWait,
			wantCalls: 1, wantWaits: 1, wantStop: retry.StopWait, wantCause: errWait},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &clock{err: tt.waitErr}
			p := tt.p
			p.Base, p.Wait = time.Millisecond, c.wait
			calls := 0
			err := p.Do(context.Background(), func(context.Context) error {
				calls++
				if calls <= len(tt.fails) {
					return tt.fails[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || len(c.waits) != tt.wantWaits {
				t.Errorf("got %d calls and %d waits, want %d and %d", calls, len(c.waits), tt.wantCalls, tt.wantWaits)
			}
			if tt.wantStop == 0 {
				if err != nil {
					t.Errorf("got %v, want success", err)
				}
				return
			}
			re, ok := errors.AsType[*retry.Error](err)
			if !ok || re.Stop != tt.wantStop || re.Attempts != tt.wantCalls || re.Err != tt.fails[calls-1] {
				t.Fatalf("got %#v, want an *Error stopping with %v after %d attempts", err, tt.wantStop, tt.wantCalls)
			}
			if !errors.Is(err, re.Err) || (tt.wantCause != nil && (re.Cause != tt.wantCause || !errors.Is(err, tt.wantCause))) {
				t.Errorf("got %v, want it to wrap %v and %v", err, re.Err, tt.wantCause)
			}
			if !strings.HasPrefix(err.Error(), "retry: ") || !strings.Contains(err.Error(), re.Err.Error()) {
				t.Errorf("message %q: want the package's, carrying the last error", err)
			}
		})
	}
}

// TestDoStopsWhenCtxEnds: an attempt that fails because ctx ended is not
// retried, whatever Retryable says.
func TestDoStopsWhenCtxEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	c := &clock{}
	calls := 0
	err := retry.Policy{Attempts: 5, Base: time.Millisecond, Wait: c.wait}.Do(ctx, func(ctx context.Context) error {
		calls++
		cancel()
		return errBusy
	})
	re, ok := errors.AsType[*retry.Error](err)
	if !ok || re.Stop != retry.StopEnded || calls != 1 || len(c.waits) != 0 || !errors.Is(err, context.Canceled) || !errors.Is(err, errBusy) {
		t.Errorf("got %v after %d calls and %d waits, want StopEnded after one, wrapping both causes", err, calls, len(c.waits))
	}
}

// TestDoDeadline: with GiveUpNearDeadline, a wait that would end past ctx's
// deadline is not begun; without it Do waits (and the wait ends with ctx).
func TestDoDeadline(t *testing.T) {
	t.Parallel()
	for _, giveUp := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		c := &clock{}
		p := retry.Policy{Attempts: 5, Base: 4 * time.Hour, Jitter: retry.Equal, GiveUpNearDeadline: giveUp, Wait: c.wait}
		err := p.Do(ctx, func(context.Context) error { return errBusy })
		re, ok := errors.AsType[*retry.Error](err)
		switch {
		case !ok:
			t.Fatalf("GiveUpNearDeadline %v: got %v, want an *Error", giveUp, err)
		case giveUp && (re.Stop != retry.StopDeadline || len(c.waits) != 0 || re.Attempts != 1):
			t.Errorf("giving up: got %v after %d waits, want StopDeadline after one attempt and no wait", err, len(c.waits))
		case !giveUp && (len(c.waits) != 4 || c.waits[0] < 2*time.Hour):
			t.Errorf("not giving up: got waits %v, want four of at least 2h", c.waits)
		}
	}
}

// TestDoOnRetry: each retry is told before its wait, with the wait it gets.
func TestDoOnRetry(t *testing.T) {
	t.Parallel()
	c := &clock{}
	var told []time.Duration
	p := retry.Policy{Attempts: 3, Base: time.Second, Wait: c.wait, Rand: highest}
	p.OnRetry = func(n int, d time.Duration, err error) {
		if n != len(told)+1 || err != errBusy {
			t.Errorf("OnRetry(%d, %v, %v), want attempt %d and errBusy", n, d, err, len(told)+1)
		}
		told = append(told, d)
	}
	p.Do(context.Background(), func(context.Context) error { return errBusy })
	if want := []time.Duration{time.Second - 1, 2*time.Second - 1}; len(told) != 2 || told[0] != want[0] || told[1] != want[1] || c.waits[1] != want[1] {
		t.Errorf("told %v, waited %v; want %v both", told, c.waits, want)
	}
}
