// Command tiles is the tile function. On Lambda (AWS_LAMBDA_RUNTIME_API set)
// it answers function-URL invocations, buffered (the default) or streamed
// (INVOKE_MODE=RESPONSE_STREAM); anywhere else it serves the same handler on
// LISTEN_ADDR:PORT until SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/functions/tiles/internal/memlimit"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
)

func main() {
	// The function serves no profiles: the heap profile's buckets would
	// only take memory (1.4 MB of a local server's after a minute of load).
	runtime.MemProfileRate = 0
	if len(os.Args) > 1 {
		os.Exit(answerArgs(os.Args[1:], os.Stdout, os.Stderr))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tiles:", err)
		os.Exit(1)
	}
}

// usage is the answer to -h, --help and help: the function takes no flags,
// so it says what it is and where its settings come from.
const usage = `usage: tiles

tiles is tilesieve's tile function. On AWS Lambda (AWS_LAMBDA_RUNTIME_API
set) it answers function-URL invocations, buffered or streamed
(INVOKE_MODE); anywhere else it serves the same handler on
LISTEN_ADDR:PORT until SIGINT or SIGTERM.

It takes no flags: it reads its configuration from the environment, once
at start. These are the variables, with their defaults;
docs/configuration.md says what each does:

`

// answerArgs answers a command line, which Lambda never passes
// (config.AnswerArgs).
func answerArgs(args []string, stdout, stderr io.Writer) int {
	return config.AnswerArgs("tiles", usage, config.TilesVars(), args, stdout, stderr)
}

func run() error {
	began := time.Now()
	// On Lambda, the SIGTERM extension registers beside init (see
	// enableSIGTERM); the handler flushes once the app is built.
	var onTerm atomic.Pointer[func()]
	joinSIGTERM := func() error { return nil }
	if api := os.Getenv("AWS_LAMBDA_RUNTIME_API"); api != "" {
		// The runtime's loop does not return on SIGTERM, so exit here:
		// otherwise Lambda waits out its shutdown deadline and kills the
		// process.
		joinSIGTERM = enableSIGTERM(api, func() {
			if f := onTerm.Load(); f != nil {
				(*f)()
			}
			os.Exit(0)
		})
	}
	cfg, err := config.LoadTiles(config.OS)
	if err != nil {
		return err
	}
	// Logs and metric lines share stdout, one whole line per write; every
	// line of an invocation carries its request and trace ids.
	out, env, log := obs.NewOutput(os.Stdout, cfg.LogLevel)
	lim := &memlimit.Limit{}
	memlimit.OnLambda(lim, cfg, log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	configured := time.Since(began)
	a, err := app.New(ctx, memlimit.TierConfig(cfg), log, append(adapterOptions(cfg), app.WithMetrics(out), app.WithOffHeap(lim.OffHeapChanged), app.WithRendering(lim.RenderingChanged))...)
	if err != nil {
		return err
	}
	a.Init.Config = configured
	memlimit.OffLambda(lim, cfg, log)
	log.Info("tile function ready", "memory_bytes", cfg.MemBytes, "disk", a.Disk != nil,
		"staged_objects", a.Staged.Staged, "staged_bytes", a.Staged.Bytes, "invoke_mode", cfg.InvokeMode, "on_lambda", cfg.OnLambda,
		"metrics", a.Metrics != nil)
	flush := func() {
		if err := a.Metrics.Flush(time.Now()); err != nil {
			log.Warn("metrics not flushed", "err", err)
		}
	}

	h := withDeadlineMargin(withRecover(a.Handler, log))
	if cfg.OnLambda {
		// Lambda sends SIGTERM at shutdown only to functions with an
		// extension; without one, the last interval's metrics are lost,
		// which the flush on the request path bounds to one interval.
		onTerm.Store(&flush)
		if err := joinSIGTERM(); err != nil {
			log.Warn("SIGTERM not enabled: the last metrics interval is lost at shutdown", "err", err)
		}
		inv := invocation{env: env, log: log, init: a.Init}
		if cfg.InvokeMode == "RESPONSE_STREAM" {
			lambda.Start(streamHandler(inv.http(h), log))
		} else {
			b := &buffered{srv: a.Server, next: h, log: log}
			lambda.Start(inv.buffered(withDeadline(b.Handle)))
		}
		return nil
	}
	defer flush()
	defer func() {
		if err := a.Close(); err != nil {
			log.Warn("tile function not closed cleanly", "err", err)
		}
	}()
	return serve(ctx, cfg.ListenAddr, localHandler(a.Handler, log), cfg.WriteTimeout(), log)
}

// invocation marks the start of each Lambda invocation for the logs: the
// request and trace ids its lines carry, and the cold-start line with the
// init phase's parts on the environment's first.
type invocation struct {
	env  *obs.Environment
	log  *slog.Logger
	init obs.InitDurations
}

func (i invocation) begin(ctx context.Context) {
	i.env.Begin(ctx)
	i.env.LogColdStart(ctx, i.log, i.init)
}

func (i invocation) http(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i.begin(r.Context())
		h.ServeHTTP(w, r)
	})
}

func (i invocation) buffered(h func(context.Context, *urlEvent) (io.Reader, error)) func(context.Context, *urlEvent) (io.Reader, error) {
	return func(ctx context.Context, ev *urlEvent) (io.Reader, error) {
		i.begin(ctx)
		return h(ctx, ev)
	}
}

// deadlineMargin is kept back from the invocation's deadline so the handler
// can still answer 504 itself rather than let Lambda cut it off.
const deadlineMargin = 300 * time.Millisecond

func withDeadlineMargin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dl, ok := r.Context().Deadline(); ok {
			ctx, cancel := context.WithDeadline(r.Context(), dl.Add(-deadlineMargin))
			defer cancel()
			r = r.WithContext(ctx)
		}
		h.ServeHTTP(w, r)
	})
}

// withDeadline is withDeadlineMargin for the buffered handler.
func withDeadline(h func(context.Context, *urlEvent) (io.Reader, error)) func(context.Context, *urlEvent) (io.Reader, error) {
	return func(ctx context.Context, ev *urlEvent) (io.Reader, error) {
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-deadlineMargin))
			defer cancel()
		}
		return h(ctx, ev)
	}
}

// withRecover turns a panic in h into a 500 (when nothing was written yet)
// and a log line, so that one bad request does not end the process: on
// Lambda a panic that reaches the runtime makes it exit.
func withRecover(h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				log.Error("panic while answering; answered 500", "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				w.Header().Set("Cache-Control", "no-store")
				http.Error(w, "internal error", http.StatusInternalServerError)
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// adapterOptions are what the adapter cfg runs under asks of the app: on
// Lambda in BUFFERED mode, a memory hit answers with its payload encoded
// once, when the tile entered the memory tier.
func adapterOptions(cfg config.Tiles) []app.Option {
	if cfg.OnLambda && cfg.InvokeMode != "RESPONSE_STREAM" {
		return []app.Option{app.WithExtra(buildPayload)}
	}
	return nil
}
