// Package obs sets up what the functions say about themselves: structured
// JSON logs (one line per event, CloudWatch-friendly) at a configured level.
package obs

import (
	"io"
	"log/slog"
	"strings"
)

// NewLogger returns a JSON logger writing to w at level ("debug", "info",
// "warn" or "error"; anything else is info).
func NewLogger(w io.Writer, level string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: ParseLevel(level)}))
}

// ParseLevel maps a level name to a slog level; unknown names are info.
func ParseLevel(level string) slog.Level {
	switch strings.ToLower(level) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
