// Package emf aggregates metrics in memory and writes them as CloudWatch
// embedded metric format (EMF) lines: JSON log events that CloudWatch Logs
// turns into metrics, with no CloudWatch API call and no dependency.
//
// Recording is cheap enough for the hot path: a Counter add is one atomic add,
// a Distribution record a few atomic operations on a fixed bucket array; neither
// locks nor allocates. A Registry writes what was recorded at most once per
// interval (MaybeFlush, called from the request path because Lambda freezes an
// idle environment, so no timer can be trusted to fire) and on demand (Flush,
// at shutdown or at the end of a worker invocation).
//
// What a line holds:
//   - counters: the amount added since the previous line. In the registry's own
//     document a counter is sent even when it is 0, so sums and alarms see an
//     explicit zero for an active environment; in a Group's document (a bounded
//     extra dimension such as a tileset) zero counters are left out, and a
//     group with nothing to say writes no line.
//   - gauges: the value their callback returns at flush time.
//   - distributions: an EMF histogram value {Values, Counts, Min, Max, Sum,
//     Count} over log-linear buckets (at most 100 values, as CloudWatch
//     requires), so CloudWatch can compute percentiles; left out when nothing
//     was recorded.
package emf

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units CloudWatch accepts.
const (
	Seconds         Unit = "Seconds"
	Microseconds    Unit = "Microseconds"
	Milliseconds    Unit = "Milliseconds"
	Bytes           Unit = "Bytes"
	Kilobytes       Unit = "Kilobytes"
	Megabytes       Unit = "Megabytes"
	Gigabytes       Unit = "Gigabytes"
	Terabytes       Unit = "Terabytes"
	Bits            Unit = "Bits"
	Kilobits        Unit = "Kilobits"
	Megabits        Unit = "Megabits"
	Gigabits        Unit = "Gigabits"
	Terabits        Unit = "Terabits"
	Percent         Unit = "Percent"
	Count           Unit = "Count"
	BytesPerSecond  Unit = "Bytes/Second"
	KBytesPerSecond Unit = "Kilobytes/Second"
	MBytesPerSecond Unit = "Megabytes/Second"
	GBytesPerSecond Unit = "Gigabytes/Second"
	TBytesPerSecond Unit = "Terabytes/Second"
	BitsPerSecond   Unit = "Bits/Second"
	KBitsPerSecond  Unit = "Kilobits/Second"
	MBitsPerSecond  Unit = "Megabits/Second"
	GBitsPerSecond  Unit = "Gigabits/Second"
	TBitsPerSecond  Unit = "Terabits/Second"
	CountPerSecond  Unit = "Count/Second"
	None            Unit = "None"
)

// Valid reports whether CloudWatch knows u.
func (u Unit) Valid() bool {
	switch u {
	case Seconds, Microseconds, Milliseconds, Bytes, Kilobytes, Megabytes, Gigabytes, Terabytes,
		Bits, Kilobits, Megabits, Gigabits, Terabits, Percent, Count,
		BytesPerSecond, KBytesPerSecond, MBytesPerSecond, GBytesPerSecond, TBytesPerSecond,
		BitsPerSecond, KBitsPerSecond, MBitsPerSecond, GBitsPerSecond, TBitsPerSecond,
		CountPerSecond, None:
		return true
	}
	return false
}

// Limits of the format.
const (
	MaxMetricsPerDirective = 100 // metrics named in one directive
	MaxValues              = 100 // values of one metric in one document
	MaxDimensions          = 30  // dimensions in one dimension set
)

// DefaultInterval is how often a Registry writes when Config.Interval is 0.
const DefaultInterval = time.Minute

// Dimension is a CloudWatch dimension: a name and its value.
type Dimension struct {
	Name, Value string
}

// Config is a Registry's configuration.
type Config struct {
	// Namespace of every metric, e.g. "tilesieve".
	Namespace string
	// Dimensions every document carries (e.g. FunctionName). Keep them few:
	// every distinct combination of values is a CloudWatch metric of its own.
	Dimensions []Dimension
	// Interval is the least time between two lines written by MaybeFlush
	// (DefaultInterval when 0).
	Interval time.Duration
	// HighResolution asks CloudWatch to store the metrics at 1-second
	// resolution (StorageResolution 1), which costs more.
	HighResolution bool
}

// Validate lists every problem with c in one error.
func (c Config) Validate() error {
	var errs []error
	if c.Namespace == "" || len(c.Namespace) > 1024 {
		errs = append(errs, fmt.Errorf("emf: namespace %q: want 1-1024 characters", c.Namespace))
	}
	if len(c.Dimensions)+1 > MaxDimensions {
		errs = append(errs, fmt.Errorf("emf: %d dimensions: want at most %d (one is kept for a group)", len(c.Dimensions), MaxDimensions-1))
	}
	for _, d := range c.Dimensions {
		if err := d.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("emf: interval %v: want a positive duration", c.Interval))
	}
	return errors.Join(errs...)
}

func (d Dimension) validate() error {
	if d.Name == "" || len(d.Name) > 255 || d.Name[0] == ':' || d.Name == "_aws" {
		return fmt.Errorf("emf: dimension name %q: want 1-255 characters, not starting with ':' and not _aws", d.Name)
	}
	if d.Value == "" || len(d.Value) > 1024 {
		return fmt.Errorf("emf: dimension %s value %q: want 1-1024 characters", d.Name, d.Value)
	}
	return nil
}

// Registry holds metrics and writes them to w as EMF lines. It is safe for
// concurrent use.
type Registry struct {
	cfg      Config
	interval int64        // nanoseconds
	next     atomic.Int64 // unix nanoseconds before which MaybeFlush does nothing
	root     *Group

	mu     sync.Mutex // guards w, groups and every group's metric lists
	w      io.Writer
	groups []*Group // root first, then in creation order
}

// New returns a registry writing to w. start is the beginning of the first
// interval (the clock's now at construction).
func New(cfg Config, w io.Writer, start time.Time) (*Registry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	r := &Registry{cfg: cfg, interval: int64(cfg.Interval), w: w}
	r.next.Store(start.UnixNano() + r.interval)
	r.root = &Group{reg: r, dims: cfg.Dimensions}
	r.groups = []*Group{r.root}
	return r, nil
}

// Interval is the least time between two lines of MaybeFlush.
func (r *Registry) Interval() time.Duration { return time.Duration(r.interval) }

// Counter registers a counter in the registry's own document.
func (r *Registry) Counter(name string, unit Unit) *Counter { return r.root.Counter(name, unit) }

// Distribution registers a distribution of durations, sent in milliseconds.
func (r *Registry) Distribution(name string) *Distribution { return r.root.Distribution(name) }

// Gauge registers a gauge: f is called at each flush; a false ok leaves the
// gauge out of that line.
func (r *Registry) Gauge(name string, unit Unit, f func() (v float64, ok bool)) {
	r.root.Gauge(name, unit, f)
}

// Group returns a document of its own that carries one more dimension (e.g.
// TileSet=name) besides the registry's. Zero counters are left out of it.
// Callers bound how many groups they make: each is a line per flush and a set
// of CloudWatch metrics.
func (r *Registry) Group(dim Dimension) (*Group, error) {
	if err := dim.validate(); err != nil {
		return nil, err
	}
	for _, d := range r.cfg.Dimensions {
		if d.Name == dim.Name {
			return nil, fmt.Errorf("emf: dimension %s is already the registry's", dim.Name)
		}
	}
	g := &Group{reg: r, dims: append(slices.Clip(r.cfg.Dimensions), dim), omitZero: true}
	r.mu.Lock()
	r.groups = append(r.groups, g)
	r.mu.Unlock()
	return g, nil
}

// MaybeFlush writes a line when the interval since the last one has passed.
// When it has not, the cost is one atomic load, so it can run on every
// request. Of concurrent callers that find the interval passed, one writes.
func (r *Registry) MaybeFlush(now time.Time) error {
	if now.UnixNano() < r.next.Load() {
		return nil
	}
	return r.flushIfDue(now)
}

// flushIfDue is MaybeFlush's slow path, kept apart so that the fast one inlines.
func (r *Registry) flushIfDue(now time.Time) error {
	next := r.next.Load()
	t := now.UnixNano()
	if t < next || !r.next.CompareAndSwap(next, t+r.interval) {
		return nil // not due after all, or another caller writes this interval's line
	}
	return r.write(now)
}

// Flush writes what was recorded since the last line, whatever the interval,
// and starts a new interval. Call it at shutdown, or once per invocation.
func (r *Registry) Flush(now time.Time) error {
	r.next.Store(now.UnixNano() + r.interval)
	return r.write(now)
}

func (r *Registry) write(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var buf []byte
	ts := now.UnixMilli()
	for _, g := range r.groups {
		buf = g.appendDocuments(buf, r.cfg, ts)
	}
	if len(buf) == 0 {
		return nil
	}
	_, err := r.w.Write(buf)
	return err
}

// Group is one EMF document: the metrics that share a set of dimension
// values.
type Group struct {
	reg      *Registry
	dims     []Dimension
	omitZero bool

	// guarded by reg.mu
	names    map[string]bool
	counters []*Counter
	gauges   []*gauge
	dists    []*Distribution
}

func (g *Group) register(name string, unit Unit) {
	if name == "" || len(name) > 255 {
		panic(fmt.Sprintf("emf: metric name %q: want 1-255 characters", name))
	}
	if !unit.Valid() {
		panic(fmt.Sprintf("emf: metric %s: unit %q is not a CloudWatch unit", name, unit))
	}
	if g.names == nil {
		g.names = map[string]bool{}
	}
	if g.names[name] {
		panic("emf: metric " + name + " registered twice")
	}
	for _, d := range g.dims {
		if d.Name == name {
			panic("emf: metric " + name + " has the name of a dimension")
		}
	}
	g.names[name] = true
}

// Counter registers a counter in g. Metric names are fixed by the program,
// so an invalid or repeated name panics.
func (g *Group) Counter(name string, unit Unit) *Counter {
	g.reg.mu.Lock()
	defer g.reg.mu.Unlock()
	g.register(name, unit)
	c := &Counter{name: name, unit: unit}
	g.counters = append(g.counters, c)
	return c
}

// Gauge registers a gauge in g (see Registry.Gauge).
func (g *Group) Gauge(name string, unit Unit, f func() (float64, bool)) {
	g.reg.mu.Lock()
	defer g.reg.mu.Unlock()
	g.register(name, unit)
	g.gauges = append(g.gauges, &gauge{name: name, unit: unit, f: f})
}

// Distribution registers a distribution in g (see Registry.Distribution).
func (g *Group) Distribution(name string) *Distribution {
	g.reg.mu.Lock()
	defer g.reg.mu.Unlock()
	g.register(name, Milliseconds)
	d := newDistribution(name)
	g.dists = append(g.dists, d)
	return d
}

// Counter is a monotonic count; each line carries what was added since the
// previous one.
type Counter struct {
	v    atomic.Int64
	_    [56]byte // a cache line of its own: counters bumped together on different cores do not share one
	name string
	unit Unit
}

// Add adds n (n ≥ 0) to the counter.
func (c *Counter) Add(n int64) { c.v.Add(n) }

// Inc adds 1.
func (c *Counter) Inc() { c.v.Add(1) }

type gauge struct {
	name string
	unit Unit
	f    func() (float64, bool)
}
