// Package memlimit is the tile function's Go memory limit: a bound on all
// the process holds (on Lambda 90% of the function's memory; elsewhere
// MEM_CACHE_BYTES with a twentieth more and the idle process's own memory),
// less the bytes the memory tier holds off the heap, which the tier reports
// as they change (memory.Config.OnOffHeap); off Lambda, plus the pixels of
// the IIIF answers being made (pixel.Config.OnInFlight), while they are
// held. GOMEMLIMIT, when
// set, wins. It also decides how much of MEM_CACHE_BYTES the tier holds
// off Lambda (TierConfig) and the collector's GOGC there.
package memlimit

import (
	"log/slog"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"

	"github.com/tilesieve/tilesieve/shared/config"
)

// Limit is the Go memory limit the process keeps, when it keeps one:
// a bound on all it holds, less the bytes the memory tier holds off the
// heap (memory.Config.OnOffHeap). Those are not the collector's to account
// for, so a full tier leaves the collector the same room as an empty one
// would, less what the tier's entries keep on the heap.
type Limit struct {
	mu      sync.Mutex // guards what follows, and orders the updates of the limit
	bound   int64      // 0: the limit is not the process's (GOMEMLIMIT set, or not set yet)
	offHeap int64
	// rendering is the bytes of pixels IIIF answers being made hold; they
	// raise the limit when onTop (off Lambda, where IIIF_RENDER_BYTES is
	// memory beside MEM_CACHE_BYTES; on Lambda both share the function's).
	rendering int64
	onTop     bool
	// spare is the part of the bound's overshoot room (MEM_CACHE_BYTES ×
	// 1.1 + base, against the limit's × 1.05) the tier's bytes off the heap
	// give back to the collector, in proportion to how full tier (its
	// MemBytes) is of them: off Lambda only.
	spare, tier int64
}

// SetBound makes b the bound and sets the limit from it.
func (m *Limit) SetBound(b int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bound = b
	m.apply()
}

// OffHeapChanged is the memory tier's OnOffHeap hook (app.WithOffHeap).
func (m *Limit) OffHeapChanged(resident int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offHeap = resident
	m.apply()
}

// RenderingChanged is the IIIF pipeline's OnInFlight hook
// (pixel.Config.OnInFlight): off Lambda the pixels being made raise the
// limit while they are held.
func (m *Limit) RenderingChanged(inFlight int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rendering = inFlight
	m.apply()
}

// apply sets the limit. m.mu is held.
func (m *Limit) apply() {
	if m.bound > 0 {
		debug.SetMemoryLimit(m.current())
	}
}

// current is the limit: the bound less the off-heap bytes, never below an
// eighth of the bound (leased blocks of evicted entries briefly add to what
// the tier holds), plus the pixels being made off Lambda, plus the share of
// spare the off-heap bytes release (Limit.spare). m.mu is held.
func (m *Limit) current() int64 {
	l := max(m.bound-m.offHeap, m.bound/8)
	if m.onTop {
		l += m.rendering
	}
	if m.spare > 0 && m.tier > 0 {
		hi, lo := bits.Mul64(uint64(m.spare), uint64(min(max(m.offHeap, 0), m.tier)))
		q, _ := bits.Div64(hi, lo, uint64(m.tier)) // hi < tier: offHeap ≤ tier
		l += int64(q)
	}
	return l
}

// Current is the Go memory limit m set last, or 0.
func (m *Limit) Current() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bound == 0 {
		return 0
	}
	return m.current()
}

// OnLambda keeps the process inside the function's memory on
// Lambda: the collector works harder as the heap nears the limit instead
// of letting Lambda kill the process. The bound is 90% of the function's
// memory. GOMEMLIMIT, when set, wins. Off Lambda see
// OffLambda.
func OnLambda(lim *Limit, cfg config.Tiles, log *slog.Logger) {
	if cfg.FunctionMemoryBytes == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	bound := cfg.FunctionMemoryBytes * 9 / 10
	lim.SetBound(bound)
	log.Info("Go memory limit set from the function's memory, less the memory tier's bytes off the heap", "bound_bytes", bound,
		"gc_percent", raiseGCPercent())
}

// raiseGCPercent sets GOGC to GCPercent unless the environment sets it, and
// returns the GOGC the process runs at.
func raiseGCPercent() string {
	if v := os.Getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(GCPercent)
	return strconv.Itoa(GCPercent)
}

// OffLambda keeps the process within what it was configured
// to hold, once init is done: MEM_CACHE_BYTES with a twentieth more, plus
// the Go memory the idle process already uses (measured now, after init,
// after a collection that returns init's garbage to the system), less what
// the memory tier holds off the heap, plus the pixels of the IIIF answers
// being made while they are (Limit.RenderingChanged). The other twentieth of the bound
// (MEM_CACHE_BYTES × 1.1 + base) is for the collector's overshoot. The tier
// holds MEM_CACHE_BYTES less a twelfth (TierConfig), which a full tier
// leaves to the collector with that twentieth: at least MinCollectorRoom.
// The twentieth kept back for overshoot is the collector's too as the tier
// fills off the heap: overshoot is live heap the collector cannot free
// (entries on the heap, as a flood of 404s leaves), and the arena's bytes
// are counted exactly, so a full tier of bodies off the heap leaves the
// collector the whole bound's room (Limit.spare). GOMEMLIMIT, when set, wins; on Lambda OnLambda has set the bound
// from the function's memory. With the heap bounded, GOGC (unless set) is
// raised to GCPercent.
func OffLambda(lim *Limit, cfg config.Tiles, log *slog.Logger) {
	if !limitedOffLambda(cfg) {
		return
	}
	debug.FreeOSMemory()
	base := GoMemoryInUse()
	tier := TierConfig(cfg).MemBytes
	room := cfg.MemBytes - tier + cfg.MemBytes/20
	lim.mu.Lock()
	lim.onTop = true // IIIF_RENDER_BYTES is beside MEM_CACHE_BYTES: what renders hold comes on top
	// The overshoot twentieth, less what MinCollectorRoom already gave.
	lim.spare = max(0, min(cfg.MemBytes/20, room+cfg.MemBytes/20-MinCollectorRoom))
	lim.tier = tier
	lim.mu.Unlock()
	lim.SetBound(base + tier + max(room, MinCollectorRoom))
	gcPercent := raiseGCPercent()
	log.Info("Go memory limit set from MEM_CACHE_BYTES, less the memory tier's bytes off the heap", "limit_bytes", lim.Current(),
		"base_bytes", base, "gc_percent", gcPercent)
}

// MinCollectorRoom is the least room the limit off Lambda leaves the
// collector beside a full memory tier. What a tier's twelfth and the
// bound's twentieth leave is less below 30 MiB: at MEM_CACHE_BYTES=1MiB,
// 140 KiB, which a local server's own growth under load (goroutine stacks
// and buffers of 20 connections, 1.5 MB) takes whole, and the collector
// then runs for every few requests' garbage. Such a process may exceed
// MEM_CACHE_BYTES × 1.1 + base by the difference.
const MinCollectorRoom = 4 << 20

// GCPercent is the collector's GOGC once OnLambda or OffLambda has
// bounded the heap, unless GOGC is set. The limit, not GOGC, keeps the
// process within its bound; GOGC decides how far below it the heap goal
// lies while the limit is far away. With the tier's bodies off the heap
// the live heap is a few MB whatever the tier holds, and at the default
// 100 its goal is a few MB too, so the garbage of each answer brings the
// next collection: a buffered 300 KB memory hit (BenchmarkInvokeBuffered,
// which leaves some 960 KB of the runtime's garbage) took 433-440 µs at
// 100, 264-270 at 200 and 172-176 at 400, the same binary in alternating
// runs. Off Lambda, at 200 the goal (three times the live heap, at least
// 8 MiB) leaves the collector about the room a full tier's limit does: 51
// collections per 100,000 memory hits with a tier four times the set, 68
// with the set filling 7/8 of it (wrk -c 20 over 1,365 tiles of 20-46 KB,
// GODEBUG=gctrace=1, docs/BENCHMARKS.md section 2); at 400 the roomy tier
// collected half as often and the full one more often, for the same CPU
// per hit within the noise.
const GCPercent = 200

// limitedOffLambda reports whether OffLambda sets a limit.
func limitedOffLambda(cfg config.Tiles) bool {
	return cfg.FunctionMemoryBytes == 0 && os.Getenv("GOMEMLIMIT") == "" && cfg.MemBytes > 0
}

// TierRoom is the share of MEM_CACHE_BYTES the memory tier leaves to the
// collector under OffLambda's limit: 1/TierRoom.
const TierRoom = 12

// TierConfig is cfg as the memory tier is built from it. Under the limit
// of OffLambda the tier holds MEM_CACHE_BYTES less a twelfth:
// a full tier's bodies are off the heap, but the runtime's own memory grows
// with the garbage of the fills that filled it (heap metadata, free spans
// not yet returned), and a tier of nothing but entries on the heap
// (remembered 404s) is heap itself; a tier of the whole of MEM_CACHE_BYTES
// would leave the collector only the twentieth of overshoot. On Lambda, and
// with GOMEMLIMIT set, the tier holds MEM_CACHE_BYTES: the limit there is
// not derived from it.
func TierConfig(cfg config.Tiles) config.Tiles {
	if limitedOffLambda(cfg) {
		cfg.MemBytes -= cfg.MemBytes / TierRoom
	}
	return cfg
}

// GoMemoryInUse is the memory the Go runtime has mapped and not returned to
// the system: what the memory limit counts. Read through runtime.MemStats,
// once, rather than runtime/metrics, whose package initialiser (its table
// of metric descriptions, 0.07-0.09 ms) every cold start would pay.
func GoMemoryInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.Sys - m.HeapReleased)
}
