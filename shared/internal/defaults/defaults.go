// Package defaults fills a configuration's unset fields, one line a field:
// a number that is not positive takes its default (Positive), a nil clock
// reads the wall clock (Clock), a nil logger discards (Logger). It also
// states the one rule every package's Validate applies to such a number
// (NotNegative). The defaults themselves live with their packages and in
// shared/config.
package defaults

import (
	"fmt"
	"log/slog"
	"time"
)

// Number is what Positive fills: counts, byte sizes, durations, rates.
type Number interface {
	~int | ~int32 | ~int64 | ~uint32 | ~uint64 | ~float64
}

// Positive is v when it is above zero, else def.
func Positive[T Number](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Clock is now, or time.Now when now is nil.
func Clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// Logger is l, or a logger that discards everything when l is nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// NotNegative is nil when v is zero or more (zero takes the default), else
// an error naming pkg's setting: "origin: Timeout -1s is negative". A
// Validate joins them with errors.Join, which drops the nils.
func NotNegative[T Number](pkg, name string, v T) error {
	if v >= 0 {
		return nil
	}
	return fmt.Errorf("%s: %s %v is negative", pkg, name, v)
}
