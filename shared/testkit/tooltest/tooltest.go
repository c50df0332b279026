// Package tooltest finds the programs tests run beside Go (a browser, a
// CDN, image and database tools). A test whose program is missing is
// skipped with one line naming the program and what installs it, or failed
// with the same line when the program's environment variable is 1: CI
// installs every program and sets every variable, so there no test is
// skipped for want of a tool.
package tooltest

import (
	"os"
	"os/exec"
	"testing"
)

// Tool is a program tests need that Go does not bring.
type Tool struct {
	Name    string // the command, looked up on PATH, or an absolute path
	Install string // what installs it: "apt-get install varnish"
	Require string // set to 1, makes a missing Name a failure; empty for none
}

// The tools the tests need, with the Debian packages (or commands) that
// install them and the variables .ci/run sets.
var (
	Chromium = Tool{Name: "/usr/bin/chromium", Install: "apt-get install chromium", Require: "TILESIEVE_REQUIRE_CHROMIUM"}
	Node     = Tool{Name: "node", Install: "apt-get install nodejs", Require: "TILESIEVE_REQUIRE_NODE"}
	Varnishd = Tool{Name: "varnishd", Install: "apt-get install varnish", Require: "TILESIEVE_REQUIRE_VARNISH"}
	Emulator = Tool{Name: "aws-lambda-rie", Install: "make tools", Require: "TILESIEVE_REQUIRE_RIE"}
	Curl     = Tool{Name: "curl", Install: "apt-get install curl", Require: "TILESIEVE_REQUIRE_CURL"}
	Go       = Tool{Name: "go", Install: "install Go (https://go.dev/dl)"}
	// SAMTranslator is a Python module, not a command: tests report it
	// missing with Missing.
	SAMTranslator = Tool{Name: "aws-sam-translator", Install: "pip install aws-sam-translator", Require: "TILESIEVE_REQUIRE_SAM"}
)

// Debian is a command of the Debian package pkg that tests need when the
// variable require is 1.
func Debian(cmd, pkg, require string) Tool {
	return Tool{Name: cmd, Install: "apt-get install " + pkg, Require: require}
}

// Path returns the tool's path, or ends the test: a skip, or a failure
// when its variable is 1.
func (tl Tool) Path(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath(tl.Name)
	if err != nil {
		tl.Missing(t)
	}
	return p
}

// Missing ends the test for want of the tool, found missing by the caller:
// a skip, or a failure when its variable is 1.
func (tl Tool) Missing(t testing.TB) {
	t.Helper()
	if tl.Required() {
		t.Fatal(tl.Name + " not found and " + tl.Require + "=1: " + tl.Install)
	}
	msg := tl.Name + " not found: " + tl.Install
	if tl.Require != "" {
		msg += " (" + tl.Require + "=1 makes this a failure)"
	}
	t.Skip(msg)
}

// Required says whether the tool's variable is 1.
func (tl Tool) Required() bool { return tl.Require != "" && os.Getenv(tl.Require) == "1" }
