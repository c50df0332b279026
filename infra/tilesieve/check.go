package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

func checkCommand() command {
	return command{
		name:    "check",
		args:    "s3://bucket[/JOURNAL_PREFIX]",
		nargs:   1,
		summary: "Check that the bucket honours the conditional writes the purge journal needs.",
		about: `Checks that the bucket honours conditional writes (If-None-Match: * and
If-Match on PUT), which the purge journal needs, with the probe the sync
worker runs: three PUTs of JOURNAL_PREFIX/probe.json (default
` + defaultJournalPrefix() + `). Exit 0: honoured; 1: not honoured, or the
check failed; 2: bad usage.
`,
		setup: func(*flag.FlagSet) func(context.Context, []string, cmdIO) int { return runCheck },
	}
}

// defaultJournalPrefix is JOURNAL_PREFIX's default, as the worker reads it.
func defaultJournalPrefix() string {
	for _, v := range config.WorkerVars() {
		if v.Name == "JOURNAL_PREFIX" {
			return v.Default
		}
	}
	panic("tilesieve: the worker has no JOURNAL_PREFIX setting")
}

func runCheck(ctx context.Context, args []string, c cmdIO) int {
	bucket, prefix, err := parseJournalURL(args[0])
	if err != nil {
		fmt.Fprintln(c.stderr, "tilesieve:", err)
		return 2
	}
	oc, code := s3Client(ctx, c, bucket)
	if code != 0 {
		return code
	}
	j := journal.New(oc.S3(), bucket, prefix, journal.Options{})
	where := "s3://" + bucket + "/" + prefix
	fmt.Fprintf(c.stdout, "%s: checking that the bucket honours conditional writes on PUT (If-None-Match: * and If-Match)\n", where)
	steps, err := j.Probe(ctx)
	for _, st := range steps {
		verdict := "ok"
		if !st.OK {
			verdict = "WRONG, want " + st.Want
		}
		got := fmt.Sprintf("%d %s", st.Status, http.StatusText(st.Status))
		if st.Status < 0 {
			got = "no answer"
		}
		fmt.Fprintf(c.stdout, "  %s: %s: %s\n", st.Request, got, verdict)
	}
	switch {
	case err == nil:
		fmt.Fprintf(c.stdout, "%s: honours conditional writes: the purge journal can be kept here\n", where)
		return 0
	case errors.Is(err, journal.ErrNoConditionalWrites):
		fmt.Fprintf(c.stdout, "%s: does NOT honour conditional writes: the sync worker would refuse to record purges here (%v)\n", where, err)
		return 1
	default:
		fmt.Fprintf(c.stdout, "%s: could not check: %v\n", where, err)
		return 1
	}
}

// parseJournalURL reads s3://bucket[/JOURNAL_PREFIX]; the prefix defaults
// to JOURNAL_PREFIX's default and always ends in "/".
func parseJournalURL(s string) (bucket, prefix string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", fmt.Errorf("%q: want s3://bucket[/JOURNAL_PREFIX]", s)
	}
	prefix = strings.TrimPrefix(u.Path, "/")
	if prefix == "" {
		return u.Host, defaultJournalPrefix(), nil
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return u.Host, prefix, nil
}
