package config

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the configuration tables of docs/configuration.md")

// page is the configuration reference, relative to this package.
const page = "../../docs/configuration.md"

// table renders the documented variables as the page shows them.
func table(vars []Var) string {
	var b strings.Builder
	b.WriteString("| Variable | Default | What it does |\n|---|---|---|\n")
	for _, v := range vars {
		def := "(empty)"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		doc := v.Doc
		if v.LocalOnly {
			doc += " Local runs only; the SAM template does not set it."
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, def, strings.ReplaceAll(doc, "|", `\|`))
	}
	return b.String()
}

// TestConfigurationTables keeps the configuration tables of
// docs/configuration.md equal to the variables the code reads.
// `go test ./shared/config -update` rewrites them.
func TestConfigurationTables(t *testing.T) {
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, sec := range []struct {
		name string
		vars []Var
	}{{"tiles", TilesVars()}, {"worker", WorkerVars()}} {
		begin, end := "<!-- config:"+sec.name+":begin -->\n", "<!-- config:"+sec.name+":end -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %q … %q section", page, begin, end)
		}
		want := table(sec.vars)
		if got := doc[i+len(begin) : j]; got != want {
			if !*update {
				t.Errorf("%s: the %s configuration table is out of date; run go test ./shared/config -update", page, sec.name)
				continue
			}
			doc = doc[:i+len(begin)] + want + doc[j:]
		}
	}
	if *update {
		if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
