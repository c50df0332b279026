package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
)

// TestHelp: -h, -help, --help and help, of the command and of each
// subcommand, print one usage text on stdout and exit 0; bad usage prints
// it on stderr and exits 2.
func TestHelp(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		code int
		want string // in the output, stdout for 0, stderr for 2
	}{
		{[]string{"help"}, 0, "usage: tilesieve rm s3://bucket/KEY..."},
		{[]string{"-h"}, 0, "usage: tilesieve check"},
		{[]string{"-help"}, 0, "usage: tilesieve upload"},
		{[]string{"--help"}, 0, "'tilesieve help COMMAND'"},
		{[]string{"help", "upload"}, 0, "Flags:\n  -concurrency N"},
		{[]string{"upload", "-h"}, 0, "usage: tilesieve upload [-concurrency N] [-gzip=false] [-quiet] [-to-pmtiles] PATH s3://bucket/prefix/NAME\n"},
		{[]string{"upload", "--help"}, 0, "usage: tilesieve upload"},
		{[]string{"check", "-h"}, 0, "usage: tilesieve check s3://bucket[/JOURNAL_PREFIX]\n"},
		{[]string{"rm", "-help"}, 0, "usage: tilesieve rm s3://bucket/KEY...\n"},
		{[]string{"help", "nope"}, 2, "usage: tilesieve upload"},
		{[]string{"nope"}, 2, `tilesieve: unknown command "nope"`},
		{[]string{"upload", "-nope", "a", "s3://b/c"}, 2, "flag provided but not defined: -nope\nusage: tilesieve upload"},
		{[]string{"rm"}, 2, "usage: tilesieve rm"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tc.args, noEnv, &out, &errOut)
			got, other := out.String(), errOut.String()
			if tc.code != 0 {
				got, other = other, got
			}
			if code != tc.code || !strings.Contains(got, tc.want) || other != "" {
				t.Errorf("got code %d, stdout %q, stderr %q; want %d and %q on the %s alone", code, out.String(), errOut.String(), tc.code, tc.want,
					map[bool]string{true: "stdout", false: "stderr"}[tc.code == 0])
			}
		})
	}
}

// TestSynopsisShowsEveryFlag: a command's usage line names each of its
// flags, so a flag cannot be added without it.
func TestSynopsisShowsEveryFlag(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		fs, _ := c.flags()
		line := c.synopsis()
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(line, "[-"+f.Name+" ") && !strings.Contains(line, "[-"+f.Name+"]") && !strings.Contains(line, "[-"+f.Name+"=") {
				t.Errorf("%s: the usage line %q does not show -%s", c.name, line, f.Name)
			}
		})
		if !strings.HasPrefix(line, "usage: tilesieve "+c.name+" ") || !strings.HasSuffix(line, " "+c.args) {
			t.Errorf("%s: usage line %q", c.name, line)
		}
	}
}
