package report

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var record = flag.Bool("record", false, "re-record testdata/streams from the packages of ../../testdata/sample (needs the go command)")

// recordings are the streams the replay tests read, each the output of one
// go test -json run over the sample module, stderr merged in as the
// Makefile merges it.
var recordings = []struct {
	name string
	args []string
	env  []string
}{
	{name: "pass", args: []string{"./pass/"}},
	{name: "fail", args: []string{"./fail/"}},
	{name: "skip", args: []string{"./skip/"}},
	{name: "short", args: []string{"-short", "./pass/", "./skip/"}},
	{name: "panic", args: []string{"./panic/"}},
	{name: "buildfail", args: []string{"./buildfail/", "./vetfail/", "./depbroken/", "./setupfail/"}},
	{name: "buildtext", args: []string{"./buildfail/"}, env: []string{"GODEBUG=gotestjsonbuildtext=1"}},
	{name: "timeout", args: []string{"-timeout", "2s", "./timeout/"}},
	{name: "testmain", args: []string{"./testmain/"}},
	{name: "notests", args: []string{"./notests/"}},
	{name: "bench", args: []string{"-run", "^$", "-bench", ".", "-benchtime", "10x", "./bench/"}},
	{name: "longline", args: []string{"./longline/"}},
	{name: "all", args: []string{"-p", "2", "-short", "-timeout", "3s", "./pass/", "./fail/", "./skip/",
		"./panic/", "./buildfail/", "./timeout/", "./testmain/", "./notests/", "./bench/"}},
}

// TestRecord rewrites the recorded streams when run with -record.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("re-records the streams only with -record")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "sample"))
	if err != nil {
		t.Fatal(err)
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	for _, rec := range recordings {
		args := append([]string{"test", "-json", "-count=1", "-trimpath"}, rec.args...)
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS="}, rec.env...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run() // most of them fail on purpose
		s := strings.ReplaceAll(out.String(), dir, "sample")
		s = strings.ReplaceAll(s, strings.TrimSpace(string(goroot)), "GOROOT")
		path := filepath.Join("testdata", "streams", rec.name+".jsonl")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", path, len(s))
	}
}
