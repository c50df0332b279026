package pmwrite

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLambdasDoNotLinkTheWriter: the writer is for the upload tool; the
// tile function and the worker must not link it (nor the upload package),
// so it adds nothing to their bootstraps. The operator's command, which
// does link it, shows the check can see it.
func TestLambdasDoNotLinkTheWriter(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	const mod = "github.com/tilesieve/tilesieve/"
	deps := func(pkg string) []string {
		out, err := exec.Command(goTool, "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		pkg      string
		wantLink bool
	}{
		{"functions/tiles", false},
		{"worker", false},
		{"infra/tilesieve", true},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			t.Parallel()
			d := deps(tc.pkg)
			for _, p := range []string{mod + "shared/pmtiles/pmwrite", mod + "shared/upload"} {
				if got := slices.Contains(d, p); got != tc.wantLink {
					t.Errorf("%s links %s: got %v, want %v", tc.pkg, p, got, tc.wantLink)
				}
			}
		})
	}
}
