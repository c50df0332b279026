// Command tiles is the tile function. On Lambda (AWS_LAMBDA_RUNTIME_API set)
// it answers function-URL invocations, buffered (the default) or streamed
// (INVOKE_MODE=RESPONSE_STREAM); anywhere else it serves the same handler on
// LISTEN_ADDR:PORT until SIGINT or SIGTERM.
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/tilesieve/tilesieve/functions/tiles/app"
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
at start. These are the variables, with their defaults; README.md, section
"Configuration", says what each does:

`

// answerArgs answers a command line, which Lambda never passes: -h,
// -help, --help or help print the usage and the variables on stdout (exit
// 0), anything else the same on stderr (exit 2).
func answerArgs(args []string, stdout, stderr io.Writer) int {
	w, code := stdout, 0
	if len(args) != 1 || !slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		fmt.Fprintf(stderr, "tiles: unexpected arguments %q\n\n", args)
		w, code = stderr, 2
	}
	fmt.Fprint(w, usage)
	for _, v := range config.TilesVars() {
		fmt.Fprintf(w, "  %-24s %s\n", v.Name, cmp.Or(v.Default, "(empty)"))
	}
	return code
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
	lim := &memoryLimit{}
	setMemoryLimit(lim, cfg, log)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	configured := time.Since(began)
	opts := []app.Option{app.WithMetrics(out), app.WithOffHeap(lim.offHeapChanged)}
	if cfg.OnLambda && cfg.InvokeMode != "RESPONSE_STREAM" {
		// A memory hit answers with its payload encoded once, when the
		// tile entered the memory tier.
		opts = append(opts, app.WithExtra(buildPayload))
	}
	a, err := app.New(ctx, memTierConfig(cfg), log, opts...)
	if err != nil {
		return err
	}
	a.Init.Config = configured
	setMemoryLimitOffLambda(lim, cfg, log)
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

// memoryLimit is the Go memory limit the process keeps, when it keeps one:
// a bound on all it holds, less the bytes the memory tier holds off the
// heap (memory.Config.OnOffHeap). Those are not the collector's to account
// for, so a full tier leaves the collector the same room as an empty one
// would, less what the tier's entries keep on the heap.
type memoryLimit struct {
	mu      sync.Mutex // guards bound and offHeap, and orders the updates of the limit
	bound   int64      // 0: the limit is not the process's (GOMEMLIMIT set, or not set yet)
	offHeap int64
}

// setBound makes b the bound and sets the limit from it.
func (m *memoryLimit) setBound(b int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bound = b
	m.apply()
}

// offHeapChanged is the memory tier's OnOffHeap hook.
func (m *memoryLimit) offHeapChanged(resident int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offHeap = resident
	m.apply()
}

// apply sets the limit: the bound less the off-heap bytes, and never below
// an eighth of the bound (leased blocks of evicted entries briefly add to
// what the tier holds). m.mu is held.
func (m *memoryLimit) apply() {
	if m.bound > 0 {
		debug.SetMemoryLimit(max(m.bound-m.offHeap, m.bound/8))
	}
}

// limit is the Go memory limit m set last, or 0.
func (m *memoryLimit) limit() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bound == 0 {
		return 0
	}
	return max(m.bound-m.offHeap, m.bound/8)
}

// setMemoryLimit keeps the process inside the function's memory on
// Lambda: the collector works harder as the heap nears the limit instead
// of letting Lambda kill the process. The bound is 90% of the function's
// memory. GOMEMLIMIT, when set, wins. Off Lambda see
// setMemoryLimitOffLambda.
func setMemoryLimit(lim *memoryLimit, cfg config.Tiles, log *slog.Logger) {
	if cfg.FunctionMemoryBytes == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	bound := cfg.FunctionMemoryBytes * 9 / 10
	lim.setBound(bound)
	log.Info("Go memory limit set from the function's memory, less the memory tier's bytes off the heap", "bound_bytes", bound)
}

// setMemoryLimitOffLambda keeps the process within what it was configured
// to hold, once init is done: MEM_CACHE_BYTES with a twentieth more, plus
// the Go memory the idle process already uses (measured now, after init,
// after a collection that returns init's garbage to the system), less what
// the memory tier holds off the heap. The other twentieth of the bound
// (MEM_CACHE_BYTES × 1.1 + base) is for the collector's overshoot. The tier
// holds MEM_CACHE_BYTES less a twelfth (memTierConfig), which a full tier
// leaves to the collector with that twentieth: at least minCollectorRoom.
// GOMEMLIMIT, when set, wins; on Lambda setMemoryLimit has set the bound
// from the function's memory. With the heap bounded, GOGC (unless set) is
// raised to gcPercentOffLambda.
func setMemoryLimitOffLambda(lim *memoryLimit, cfg config.Tiles, log *slog.Logger) {
	if !limitedOffLambda(cfg) {
		return
	}
	debug.FreeOSMemory()
	base := goMemoryInUse()
	tier := memTierConfig(cfg).MemBytes
	lim.setBound(base + tier + max(cfg.MemBytes-tier+cfg.MemBytes/20, minCollectorRoom))
	gcPercent := os.Getenv("GOGC")
	if gcPercent == "" {
		debug.SetGCPercent(gcPercentOffLambda)
		gcPercent = strconv.Itoa(gcPercentOffLambda)
	}
	log.Info("Go memory limit set from MEM_CACHE_BYTES, less the memory tier's bytes off the heap", "limit_bytes", lim.limit(),
		"base_bytes", base, "gc_percent", gcPercent)
}

// minCollectorRoom is the least room the limit off Lambda leaves the
// collector beside a full memory tier. What a tier's twelfth and the
// bound's twentieth leave is less below 30 MiB: at MEM_CACHE_BYTES=1MiB,
// 140 KiB, which a local server's own growth under load (goroutine stacks
// and buffers of 20 connections, 1.5 MB) takes whole, and the collector
// then runs for every few requests' garbage. Such a process may exceed
// MEM_CACHE_BYTES × 1.1 + base by the difference.
const minCollectorRoom = 4 << 20

// gcPercentOffLambda is the collector's GOGC once setMemoryLimitOffLambda
// has bounded the heap, unless GOGC is set. The limit, not GOGC, keeps the
// process within its bound; GOGC decides how far below it the heap goal
// lies while the limit is far away. With the tier's bodies off the heap
// the live heap is a few MB whatever the tier holds, and at 200 its goal
// (three times the live heap, at least 8 MiB) leaves the collector about
// the room a full tier's limit does: 49 collections per 100,000 memory
// hits with a tier four times the set, 65 with the set filling 7/8 of it
// (94 at 400, 24 with the roomy tier; wrk -c 20 over 1,365 tiles of
// 20-46 KB, GODEBUG=gctrace=1), for the same CPU per hit within the noise.
const gcPercentOffLambda = 200

// limitedOffLambda reports whether setMemoryLimitOffLambda sets a limit.
func limitedOffLambda(cfg config.Tiles) bool {
	return cfg.FunctionMemoryBytes == 0 && os.Getenv("GOMEMLIMIT") == "" && cfg.MemBytes > 0
}

// memTierRoom is the share of MEM_CACHE_BYTES the memory tier leaves to the
// collector under setMemoryLimitOffLambda's limit: 1/memTierRoom.
const memTierRoom = 12

// memTierConfig is cfg as the memory tier is built from it. Under the limit
// of setMemoryLimitOffLambda the tier holds MEM_CACHE_BYTES less a twelfth:
// a full tier's bodies are off the heap, but the runtime's own memory grows
// with the garbage of the fills that filled it (heap metadata, free spans
// not yet returned), and a tier of nothing but entries on the heap
// (remembered 404s) is heap itself; a tier of the whole of MEM_CACHE_BYTES
// would leave the collector only the twentieth of overshoot. On Lambda, and
// with GOMEMLIMIT set, the tier holds MEM_CACHE_BYTES: the limit there is
// not derived from it.
func memTierConfig(cfg config.Tiles) config.Tiles {
	if limitedOffLambda(cfg) {
		cfg.MemBytes -= cfg.MemBytes / memTierRoom
	}
	return cfg
}

// goMemoryInUse is the memory the Go runtime has mapped and not returned to
// the system: what the memory limit counts. Read through runtime.MemStats,
// once, rather than runtime/metrics, whose package initialiser (its table
// of metric descriptions, 0.07-0.09 ms) every cold start would pay.
func goMemoryInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.Sys - m.HeapReleased)
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
