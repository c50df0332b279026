package obs

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Log fields added to the lines of an invocation, named as AWS Lambda
// Powertools names them.
const (
	KeyRequestID = "function_request_id"
	KeyTraceID   = "xray_trace_id"
	KeyColdStart = "cold_start"
)

// Environment is one Lambda execution environment as its logs see it: which
// invocation was its first (the cold start). The composition root makes one
// and hands its Handler to the logger; every invocation calls Begin.
type Environment struct {
	first      atomic.Pointer[string] // request id of the first invocation
	coldLogged atomic.Bool
	// getenv reads _X_AMZN_TRACE_ID; os.Getenv unless a test says otherwise.
	getenv         func(string) string
	maxConcurrency int
}

// NewEnvironment returns the environment of this process.
func NewEnvironment() *Environment {
	return &Environment{getenv: os.Getenv, maxConcurrency: lambdacontext.MaxConcurrency()}
}

// Begin marks the start of the invocation whose context is ctx: the first
// invocation to begin is the environment's cold start. It neither locks nor
// allocates after the first call.
func (e *Environment) Begin(ctx context.Context) {
	if e.first.Load() != nil {
		return
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		id := lc.AwsRequestID
		e.first.CompareAndSwap(nil, &id)
	}
}

// ColdStart reports whether ctx is the environment's first invocation.
func (e *Environment) ColdStart(ctx context.Context) bool {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return false
	}
	first := e.first.Load()
	return first != nil && *first == lc.AwsRequestID
}

// TraceID is the X-Ray trace id of the invocation of ctx (its Root part), or
// "". aws-lambda-go puts the invocation's trace header in the context under
// "x-amzn-trace-id"; it sets _X_AMZN_TRACE_ID as well only when one
// invocation runs at a time (AWS_LAMBDA_MAX_CONCURRENCY unset or 1), since
// with several at once the variable would belong to whichever began last.
func (e *Environment) TraceID(ctx context.Context) string {
	h, _ := ctx.Value("x-amzn-trace-id").(string)
	if h == "" && e.maxConcurrency <= 1 {
		if _, ok := lambdacontext.FromContext(ctx); ok {
			h = e.getenv("_X_AMZN_TRACE_ID")
		}
	}
	return traceRoot(h)
}

// traceRoot takes Root=… out of a trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=…;Sampled=1").
func traceRoot(h string) string {
	for part := range strings.SplitSeq(h, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	return ""
}

// Handler wraps h so that every line logged with an invocation's context
// carries function_request_id, xray_trace_id (when traced) and cold_start.
// Lines logged without one (init, a local run) are h's alone.
func (e *Environment) Handler(h slog.Handler) slog.Handler {
	return &lambdaHandler{env: e, base: h, h: h}
}

type lambdaHandler struct {
	env  *Environment
	base slog.Handler // h before any WithGroup, where the invocation's fields go
	h    slog.Handler
	ops  []handlerOp // WithAttrs/WithGroup since the first WithGroup, replayed over base
}

type handlerOp struct {
	group string
	attrs []slog.Attr
}

func (l *lambdaHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lambdaHandler) Handle(ctx context.Context, r slog.Record) error {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok {
		return l.h.Handle(ctx, r)
	}
	fields := make([]slog.Attr, 0, 3)
	fields = append(fields, slog.String(KeyRequestID, lc.AwsRequestID))
	if id := l.env.TraceID(ctx); id != "" {
		fields = append(fields, slog.String(KeyTraceID, id))
	}
	fields = append(fields, slog.Bool(KeyColdStart, l.env.ColdStart(ctx)))
	if len(l.ops) == 0 {
		r.AddAttrs(fields...)
		return l.h.Handle(ctx, r)
	}
	// Inside a group the fields still belong at the top of the line.
	h := l.base.WithAttrs(fields)
	for _, op := range l.ops {
		if op.group != "" {
			h = h.WithGroup(op.group)
		} else {
			h = h.WithAttrs(op.attrs)
		}
	}
	return h.Handle(ctx, r)
}

func (l *lambdaHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &lambdaHandler{env: l.env, base: l.base, h: l.h.WithAttrs(attrs), ops: l.ops}
	if len(l.ops) == 0 {
		n.base = n.h
	} else {
		n.ops = append(l.ops[:len(l.ops):len(l.ops)], handlerOp{attrs: attrs})
	}
	return n
}

func (l *lambdaHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	return &lambdaHandler{env: l.env, base: l.base, h: l.h.WithGroup(name),
		ops: append(l.ops[:len(l.ops):len(l.ops)], handlerOp{group: name})}
}

// InitDurations are the parts of a cold start's init phase.
type InitDurations struct {
	Config      time.Duration // reading and validating the environment
	DiskIndex   time.Duration // rebuilding the disk tier's index from /tmp
	Staging     time.Duration // copying STAGE_PREFIXES / STAGE_MANIFEST to disk
	JournalHead time.Duration // reading the purge journal's head
}

// Total is the sum of the parts.
func (d InitDurations) Total() time.Duration {
	return d.Config + d.DiskIndex + d.Staging + d.JournalHead
}

// LogColdStart logs the cold-start line, with the init durations in
// milliseconds, once per environment: the first call logs and reports true,
// later ones do nothing. Call it from the first invocation (after Begin) so the
// line carries its request id; called at init, it marks cold_start itself.
func (e *Environment) LogColdStart(ctx context.Context, log *slog.Logger, d InitDurations) bool {
	if !e.coldLogged.CompareAndSwap(false, true) {
		return false
	}
	attrs := []slog.Attr{
		slog.Float64("init_config_ms", ms(d.Config)),
		slog.Float64("init_disk_index_ms", ms(d.DiskIndex)),
		slog.Float64("init_staging_ms", ms(d.Staging)),
		slog.Float64("init_journal_head_ms", ms(d.JournalHead)),
		slog.Float64("init_total_ms", ms(d.Total())),
	}
	if _, ok := lambdacontext.FromContext(ctx); !ok {
		attrs = append(attrs, slog.Bool(KeyColdStart, true))
	}
	log.LogAttrs(ctx, slog.LevelInfo, "cold start", attrs...)
	return true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
