package defaults

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

func TestPositive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v, def, want time.Duration
	}{
		{0, time.Second, time.Second},
		{-1, time.Second, time.Second},
		{time.Millisecond, time.Second, time.Millisecond},
	} {
		if got := Positive(tc.v, tc.def); got != tc.want {
			t.Errorf("Positive(%v, %v): got %v, want %v", tc.v, tc.def, got, tc.want)
		}
	}
	if got := Positive(0.5, 2.0); got != 0.5 {
		t.Errorf("Positive(0.5, 2): got %v, want 0.5", got)
	}
}

func TestClockAndLogger(t *testing.T) {
	t.Parallel()
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := Clock(func() time.Time { return fixed })(); !got.Equal(fixed) {
		t.Errorf("Clock(fixed)(): got %v, want %v", got, fixed)
	}
	if got := Clock(nil)(); time.Since(got) > time.Minute || time.Since(got) < 0 {
		t.Errorf("Clock(nil)(): got %v, want about now", got)
	}
	l := slog.Default()
	if got := Logger(l); got != l {
		t.Errorf("Logger(l): got %p, want %p", got, l)
	}
	if got := Logger(nil); got == nil || got.Enabled(context.Background(), slog.LevelError) {
		t.Errorf("Logger(nil): got %v, want a logger that discards", got)
	}
}

func TestNotNegative(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"zero", NotNegative("origin", "Timeout", time.Duration(0)), ""},
		{"positive", NotNegative("disk", "MaxBytes", int64(1)), ""},
		{"negative duration", NotNegative("origin", "Timeout", -time.Second), "origin: Timeout -1s is negative"},
		{"negative count", NotNegative("stage", "Concurrency", -2), "stage: Concurrency -2 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if tc.err != nil {
				got = tc.err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
