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
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/obs"
)

func main() {
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
	setMemoryLimit(cfg, log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	configured := time.Since(began)
	a, err := app.New(ctx, memTierConfig(cfg), log, append(adapterOptions(cfg), app.WithMetrics(out))...)
	if err != nil {
		return err
	}
	a.Init.Config = configured
	setMemoryLimitOffLambda(cfg, log)
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

// setMemoryLimit keeps the Go heap inside the function's memory: the garbage
// collector works harder as the heap nears the limit instead of letting
// Lambda kill the process. GOMEMLIMIT, when set, wins. Off Lambda see
// setMemoryLimitOffLambda.
func setMemoryLimit(cfg config.Tiles, log *slog.Logger) {
	if cfg.FunctionMemoryBytes == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := cfg.FunctionMemoryBytes * 9 / 10
	debug.SetMemoryLimit(limit)
	log.Info("Go memory limit set from the function's memory", "limit_bytes", limit)
}

// setMemoryLimitOffLambda keeps the process within what it was configured
// to hold, once init is done: MEM_CACHE_BYTES with a tenth more, plus
// IIIF_RENDER_BYTES (the pixels of the IIIF answers being made), plus the Go
// memory the idle process already uses (measured now, after init: the
// runtime, the disk tier's index, the handler's pools; after a collection
// that returns init's garbage to the system, which would otherwise count as
// base and leave that much more room to the heap). Without a limit the
// collector lets the heap grow to twice the live bytes (GOGC=100), so a
// flood of requests for missing tiles, each a few short-lived allocations,
// takes the process to several times the configured cache. The collector is
// given half of that tenth: it overshoots its limit (by 1.4 MiB at the peak
// of the 404 flood of docs/BENCHMARKS.md section 6), and the other half
// keeps that overshoot inside the bound. Under this limit the memory tier
// holds less than MEM_CACHE_BYTES (see memTierConfig), so that a full tier
// leaves the collector room. GOMEMLIMIT, when set, wins; on Lambda
// setMemoryLimit has set the limit from the function's memory. The leaf
// directory cache of archives (archive.DefaultDirectoryBytes) is not
// counted: it holds nothing until archives are read. With the heap bounded,
// GOGC (unless set) is raised to gcPercentOffLambda.
func setMemoryLimitOffLambda(cfg config.Tiles, log *slog.Logger) {
	if !limitedOffLambda(cfg) {
		return
	}
	debug.FreeOSMemory()
	base := goMemoryInUse()
	limit := cfg.MemBytes + cfg.MemBytes/20 + cfg.IIIF.RenderBytes + base
	debug.SetMemoryLimit(limit)
	gcPercent := os.Getenv("GOGC")
	if gcPercent == "" {
		debug.SetGCPercent(gcPercentOffLambda)
		gcPercent = strconv.Itoa(gcPercentOffLambda)
	}
	log.Info("Go memory limit set from MEM_CACHE_BYTES", "limit_bytes", limit, "base_bytes", base, "gc_percent", gcPercent)
}

// gcPercentOffLambda is the collector's GOGC once setMemoryLimitOffLambda
// has bounded the heap, unless GOGC is set. The limit, not GOGC, keeps the
// process within its bound; GOGC only decides how far below it the heap
// goal lies while the memory tier is far from full. At the default 100 the
// goal is twice the live heap, and at least 4 MiB: a local server whose
// tier holds a few tiles collects about every 650 requests (each leaves
// some 3 KB of net/http's garbage), 85 times a second at 56,000 requests/s.
// At 400 the goal is five times the live heap, at least 16 MiB, and the
// same server's memory hits cost 17.1 µs of CPU each instead of 19.4
// (a net/http floor that sends the same header fields: 17.0; wrk -c 20,
// eight alternating rounds). A full tier's goal is its limit either way.
const gcPercentOffLambda = 400

// limitedOffLambda reports whether setMemoryLimitOffLambda sets a limit.
func limitedOffLambda(cfg config.Tiles) bool {
	return cfg.FunctionMemoryBytes == 0 && os.Getenv("GOMEMLIMIT") == "" && cfg.MemBytes > 0
}

// memTierRoom is the share of MEM_CACHE_BYTES the memory tier leaves to the
// collector under setMemoryLimitOffLambda's limit: 1/memTierRoom.
const memTierRoom = 8

// memTierConfig is cfg as the memory tier is built from it. Under the limit
// of setMemoryLimitOffLambda the tier holds MEM_CACHE_BYTES less an eighth.
// A tier filled to the whole of MEM_CACHE_BYTES leaves the collector no
// room under that limit: the runtime keeps 3% of a limit back from its heap
// goal, and its own memory (span metadata, partly used spans of a tier that
// evicts and refills) grows with the heap, so the goal falls to the live
// heap and the collector runs back to back (over 100 cycles a second and
// a third of the requests per second of memory hits at 64 MiB, section 8 of
// docs/BENCHMARKS.md). On Lambda, and with GOMEMLIMIT set, the tier holds
// MEM_CACHE_BYTES: the limit there is not derived from it.
func memTierConfig(cfg config.Tiles) config.Tiles {
	if limitedOffLambda(cfg) {
		cfg.MemBytes -= cfg.MemBytes / memTierRoom
	}
	return cfg
}

// goMemoryInUse is the memory the Go runtime has mapped and not returned to
// the system: what the memory limit counts.
func goMemoryInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
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
