// Package docsection rewrites one generated section of a markdown file,
// between `<!-- name:begin -->` and `<!-- name:end -->`, leaving the rest
// of the file (other generators' sections, hand-written text) alone.
package docsection

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Header starts a file that does not exist yet.
const Header = "# Benchmarks\n\nThis file is generated: `make bench` rewrites the sections between the markers, each of which names the command that regenerates it.\n"

// Markers returns the begin and end markers of section name.
func Markers(name string) (begin, end string) {
	return "<!-- " + name + ":begin -->", "<!-- " + name + ":end -->"
}

// Write replaces section name of the file at path with body, appending the
// section when its markers are missing and creating the file with Header
// when it does not exist.
func Write(path, name, body string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		old = []byte(Header)
	} else if err != nil {
		return err
	}
	begin, end := Markers(name)
	doc := string(old)
	block := begin + "\n" + body + end
	b, e := strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case b >= 0 && e > b:
		doc = doc[:b] + block + doc[e+len(end):]
	case b >= 0 || e >= 0:
		return fmt.Errorf("%s: unbalanced %s / %s markers", path, begin, end)
	default:
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		doc += "\n" + block + "\n"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// Command prints args as one shell command line for a section to name:
// each argument with a space or a character the shell would read (a
// pattern's ^$|()*, a quote) is single-quoted, with its own single quotes
// escaped.
func Command(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ^$|()*'\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
