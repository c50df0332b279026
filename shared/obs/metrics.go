package obs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/obs/emf"
)

// Tier is what answered a tile request, as X-Cache tells it.
type Tier uint8

// The tiers a request is counted under.
const (
	TierMemory      Tier = iota // HIT-MEMORY
	TierDisk                    // HIT-DISK
	TierMiss                    // MISS: fetched from S3 (a remembered or fresh 404 included)
	TierRevalidated             // REVALIDATED: a cached copy confirmed by S3 (304)
	TierStale                   // STALE: a cached copy served because S3 failed
	TierError                   // an error answer (5xx)
	numTiers
)

// MetricName is the name of the request counter of t.
func (t Tier) MetricName() string {
	if t < numTiers {
		return tierMetric[t]
	}
	return tierMetric[TierError]
}

var tierMetric = [numTiers]string{
	TierMemory: MetricRequestsMemory, TierDisk: MetricRequestsDisk, TierMiss: MetricRequestsMiss,
	TierRevalidated: MetricRequestsRevalidated, TierStale: MetricRequestsStale, TierError: MetricRequestsError,
}

// Metric names, as CloudWatch shows them. Units are in docs/deploying.md.
const (
	MetricRequestsMemory      = "RequestsMemory"
	MetricRequestsDisk        = "RequestsDisk"
	MetricRequestsMiss        = "RequestsMiss"
	MetricRequestsRevalidated = "RequestsRevalidated"
	MetricRequestsStale       = "RequestsStale"
	MetricRequestsError       = "RequestsError"
	MetricBytesServed         = "BytesServed"
	MetricRequestLatency      = "RequestLatency"
	MetricOriginFetchLatency  = "OriginFetchLatency"
	MetricOriginErrors        = "OriginErrors"
	MetricOriginTimeouts      = "OriginTimeouts"
	MetricMemoryTierBytes     = "MemoryTierBytes"
	MetricMemoryTierEntries   = "MemoryTierEntries"
	MetricDiskTierBytes       = "DiskTierBytes"
	MetricDiskTierEntries     = "DiskTierEntries"
	MetricJournalChecks       = "JournalChecks"
	MetricJournalCheckErrors  = "JournalCheckErrors"
	MetricJournalCheckLatency = "JournalCheckLatency"
	MetricPurgesApplied       = "PurgesApplied"
	MetricKeysDropped         = "KeysDropped"
	MetricJournalLag          = "JournalLag"

	MetricNotifications          = "Notifications"
	MetricPrefixes               = "Prefixes"
	MetricJournalAppendLatency   = "JournalAppendLatency"
	MetricJournalAppendErrors    = "JournalAppendErrors"
	MetricInvalidationsIssued    = "InvalidationsIssued"
	MetricInvalidationsThrottled = "InvalidationsThrottled"
)

// Dimension names.
const (
	DimFunctionName = "FunctionName"
	DimTileSet      = "TileSet"
)

// OtherTileSet is the TileSet under which tilesets past MetricsConfig.MaxTileSets
// are counted.
const OtherTileSet = "(other)"

// DefaultNamespace is the CloudWatch namespace when MetricsConfig leaves it empty.
const DefaultNamespace = "tilesieve"

// DefaultMaxTileSets is the suggested bound of the TileSet dimension.
const DefaultMaxTileSets = 20

// MetricsConfig configures a metric set.
type MetricsConfig struct {
	Namespace    string        // DefaultNamespace when empty
	FunctionName string        // the FunctionName dimension (the Lambda function's name); required
	Interval     time.Duration // least time between two lines; emf.DefaultInterval when 0
	// MaxTileSets is how many tilesets get a line of their own (the TileSet
	// dimension); the rest are counted as OtherTileSet. 0: no TileSet
	// dimension at all.
	MaxTileSets int
}

func (c MetricsConfig) registry(w io.Writer, now time.Time) (*emf.Registry, error) {
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.FunctionName == "" {
		return nil, errors.New("obs: metrics need a function name (the FunctionName dimension)")
	}
	return emf.New(emf.Config{
		Namespace:  c.Namespace,
		Dimensions: []emf.Dimension{{Name: DimFunctionName, Value: c.FunctionName}},
		Interval:   c.Interval,
	}, w, now)
}

// TierSize is what a tier holds.
type TierSize struct {
	Bytes, Entries int64
}

// TileMetrics is the tile function's metric set. Its recording methods are
// safe for concurrent use, lock-free and allocation-free once a tileset has
// been seen; all of them, and MaybeFlush, do nothing on a nil *TileMetrics,
// which is how metrics are turned off.
type TileMetrics struct {
	reg       *emf.Registry
	requests  [numTiers]*emf.Counter
	bytes     *emf.Counter
	latency   *emf.Distribution
	originLat *emf.Distribution
	originErr *emf.Counter
	originTO  *emf.Counter
	checks    *emf.Counter
	checkErr  *emf.Counter
	checkLat  *emf.Distribution
	purges    *emf.Counter
	dropped   *emf.Counter
	lag       *emf.Distribution
	tiers     atomic.Pointer[tierFuncs]

	maxTileSets int
	tilesets    atomic.Pointer[map[string]*tileSetCounters] // copied on write, read without a lock
	tsMu        sync.Mutex                                  // guards adding to tilesets, distinct, other
	distinct    int                                         // tilesets with counters of their own
	other       *tileSetCounters
}

type tierFuncs struct{ memory, disk func() TierSize }

type tileSetCounters struct {
	requests [numTiers]*emf.Counter
	bytes    *emf.Counter
}

// NewTileMetrics returns the tile function's metric set, writing EMF lines to
// w (the function's stdout). now starts the first interval.
func NewTileMetrics(cfg MetricsConfig, w io.Writer, now time.Time) (*TileMetrics, error) {
	reg, err := cfg.registry(w, now)
	if err != nil {
		return nil, err
	}
	m := &TileMetrics{reg: reg, maxTileSets: cfg.MaxTileSets}
	for t := range numTiers {
		m.requests[t] = reg.Counter(t.MetricName(), emf.Count)
	}
	m.bytes = reg.Counter(MetricBytesServed, emf.Bytes)
	m.latency = reg.Distribution(MetricRequestLatency)
	m.originLat = reg.Distribution(MetricOriginFetchLatency)
	m.originErr = reg.Counter(MetricOriginErrors, emf.Count)
	m.originTO = reg.Counter(MetricOriginTimeouts, emf.Count)
	m.checks = reg.Counter(MetricJournalChecks, emf.Count)
	m.checkErr = reg.Counter(MetricJournalCheckErrors, emf.Count)
	m.checkLat = reg.Distribution(MetricJournalCheckLatency)
	m.purges = reg.Counter(MetricPurgesApplied, emf.Count)
	m.dropped = reg.Counter(MetricKeysDropped, emf.Count)
	m.lag = reg.Distribution(MetricJournalLag)
	tier := func(name string, unit emf.Unit, pick func(*tierFuncs) func() TierSize, field func(TierSize) int64) {
		reg.Gauge(name, unit, func() (float64, bool) {
			tf := m.tiers.Load()
			if tf == nil || pick(tf) == nil {
				return 0, false
			}
			return float64(field(pick(tf)())), true
		})
	}
	mem := func(tf *tierFuncs) func() TierSize { return tf.memory }
	disk := func(tf *tierFuncs) func() TierSize { return tf.disk }
	size := func(s TierSize) int64 { return s.Bytes }
	entries := func(s TierSize) int64 { return s.Entries }
	tier(MetricMemoryTierBytes, emf.Bytes, mem, size)
	tier(MetricMemoryTierEntries, emf.Count, mem, entries)
	tier(MetricDiskTierBytes, emf.Bytes, disk, size)
	tier(MetricDiskTierEntries, emf.Count, disk, entries)
	empty := map[string]*tileSetCounters{}
	m.tilesets.Store(&empty)
	return m, nil
}

// WatchTiers names the callbacks the tier gauges read at each flush; a nil
// one (no disk tier) leaves its gauges out. Call it once the tiers exist.
func (m *TileMetrics) WatchTiers(memory, disk func() TierSize) {
	if m == nil {
		return
	}
	m.tiers.Store(&tierFuncs{memory: memory, disk: disk})
}

// Request counts one answered request: the tier that answered it, the body
// bytes sent, and the time to answer. tileset is the tileset's name ("" for
// requests outside any tileset: catalog, admin, health).
func (m *TileMetrics) Request(tileset string, tier Tier, bytes int64, elapsed time.Duration) {
	if m == nil {
		return
	}
	if tier >= numTiers {
		tier = TierError
	}
	m.requests[tier].Inc()
	m.bytes.Add(bytes)
	m.latency.Record(elapsed)
	if tileset != "" && m.maxTileSets > 0 {
		if ts := m.tileSet(tileset); ts != nil {
			ts.requests[tier].Inc()
			ts.bytes.Add(bytes)
		}
	}
}

// tileSet returns the counters of a tileset, making them on first sight.
func (m *TileMetrics) tileSet(name string) *tileSetCounters {
	if ts, ok := (*m.tilesets.Load())[name]; ok {
		return ts
	}
	m.tsMu.Lock()
	defer m.tsMu.Unlock()
	cur := *m.tilesets.Load()
	if ts, ok := cur[name]; ok {
		return ts
	}
	// Names past the bound are remembered (as "other") up to a few times the
	// bound, so that their lookups stay lock-free too; only a flood of
	// distinct names takes this lock on every request.
	if len(cur) >= 4*m.maxTileSets {
		return m.otherSet()
	}
	var ts *tileSetCounters
	if m.distinct < m.maxTileSets {
		if ts = m.newTileSet(name); ts != nil {
			m.distinct++
		}
	}
	if ts == nil {
		ts = m.otherSet()
	}
	next := maps.Clone(cur)
	next[name] = ts
	m.tilesets.Store(&next)
	return ts
}

// otherSet is the counters of OtherTileSet; tsMu is held.
func (m *TileMetrics) otherSet() *tileSetCounters {
	if m.other == nil {
		m.other = m.newTileSet(OtherTileSet)
	}
	return m.other
}

func (m *TileMetrics) newTileSet(name string) *tileSetCounters {
	g, err := m.reg.Group(emf.Dimension{Name: DimTileSet, Value: name})
	if err != nil {
		return nil // a name CloudWatch cannot take (over 1024 bytes): counted as other
	}
	ts := &tileSetCounters{bytes: g.Counter(MetricBytesServed, emf.Bytes)}
	for t := range numTiers {
		ts.requests[t] = g.Counter(t.MetricName(), emf.Count)
	}
	return ts
}

// OriginFetch records one S3 fetch and its outcome: err nil for an answer
// (a 404 or a 304 is an answer), a timeout when err is a deadline, an error
// otherwise.
func (m *TileMetrics) OriginFetch(elapsed time.Duration, err error) {
	if m == nil {
		return
	}
	m.originLat.Record(elapsed)
	switch {
	case err == nil:
	case isTimeout(err):
		m.originTO.Inc()
	default:
		m.originErr.Inc()
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// JournalCheck records one read of the purge journal (a 304 included) and
// whether it failed.
func (m *TileMetrics) JournalCheck(elapsed time.Duration, err error) {
	if m == nil {
		return
	}
	m.checks.Inc()
	m.checkLat.Record(elapsed)
	if err != nil {
		m.checkErr.Inc()
	}
}

// PurgesApplied records journal entries applied by one check: how many, the
// keys they dropped from the tiers, and the age of the newest entry when it
// was applied (the journal lag).
func (m *TileMetrics) PurgesApplied(purges, keysDropped int, newestAge time.Duration) {
	if m == nil || purges <= 0 {
		return
	}
	m.purges.Add(int64(purges))
	m.dropped.Add(int64(keysDropped))
	m.lag.Record(newestAge)
}

// MaybeFlush writes the metrics when the interval has passed; otherwise it
// costs one atomic load. Call it on every request.
func (m *TileMetrics) MaybeFlush(now time.Time) error {
	if m == nil {
		return nil
	}
	return m.reg.MaybeFlush(now)
}

// Flush writes the metrics now (at shutdown).
func (m *TileMetrics) Flush(now time.Time) error {
	if m == nil {
		return nil
	}
	return m.reg.Flush(now)
}

// WorkerMetrics is the sync worker's per-invocation metric set: record during
// an invocation, Flush at its end. Safe for concurrent use; a nil
// *WorkerMetrics records nothing.
type WorkerMetrics struct {
	reg       *emf.Registry
	notes     *emf.Counter
	prefixes  *emf.Counter
	appendLat *emf.Distribution
	appendErr *emf.Counter
	issued    *emf.Counter
	throttled *emf.Counter
}

// NewWorkerMetrics returns the worker's metric set, writing to w.
func NewWorkerMetrics(cfg MetricsConfig, w io.Writer, now time.Time) (*WorkerMetrics, error) {
	reg, err := cfg.registry(w, now)
	if err != nil {
		return nil, fmt.Errorf("obs: %w", err)
	}
	return &WorkerMetrics{
		reg:       reg,
		notes:     reg.Counter(MetricNotifications, emf.Count),
		prefixes:  reg.Counter(MetricPrefixes, emf.Count),
		appendLat: reg.Distribution(MetricJournalAppendLatency),
		appendErr: reg.Counter(MetricJournalAppendErrors, emf.Count),
		issued:    reg.Counter(MetricInvalidationsIssued, emf.Count),
		throttled: reg.Counter(MetricInvalidationsThrottled, emf.Count),
	}, nil
}

// Notifications counts S3 change records received (TestEvents excluded).
func (m *WorkerMetrics) Notifications(n int) {
	if m != nil {
		m.notes.Add(int64(n))
	}
}

// Prefixes counts the purge prefixes left after coalescing.
func (m *WorkerMetrics) Prefixes(n int) {
	if m != nil {
		m.prefixes.Add(int64(n))
	}
}

// JournalAppend records one append to the purge journal and whether it failed.
func (m *WorkerMetrics) JournalAppend(elapsed time.Duration, err error) {
	if m == nil {
		return
	}
	m.appendLat.Record(elapsed)
	if err != nil {
		m.appendErr.Inc()
	}
}

// InvalidationsIssued counts CloudFront invalidation paths accepted.
func (m *WorkerMetrics) InvalidationsIssued(paths int) {
	if m != nil {
		m.issued.Add(int64(paths))
	}
}

// InvalidationsThrottled counts the times CloudFront held invalidations back:
// calls answered with throttling (or too many in progress), and waits for its
// budget of paths in progress (cdn.Outcome.Throttled).
func (m *WorkerMetrics) InvalidationsThrottled(n int) {
	if m != nil {
		m.throttled.Add(int64(n))
	}
}

// Flush writes the invocation's metrics; call it once, at the end of each
// invocation (Lambda may freeze the environment right after).
func (m *WorkerMetrics) Flush(now time.Time) error {
	if m == nil {
		return nil
	}
	return m.reg.Flush(now)
}
