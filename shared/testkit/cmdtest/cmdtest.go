// Package cmdtest runs a command's test binary as the command itself, in a
// subprocess, so that a test drives the real main: its arguments, its
// output and its exit status.
//
//	func TestMain(m *testing.M) { cmdtest.Main(m, "TILESIEVE_TEST_RUN_TILES", main) }
//
//	r := cmdtest.Run(t, cmdtest.Self("TILESIEVE_TEST_RUN_TILES", env, "-h"))
package cmdtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Main runs main and exits 0 when the environment variable asks this
// process to be the command (Self sets it to 1), else the tests.
func Main(m *testing.M, asCommand string, main func()) {
	if os.Getenv(asCommand) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Self is this test binary as the command (see Main), with args, in env
// plus the variable that makes it the command.
func Self(asCommand string, env []string, args ...string) *exec.Cmd {
	return SelfContext(context.Background(), asCommand, env, args...)
}

// SelfContext is Self, killed when ctx is done.
func SelfContext(ctx context.Context, asCommand string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append([]string(nil), env...), asCommand+"=1")
	return cmd
}

// Result is what a command run wrote and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs cmd to its end, collecting its output; an error other than a
// non-zero exit fails the test.
func Run(t testing.TB, cmd *exec.Cmd) Result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// Help is what a command's usage must say.
type Help struct {
	// Command is its name, as "usage: NAME" and "NAME: unexpected
	// arguments" say it.
	Command   string
	AsCommand string   // the variable of Main
	Says      []string // what the usage text holds besides
	Vars      []string // the variables it lists, one per line
}

// CheckHelp checks that -h, -help, --help and help print one usage text on
// stdout and exit 0 with no configuration at all (no AWS_* or TILES_*
// variable): it names the command, says h.Says and lists h.Vars. Any other
// argument is bad usage: exit 2, the same text on stderr after a line
// naming the arguments.
func CheckHelp(t *testing.T, h Help) {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "AWS_") && !strings.HasPrefix(k, "TILES_") {
			env = append(env, kv)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"-h"}, 0}, {[]string{"-help"}, 0}, {[]string{"--help"}, 0}, {[]string{"help"}, 0},
		{[]string{"-port", "8080"}, 2}, {[]string{"help", "me"}, 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			r := Run(t, Self(h.AsCommand, env, tc.args...))
			got, other := r.Stdout, r.Stderr
			if tc.code != 0 {
				got, other = other, got
				if !strings.HasPrefix(got, h.Command+": unexpected arguments") {
					t.Errorf("stderr does not start by naming the arguments:\n%s", got)
				}
			}
			if r.Code != tc.code || other != "" {
				t.Fatalf("got exit %d, stdout %q, stderr %q; want %d and one output", r.Code, r.Stdout, r.Stderr, tc.code)
			}
			for _, want := range append([]string{"usage: " + h.Command + "\n"}, h.Says...) {
				if !strings.Contains(got, want) {
					t.Errorf("the usage lacks %q:\n%s", want, got)
				}
			}
			for _, v := range h.Vars {
				if !strings.Contains(got, "\n  "+v+" ") {
					t.Errorf("the usage does not list %s:\n%s", v, got)
				}
			}
		})
	}
}
