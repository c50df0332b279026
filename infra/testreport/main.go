// Command testreport follows a go test -json stream and reports it as it
// runs: a line per package as it finishes, a heartbeat when nothing else was
// printed for a while (with the packages running and for how long), the
// output of every failed test and build as soon as it fails, and at the end
// a summary with every skipped test and its reason.
//
//	go test -json ./... 2>&1 | testreport [-json FILE] [-heartbeat 30s] [-module PATH] [-color auto]
//
// Lines that are not events (the go command's own messages, build errors
// printed as text) are written through unchanged. It exits 1 when a test,
// a package or a build failed or the stream ended before a started package
// had its result, and 0 otherwise; with bash's pipefail, a pipeline through
// it also fails when the go command does. An interrupt (Ctrl-C reaches the
// whole pipeline) does not stop it: it reads on until go test has exited,
// then reports what finished.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/tilesieve/tilesieve/infra/testreport/internal/report"
)

func main() {
	// Ctrl-C goes to every process of the pipeline; go test prints what it
	// has and exits, and the report of that is worth reading.
	signal.Ignore(os.Interrupt)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, isTerminal))
}

const usage = `usage: go test -json [flags] [packages] 2>&1 | testreport [flags]

Reports a go test -json stream as it runs and summarises it at the end.
Exits 1 when a test, package or build failed, 0 otherwise.
`

// options are the command's flags.
type options struct {
	jsonFile  string
	heartbeat time.Duration
	module    string
	color     string
	slowest   int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.jsonFile, "json", "", "also write the stream's JSON events to `FILE`")
	fs.DurationVar(&o.heartbeat, "heartbeat", 30*time.Second, "print progress after this long without other output (0: never)")
	fs.StringVar(&o.module, "module", "", "show import paths relative to this module `path` (default: the module of the go.mod in this directory or above)")
	fs.StringVar(&o.color, "color", "auto", "colour the status words: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	fs.IntVar(&o.slowest, "slowest", report.DefaultSlowest, "how many of the slowest packages the summary names")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return o, fmt.Errorf("testreport: unexpected arguments %q: the stream comes on standard input", fs.Args())
	}
	switch o.color {
	case "auto", "always", "never":
	default:
		return o, fmt.Errorf("testreport: -color must be auto, always or never, not %q", o.color)
	}
	if o.slowest < 1 {
		return o, fmt.Errorf("testreport: -slowest must be at least 1, not %d", o.slowest)
	}
	return o, nil
}

// run is the command without its process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, terminal func(any) bool) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if terminal(stdin) {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cfg := report.Config{
		Out:       stdout,
		Heartbeat: o.heartbeat,
		Module:    o.module,
		Color:     o.color == "always" || o.color == "auto" && terminal(stdout) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb",
		Slowest:   o.slowest,
	}
	if cfg.Module == "" {
		cfg.Module = findModule()
	}
	if o.jsonFile == "" {
		return follow(report.New(cfg), stdin, stderr, o.heartbeat)
	}
	f, err := createJSON(o.jsonFile)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg.JSON = f
	code := follow(report.New(cfg), stdin, stderr, o.heartbeat)
	if err := f.Close(); err != nil {
		// The copy is for later reading; the tests' outcome stands.
		fmt.Fprintf(stderr, "testreport: %v\n", err)
	}
	return code
}

func createJSON(path string) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("testreport: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("testreport: %w", err)
	}
	return f, nil
}

// follow reads the stream into rep while a ticker drives its heartbeat,
// then prints the summary and returns the exit status.
func follow(rep *report.Reporter, stdin io.Reader, stderr io.Writer, heartbeat time.Duration) int {
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		if heartbeat <= 0 {
			return
		}
		t := time.NewTicker(min(time.Second, heartbeat))
		defer t.Stop()
		for {
			select {
			case <-t.C:
				rep.Tick()
			case <-stop:
				return
			}
		}
	}()
	_, readErr := rep.ReadFrom(stdin)
	close(stop)
	<-ticked
	out := rep.Finish()
	if err := errors.Join(readErr, out.Err); err != nil {
		fmt.Fprintln(stderr, err)
	}
	if out.Failed || readErr != nil {
		return 1
	}
	return 0
}

// isTerminal reports whether f is a character device, as a terminal is;
// the standard library has no isatty, and this is the test it would make.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
