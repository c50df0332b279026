package docsection

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "docs", "B.md")
	if err := Write(path, "a", "first\n"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, "b", "other\n"); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, "a", "second\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	doc := string(b)
	if !strings.HasPrefix(doc, Header) || strings.Contains(doc, "first") || !strings.Contains(doc, "<!-- a:begin -->\nsecond\n<!-- a:end -->") || !strings.Contains(doc, "other") {
		t.Fatalf("got:\n%s", doc)
	}
	os.WriteFile(path, []byte("<!-- a:begin -->\nno end"), 0o644)
	if err := Write(path, "a", "x"); err == nil {
		t.Fatal("unbalanced markers accepted")
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"test", "-run", "^$", "./x/"}, `test -run '^$' ./x/`},
		{[]string{"-bench", "^Benchmark(Get|Set)$"}, `-bench '^Benchmark(Get|Set)$'`},
		{[]string{"-flag", "it's"}, `-flag 'it'\''s'`},
		{nil, ""},
	} {
		if got := Command(tc.args); got != tc.want {
			t.Errorf("Command(%q): got %s, want %s", tc.args, got, tc.want)
		}
	}
}
