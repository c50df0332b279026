// Package obs is what the functions say about themselves.
//
//   - Logs: JSON lines (NewLogger) in the shape Lambda's JSON log format reads
//     (timestamp, an upper-case level, msg), so ApplicationLogLevel filters
//     them; Environment adds the AWS Lambda Powertools fields to every line
//     logged with an invocation's context (function_request_id, xray_trace_id,
//     cold_start) and logs the cold-start line with the init durations.
//   - Metrics: the tile function's and the worker's metric sets (TileMetrics,
//     WorkerMetrics), written as CloudWatch embedded metric format lines by
//     package emf.
package obs

import (
	"io"
	"log/slog"
	"strings"
	"sync"
)

// NewLogger returns a JSON logger writing to w at level ("debug", "info",
// "warn" or "error"; anything else is info).
func NewLogger(w io.Writer, level string) *slog.Logger {
	return slog.New(NewJSONHandler(w, level))
}

// NewJSONHandler is NewLogger's handler, for wrapping (Environment.Handler).
// Lambda reads the level of a JSON line from "level" (TRACE, DEBUG, INFO,
// WARN, ERROR or FATAL; a missing or unknown one counts as INFO) and its time
// from "timestamp" in RFC 3339, so the keys and values are those.
func NewJSONHandler(w io.Writer, level string) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: ParseLevel(level), ReplaceAttr: lambdaKeys})
}

func lambdaKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		a.Key = "timestamp"
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok {
			a.Value = slog.StringValue(LevelName(l))
		}
	}
	return a
}

// LevelName is the Lambda log level a slog level falls under: slog's own
// names for levels in between (INFO+2) are not ones Lambda knows.
func LevelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "TRACE"
	case l < slog.LevelInfo:
		return "DEBUG"
	case l < slog.LevelWarn:
		return "INFO"
	case l < slog.LevelError:
		return "WARN"
	case l < slog.LevelError+4:
		return "ERROR"
	}
	return "FATAL"
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

// LineWriter serialises writes to w, each a whole line from a logger or the
// metrics, so the lines of concurrent invocations never interleave.
type LineWriter struct {
	mu sync.Mutex // guards W
	W  io.Writer
}

func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// NewOutput sets up a function's stdout w as its logs and metrics share it:
// lines, which writes one whole line at a time, for the metrics; the
// function's Environment; and a JSON logger at level over lines whose every
// line logged within an invocation carries its ids.
func NewOutput(w io.Writer, level string) (lines *LineWriter, env *Environment, log *slog.Logger) {
	lines = &LineWriter{W: w}
	env = NewEnvironment()
	return lines, env, slog.New(env.Handler(NewJSONHandler(lines, level)))
}
