package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/config"
)

// runAsCommand makes this test binary the tiles command in a subprocess,
// so TestHelp drives the real main: its arguments and its exit status.
const runAsCommand = "TILESIEVE_TEST_RUN_TILES"

func TestMain(m *testing.M) {
	if os.Getenv(runAsCommand) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestHelp: -h, -help, --help and help print one usage text on stdout and
// exit 0, with no configuration at all (TILES_BUCKET unset); it says what
// the binary is, that its configuration is the environment, where that is
// documented, and lists every variable. Any other argument is bad usage.
func TestHelp(t *testing.T) {
	t.Parallel()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "AWS_") && !strings.HasPrefix(k, "TILES_") {
			env = append(env, kv)
		}
	}
	env = append(env, runAsCommand+"=1")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"-h"}, 0}, {[]string{"-help"}, 0}, {[]string{"--help"}, 0}, {[]string{"help"}, 0},
		{[]string{"-port", "8080"}, 2}, {[]string{"help", "me"}, 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], tc.args...)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got, other := stdout.String(), stderr.String()
			if tc.code != 0 {
				got, other = other, got
				if !strings.HasPrefix(got, "tiles: unexpected arguments") {
					t.Errorf("stderr does not start by naming the arguments:\n%s", got)
				}
			}
			if code != tc.code || other != "" {
				t.Fatalf("got exit %d, stdout %q, stderr %q; want %d and one output", code, stdout.String(), stderr.String(), tc.code)
			}
			for _, want := range []string{"usage: tiles\n", "tilesieve's tile function", "reads its configuration from the environment", "defaults;\ndocs/configuration.md says what each does"} {
				if !strings.Contains(got, want) {
					t.Errorf("the usage lacks %q:\n%s", want, got)
				}
			}
			for _, v := range config.TilesVars() {
				if !strings.Contains(got, "\n  "+v.Name+" ") {
					t.Errorf("the usage does not list %s:\n%s", v.Name, got)
				}
			}
		})
	}
}
