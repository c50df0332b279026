package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// findModule returns the module path of the go.mod in the working directory
// or the nearest one above it, or "" when there is none.
func findModule() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			return modulePath(data)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// modulePath returns the path of a go.mod's module directive, or "" when
// it has none it can read.
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	sc.Buffer(nil, 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t' && rest[0] != '"') {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, `"`) {
			p, err := strconv.Unquote(rest)
			if err != nil {
				return ""
			}
			return p
		}
		if strings.ContainsFunc(rest, unicode.IsSpace) {
			return ""
		}
		return rest
	}
	return ""
}
