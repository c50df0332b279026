package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

func notTerminal(any) bool { return false }

// TestEndToEnd runs go test -json on the sample module's packages and pipes
// it through the command, as the Makefile does.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	goCmd := tooltest.Go.Path(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{
			name:     "a failing package",
			args:     []string{"./skip/", "./fail/"},
			wantCode: 1,
			want: []string{
				">>> FAIL fail TestFails (",
				"    fail_test.go:8: got 1, want 2\n",
				"Skipped tests (4):\n",
				"  skip TestNeedsChromium: chromium not found (apt-get install chromium)\n",
				"Failed tests (2):\n  fail TestFails\n  fail TestSub/bad\n",
				"\nFAIL\n",
			},
		},
		{
			name:     "passing packages",
			args:     []string{"-short", "./skip/", "./pass/", "./notests/"},
			wantCode: 0,
			want: []string{
				"  3 tests: skipped in -short mode (",
				"  skip TestNeedsChromium: chromium not found (apt-get install chromium)\n",
				"Packages: 2 passed, 0 failed, 1 without test files\n",
				"\nPASS\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(goCmd, append([]string{"test", "-json", "-count=1"}, tt.args...)...)
			cmd.Dir = filepath.Join("testdata", "sample")
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
			pr, pw := io.Pipe()
			cmd.Stdout, cmd.Stderr = pw, pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() {
				err := cmd.Wait()
				pw.Close()
				waited <- err
			}()
			jsonPath := filepath.Join(t.TempDir(), "build", "test.json")
			var out, stderr bytes.Buffer
			code := run([]string{"-module", "example.com/sample", "-json", jsonPath, "-color", "never"}, pr, &out, &stderr, notTerminal)
			goErr := <-waited
			if code != tt.wantCode {
				t.Errorf("exit status: got %d, want %d; report:\n%s", code, tt.wantCode, out.String())
			}
			if goFailed := goErr != nil; goFailed != (tt.wantCode != 0) {
				t.Errorf("go test failed: %v, but the report's exit status is %d", goErr, code)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q; got:\n%s", w, out.String())
				}
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			checkJSONLines(t, jsonPath)
		})
	}
}

// checkJSONLines fails unless path holds JSON Lines, one event each.
func checkJSONLines(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var e struct{ Action string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			t.Fatalf("line %d of the JSON copy is not an event: %q", n+1, sc.Text())
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("the JSON copy is empty")
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		terminal bool
		wantCode int
		wantErr  string
	}{
		{name: "help", args: []string{"-h"}, wantCode: 0, wantErr: "usage: go test -json"},
		{name: "bad colour", args: []string{"-color", "blue"}, wantCode: 2, wantErr: "-color must be auto, always or never"},
		{name: "arguments", args: []string{"./..."}, wantCode: 2, wantErr: "the stream comes on standard input"},
		{name: "slowest", args: []string{"-slowest", "0"}, wantCode: 2, wantErr: "-slowest must be at least 1"},
		{name: "unknown flag", args: []string{"-bogus"}, wantCode: 2, wantErr: "flag provided but not defined"},
		{name: "no pipe", terminal: true, wantCode: 2, wantErr: "usage: go test -json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, stderr bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &out, &stderr, func(any) bool { return tt.terminal })
			if code != tt.wantCode {
				t.Errorf("exit status: got %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr: got %q, want it to contain %q", stderr.String(), tt.wantErr)
			}
		})
	}
}

// TestRunCutStream: a stream that ends inside a package fails the run.
func TestRunCutStream(t *testing.T) {
	t.Parallel()
	in := `{"Action":"start","Package":"github.com/tilesieve/tilesieve/shared/cache"}` + "\n" +
		`{"Action":"run","Package":"github.com/tilesieve/tilesieve/shared/cache","Test":"TestGet"}` + "\n"
	var out, stderr bytes.Buffer
	code := run([]string{"-heartbeat", "0"}, strings.NewReader(in), &out, &stderr, notTerminal)
	if code != 1 {
		t.Errorf("exit status: got %d, want 1", code)
	}
	// The module comes from the go.mod above the test's directory.
	if want := "FAIL shared/cache "; !strings.Contains(out.String(), want) {
		t.Errorf("report lacks %q; got:\n%s", want, out.String())
	}
}

func TestModulePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		gomod string
		want  string
	}{
		{"module example.com/m\n\ngo 1.26\n", "example.com/m"},
		{"// a comment\nmodule   example.com/m // trailing\n", "example.com/m"},
		{"module \"example.com/quoted\"\n", "example.com/quoted"},
		{"module\t example.com/tab\n", "example.com/tab"},
		{"go 1.26\nrequire example.com/x v1.0.0\n", ""},
		{"modules example.com/m\n", ""},
		{"module \"unterminated\n", ""},
		{"module a b\n", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := modulePath([]byte(tt.gomod)); got != tt.want {
			t.Errorf("modulePath(%q): got %q, want %q", tt.gomod, got, tt.want)
		}
	}
}

func FuzzModulePath(f *testing.F) {
	for _, s := range []string{"module example.com/m\n", "module \"a\\\"b\"\n", "module\n", "// module x\nmodule y"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, gomod []byte) {
		p := modulePath(gomod)
		if p == "" || bytes.ContainsRune(gomod, '"') {
			return
		}
		if !bytes.Contains(gomod, []byte(p)) || strings.ContainsAny(p, " \t\r\n") {
			t.Fatalf("modulePath(%q) = %q: not one word of the input", gomod, p)
		}
	})
}
