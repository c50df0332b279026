// Package pixel makes an image answer from decoded tiles. A Job is run as a
// list of small steps, a file each: assemble the covered rectangle from its
// tiles (decoded concurrently, each once, with a bound shared by every run
// of a Pipeline), scale it once, mirror and rotate by quarter turns, apply
// the quality, encode once. The deadline is checked between steps.
//
// Every buffer is bounded before it is made (Config.MaxPixels), and an
// encoded answer over Config.MaxBytes is refused, never truncated.
package pixel

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// TileFunc decodes stored tile (col, row): the whole stored tile, padded at
// the edges, as any 8-bit standard image type. It is called concurrently.
type TileFunc func(ctx context.Context, col, row int) (image.Image, error)

// Quality is the rendering of an answer.
type Quality uint8

// Qualities.
const (
	Color Quality = iota
	Gray
	Bitonal
)

// Format is an encoding.
type Format uint8

// Formats.
const (
	JPEG Format = iota
	PNG
)

// Job is one answer to make.
type Job struct {
	// Source is the rectangle of the level's pixels the answer is made of.
	Source image.Rectangle
	// Area is the part of the level the answer shows, in its pixel
	// coordinates: within Source, but for its far edges, which may pass
	// Source's by less than a pixel where the level ends (the pixels there
	// are extended). The zero Rect means Source.
	Area Rect
	// TileSize is the size of the level's stored tiles; tile (c, r) holds
	// the level's pixels from (c·TileSize.X, r·TileSize.Y).
	TileSize image.Point
	Tile     TileFunc
	// Width and Height are the size Area is scaled to, before rotation.
	Width, Height int
	// Rotate is 0, 90, 180 or 270 degrees clockwise, after mirroring.
	Rotate  int
	Mirror  bool
	Quality Quality
	Format  Format
	// Alpha is true when the tiles may carry transparency.
	Alpha bool
}

// Rect is a rectangle with fractional edges.
type Rect struct{ X0, Y0, X1, Y1 float64 }

// Config tunes a Pipeline.
type Config struct {
	// JPEGQuality is the quality of JPEG answers, 1 to 100.
	JPEGQuality int
	// PNGCompression is the compression level of PNG answers.
	PNGCompression png.CompressionLevel
	// MaxBytes bounds an encoded answer.
	MaxBytes int
	// MaxPixels bounds every image a run makes: the assembled source and
	// the scaled answer.
	MaxPixels int64
	// Decoders bounds the tiles decoded at once, across all runs.
	Decoders int
	// InFlightBytes bounds the pixel buffers of all runs at once (see
	// Pipeline.weight): a run waits for room before it makes any, in
	// arrival order, and one that needs more than the whole budget waits
	// for it to empty and runs alone. It is what keeps a flood of large
	// answers within the memory the function has.
	InFlightBytes int64
	// OnInFlight, when set, is told the bytes the runs hold (Stats.InFlight)
	// each time a run takes or gives back its weight, in the order of the
	// changes: the tile function off Lambda raises its Go memory limit by
	// them while they are held.
	OnInFlight func(bytes int64)
}

// DefaultConfig is a configuration for answers of up to 6 MB (a buffered
// Lambda function URL response) from sources of up to 64 Mpx. JPEG quality
// 90: answers are made from tiles already stored as JPEG, and a second
// generation at 85 loses 1 to 4 dB more for 13 to 19% fewer bytes
// (measured on three sources, image/jpeg's 4:2:0).
// Renders in flight hold at most 256 MiB of pixels.
func DefaultConfig() Config {
	return Config{JPEGQuality: 90, PNGCompression: png.BestSpeed, MaxBytes: 6 << 20, MaxPixels: 64 << 20, Decoders: 4,
		InFlightBytes: 256 << 20}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.JPEGQuality < 1 || c.JPEGQuality > 100 {
		errs = append(errs, fmt.Errorf("pixel: JPEGQuality %d is outside [1, 100]", c.JPEGQuality))
	}
	if c.PNGCompression > png.DefaultCompression || c.PNGCompression < png.BestCompression {
		errs = append(errs, fmt.Errorf("pixel: PNGCompression %d is not a png.CompressionLevel", c.PNGCompression))
	}
	if c.MaxBytes < 1 {
		errs = append(errs, fmt.Errorf("pixel: MaxBytes %d is not positive", c.MaxBytes))
	}
	if c.MaxPixels < 1 || c.MaxPixels > 1<<34 {
		errs = append(errs, fmt.Errorf("pixel: MaxPixels %d is outside [1, 2^34]", c.MaxPixels))
	}
	if c.Decoders < 1 || c.Decoders > 1024 {
		errs = append(errs, fmt.Errorf("pixel: Decoders %d is outside [1, 1024]", c.Decoders))
	}
	if c.InFlightBytes < 1 {
		errs = append(errs, fmt.Errorf("pixel: InFlightBytes %d is not positive", c.InFlightBytes))
	}
	return errors.Join(errs...)
}

// Pipeline runs jobs. It is safe for concurrent use; its decode bound is
// shared by all of them.
type Pipeline struct {
	cfg    Config
	sem    chan struct{}       // one token per tile being decoded
	budget *semaphore.Weighted // InFlightBytes

	inFlight, peak, waited atomic.Int64
	// told orders the calls of Config.OnInFlight with the changes they
	// report.
	told sync.Mutex
}

// New makes a Pipeline.
func New(cfg Config) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Pipeline{cfg: cfg, sem: make(chan struct{}, cfg.Decoders), budget: semaphore.NewWeighted(cfg.InFlightBytes)}, nil
}

// Stats is what a Pipeline holds now and has held.
type Stats struct {
	// InFlight is the bytes of pixel buffers the runs now running hold
	// (their weights); InFlightPeak the most at once.
	InFlight, InFlightPeak int64
	// Waited counts the runs that waited for room.
	Waited int64
}

// Stats returns the pipeline's counters.
func (p *Pipeline) Stats() Stats {
	return Stats{InFlight: p.inFlight.Load(), InFlightPeak: p.peak.Load(), Waited: p.waited.Load()}
}

// weight is the bytes of pixel buffers a run of job may hold at once, what
// it takes of InFlightBytes: the source canvas (RGBA, with the row and
// column an area past the level's edge adds), the scaled answer, one more
// image of the answer's size (a rotation or a quality), and the encoded
// bytes (at most MaxBytes). The decoded tiles are bounded apart, by
// Decoders.
func (p *Pipeline) weight(job Job) int64 {
	src := 4 * int64(job.Source.Dx()+1) * int64(job.Source.Dy()+1)
	ans := 4 * int64(job.Width) * int64(job.Height)
	return src + 2*ans + min(int64(p.cfg.MaxBytes), ans)
}

// acquire takes a run's weight of the budget (all of it, when the weight is
// more), waiting in arrival order; release gives it back.
func (p *Pipeline) acquire(ctx context.Context, w int64) (release func(), err error) {
	w = min(w, p.cfg.InFlightBytes)
	if !p.budget.TryAcquire(w) {
		p.waited.Add(1)
		if err := p.budget.Acquire(ctx, w); err != nil {
			return nil, fmt.Errorf("pixel: waiting for %d bytes of room: %w", w, err)
		}
	}
	n := p.held(w)
	for m := p.peak.Load(); n > m && !p.peak.CompareAndSwap(m, n); m = p.peak.Load() {
	}
	return func() { p.held(-w); p.budget.Release(w) }, nil
}

// held adds d to the bytes in flight, tells Config.OnInFlight, and returns
// the new total.
func (p *Pipeline) held(d int64) int64 {
	if p.cfg.OnInFlight == nil {
		return p.inFlight.Add(d)
	}
	p.told.Lock()
	defer p.told.Unlock()
	n := p.inFlight.Add(d)
	p.cfg.OnInFlight(n)
	return n
}

// TooLargeError is a job refused because something it makes would pass a
// bound of the Config.
type TooLargeError struct {
	What  string // "source", "answer" or "encoded answer"
	Size  int64  // pixels or bytes; for an encoded answer, how far it got
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("pixel: %s of %d is over the limit of %d", e.What, e.Size, e.Limit)
}

// frame is what passes from step to step.
type frame struct {
	img image.Image
	out []byte
}

// step is one stage of a run.
type step func(ctx context.Context, p *Pipeline, job *Job, f *frame) error

// steps is the order of a run; the IIIF order of operations is region, size,
// rotation (after mirroring), quality, format.
var steps = [...]step{assemble, scale, rotate, applyQuality, encode}

// Run makes job's answer: the encoded bytes.
func (p *Pipeline) Run(ctx context.Context, job Job) ([]byte, error) {
	if err := p.check(job); err != nil {
		return nil, err
	}
	if job.Area == (Rect{}) {
		s := job.Source
		job.Area = Rect{float64(s.Min.X), float64(s.Min.Y), float64(s.Max.X), float64(s.Max.Y)}
	}
	release, err := p.acquire(ctx, p.weight(job))
	if err != nil {
		return nil, err
	}
	defer release()
	var f frame
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pixel: %w", err)
		}
		if err := s(ctx, p, &job, &f); err != nil {
			return nil, err
		}
	}
	return f.out, nil
}

// check refuses a job that is malformed or would make an image over
// MaxPixels, before anything is allocated.
func (p *Pipeline) check(job Job) error {
	switch {
	case job.Source.Empty() || job.Source.Min.X < 0 || job.Source.Min.Y < 0:
		return fmt.Errorf("pixel: source %v is empty or negative", job.Source)
	case job.TileSize.X < 1 || job.TileSize.Y < 1:
		return fmt.Errorf("pixel: tile size %v is not positive", job.TileSize)
	case job.Width < 1 || job.Height < 1:
		return fmt.Errorf("pixel: answer size %dx%d is not positive", job.Width, job.Height)
	case job.Rotate%90 != 0 || job.Rotate < 0 || job.Rotate >= 360:
		return fmt.Errorf("pixel: rotation %d is not 0, 90, 180 or 270", job.Rotate)
	case job.Tile == nil:
		return errors.New("pixel: job has no TileFunc")
	}
	a, src := job.Area, job.Source
	if a != (Rect{}) && !(a.X0 >= float64(src.Min.X) && a.Y0 >= float64(src.Min.Y) && a.X1 > a.X0 && a.Y1 > a.Y0 &&
		a.X1 < float64(src.Max.X+1) && a.Y1 < float64(src.Max.Y+1)) {
		return fmt.Errorf("pixel: area %+v is not within source %v", a, src)
	}
	if n := int64(job.Source.Dx()+1) * int64(job.Source.Dy()+1); n > p.cfg.MaxPixels {
		return &TooLargeError{What: "source", Size: n, Limit: p.cfg.MaxPixels}
	}
	if n := int64(job.Width) * int64(job.Height); n > p.cfg.MaxPixels {
		return &TooLargeError{What: "answer", Size: n, Limit: p.cfg.MaxPixels}
	}
	return nil
}
