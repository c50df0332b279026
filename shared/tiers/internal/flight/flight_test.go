package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func never(string, uint64) bool  { return false }
func always(string, uint64) bool { return true }

// TestDoMerges: callers that arrive while a call runs join it, unless the
// call was overtaken; then they start one of their own.
func TestDoMerges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		overtaken func(string, uint64) bool
		wantCalls int32
		wantJoin  bool
	}{
		{"joins", never, 1, true},
		{"overtaken call not joined", always, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var g Group[int]
			var calls atomic.Int32
			started := make(chan struct{}, 2)
			release := make(chan struct{})
			fn := func(ctx context.Context, epoch uint64) (int, error) {
				n := calls.Add(1)
				started <- struct{}{}
				<-release
				return int(n), nil
			}
			var first int
			var wg sync.WaitGroup
			wg.Go(func() {
				v, _, err := g.Do(context.Background(), "k", 1, tt.overtaken, fn)
				if err != nil {
					t.Error(err)
				}
				first = v
			})
			<-started
			var second int
			var shared bool
			wg.Go(func() {
				var err error
				second, shared, err = g.Do(context.Background(), "k", 2, tt.overtaken, fn)
				if err != nil {
					t.Error(err)
				}
			})
			if !tt.wantJoin {
				<-started // the second caller's own call runs
			}
			// The joining caller is counted before the call may end, or it
			// could arrive after it and start one of its own.
			if tt.wantJoin {
				waitWaiters(&g, "k", 2)
			}
			close(release)
			wg.Wait()
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("calls: got %v, want %v", got, tt.wantCalls)
			}
			if shared != tt.wantJoin {
				t.Errorf("shared: got %v, want %v", shared, tt.wantJoin)
			}
			if tt.wantJoin && second != first {
				t.Errorf("joined value: got %v, want %v", second, first)
			}
		})
	}
}

// waitWaiters spins (yielding the lock) until key's call has n waiters.
func waitWaiters[T any](g *Group[T], key string, n int) {
	for {
		g.mu.Lock()
		c := g.calls[key]
		ok := c != nil && c.waiters >= n
		g.mu.Unlock()
		if ok {
			return
		}
	}
}

// TestLastWaiterCancels: when every caller has given up, the call's
// context is cancelled; while one waits, it is not.
func TestLastWaiterCancels(t *testing.T) {
	t.Parallel()
	var g Group[int]
	cancelled := make(chan struct{})
	started := make(chan struct{})
	fn := func(ctx context.Context, _ uint64) (int, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return 0, ctx.Err()
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { _, _, err := g.Do(ctx1, "k", 0, never, fn); errs <- err }()
	<-started
	go func() { _, _, err := g.Do(ctx2, "k", 0, never, fn); errs <- err }()
	waitWaiters(&g, "k", 2)
	cancel1()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: got %v, want context.Canceled", err)
	}
	select {
	case <-cancelled:
		t.Fatal("call cancelled while a caller still waits")
	default:
	}
	cancel2()
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Fatalf("second caller: got %v, want context.Canceled", err)
	}
	<-cancelled // the call's context ends once nobody waits
}

// TestPanicIsAnError: a panicking call answers its callers with ErrPanic,
// and the next caller runs the call again.
func TestPanicIsAnError(t *testing.T) {
	t.Parallel()
	var g Group[int]
	_, _, err := g.Do(context.Background(), "k", 0, never, func(context.Context, uint64) (int, error) { panic("boom") })
	if !errors.Is(err, ErrPanic) {
		t.Fatalf("got %v, want ErrPanic", err)
	}
	v, _, err := g.Do(context.Background(), "k", 0, never, func(context.Context, uint64) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("after a panic: got %v, %v, want 7, nil", v, err)
	}
}

// TestEpochPassed: the call runs at the epoch of the caller that started it.
func TestEpochPassed(t *testing.T) {
	t.Parallel()
	var g Group[uint64]
	v, _, err := g.Do(context.Background(), "k", 42, never, func(_ context.Context, epoch uint64) (uint64, error) { return epoch, nil })
	if err != nil || v != 42 {
		t.Fatalf("got %v, %v, want 42, nil", v, err)
	}
}
