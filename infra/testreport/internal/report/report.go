// Package report turns the event stream of go test -json into a report a
// person can follow while the tests run: a line per package as it finishes,
// a heartbeat while nothing else is printed, the output of every failed test
// and build as soon as the failure is known, and a summary at the end with
// the skipped tests and their reasons.
//
// It promises to lose nothing: a line that is not an event (the go command's
// own messages, a build error printed as text, a line cut short) is written
// through as it came. Memory is bounded: a test's output is kept only while
// it runs, and only its last MaxOutput bytes; the summary keeps a bounded
// number of names. A Reporter is safe for concurrent use, so the heartbeat
// may tick from another goroutine while the stream is read.
package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxOutput = 64 << 10
	DefaultMaxLine   = 1 << 20
	DefaultSlowest   = 5
)

// Config says where the report goes and how it reads. The zero value of
// every field but Out is usable.
type Config struct {
	Out io.Writer // the report
	// JSON, if set, receives every event line of the stream as it came,
	// newline-terminated, so the file it writes is valid JSON Lines.
	JSON io.Writer
	// Module is the module path trimmed from package import paths
	// ("github.com/x/y" shows github.com/x/y/shared/cache as shared/cache).
	Module string
	// Heartbeat is how long the report may stay silent while packages run
	// before Tick prints a progress line; zero or less turns it off.
	Heartbeat time.Duration
	Color     bool             // mark the status words with ANSI colours
	Now       func() time.Time // the clock; nil means time.Now
	MaxOutput int              // bytes of output kept per test; 0 means DefaultMaxOutput
	MaxLine   int              // the longest line decoded as an event; 0 means DefaultMaxLine
	Slowest   int              // how many of the slowest packages the summary names; 0 means DefaultSlowest
}

// Outcome is what Finish learnt from the whole stream.
type Outcome struct {
	// Failed is set when a test, a package or a build failed, or when the
	// stream ended before a started package had its result.
	Failed bool
	// Err holds the first error writing the report and the first writing
	// the JSON copy; the outcome of the tests does not depend on it.
	Err error
}

// Reporter reads one go test -json stream and writes its report.
type Reporter struct {
	mu      sync.Mutex // guards every field below
	cfg     Config
	out     *bufio.Writer
	start   time.Time
	lastOut time.Time // when the report last printed anything
	width   int       // the package name column, grown to the longest name seen
	inLine  bool      // Text ended without a newline: the input is mid-line
	running runSet
	sum     summary
	outErr  error
	jsonErr error
}

// New returns a Reporter that starts its clock now.
func New(cfg Config) *Reporter {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	if cfg.Slowest <= 0 {
		cfg.Slowest = DefaultSlowest
	}
	now := cfg.Now()
	return &Reporter{
		cfg:     cfg,
		out:     bufio.NewWriter(cfg.Out),
		start:   now,
		lastOut: now,
		width:   minWidth,
		sum:     newSummary(cfg.Slowest),
	}
}

// ReadFrom reads the stream from in until it ends, handing each line to
// Line; a line longer than MaxLine cannot be an event of test2json, which
// splits long output, so it is written through in pieces as it arrives.
// The error is the reader's, never io.EOF.
func (r *Reporter) ReadFrom(in io.Reader) (int64, error) {
	br := bufio.NewReaderSize(in, r.cfg.MaxLine)
	var n int64
	long := false // in the middle of a line too long for the buffer
	for {
		b, err := br.ReadSlice('\n')
		n += int64(len(b))
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			r.Text(b)
			long = true
			continue
		case long:
			r.Text(b)
		case len(b) > 0:
			r.Line(b)
		}
		long = false
		switch {
		case errors.Is(err, io.EOF):
			return n, nil
		case err != nil:
			return n, fmt.Errorf("report: reading the stream: %w", err)
		}
	}
}

// Line takes one line of the stream, with or without its newline: an event
// updates the report, anything else is written through unchanged.
func (r *Reporter) Line(line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	body := trimNewline(line)
	e, ok := decodeEvent(body)
	if !ok {
		r.text(line)
		if len(line) > 0 && line[len(line)-1] != '\n' {
			r.text([]byte("\n"))
		}
		r.flush()
		return
	}
	r.copyJSON(body)
	r.handle(e)
	r.flush()
}

// Text writes b through to the report unchanged.
func (r *Reporter) Text(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.text(b)
	r.flush()
}

// Tick prints a heartbeat when the report has been silent for Heartbeat.
func (r *Reporter) Tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.Heartbeat <= 0 || r.inLine {
		return
	}
	now := r.cfg.Now()
	if now.Sub(r.lastOut) < r.cfg.Heartbeat {
		return
	}
	r.heartbeat(now)
	r.flush()
}

// Finish reports the packages the stream left without a result, prints the
// summary and returns the outcome. Call it once, after the stream ended.
func (r *Reporter) Finish() Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inLine {
		r.printf("\n")
	}
	for _, p := range r.running.all() {
		r.unfinished(p)
	}
	r.running = runSet{}
	r.printSummary(r.cfg.Now().Sub(r.start))
	r.flush()
	return Outcome{Failed: r.sum.anyFailure(), Err: errors.Join(r.outErr, r.jsonErr)}
}

func (r *Reporter) text(b []byte) {
	if len(b) == 0 {
		return
	}
	r.write(b)
	r.inLine = b[len(b)-1] != '\n'
}

func (r *Reporter) printf(format string, args ...any) {
	r.write(fmt.Appendf(nil, format, args...))
}

func (r *Reporter) write(b []byte) {
	r.lastOut = r.cfg.Now()
	if r.outErr != nil {
		return
	}
	if _, err := r.out.Write(b); err != nil {
		r.outErr = fmt.Errorf("report: writing the report: %w", err)
	}
}

func (r *Reporter) flush() {
	if r.outErr != nil {
		return
	}
	if err := r.out.Flush(); err != nil {
		r.outErr = fmt.Errorf("report: writing the report: %w", err)
	}
}

func (r *Reporter) copyJSON(line []byte) {
	if r.cfg.JSON == nil || r.jsonErr != nil {
		return
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := r.cfg.JSON.Write(buf); err != nil {
		r.jsonErr = fmt.Errorf("report: writing the JSON copy: %w", err)
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}
