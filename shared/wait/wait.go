// Package wait holds the one wait the product's retry and settle loops
// share. Each loop takes its wait as a func(ctx, d) error, so tests inject
// a fake clock there instead of sleeping; Sleep is what they get by default.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends, whichever comes first; it returns
// ctx.Err() in the second case. A d of zero or less returns at once (nil
// unless ctx has already ended).
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
