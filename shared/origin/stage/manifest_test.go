package stage

import (
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

var manifestSeeds = []string{
	"demo/0/0/0.png\ndemo/1/0/0.png\n",
	"# comment\r\n\r\n  demo/2/1/1.png  \r\n",
	"../etc/passwd\ndemo//1.png\n/abs/1.png\ndemo/ok.png",
	"\x00\n\xff\xfe\n" + strings.Repeat("a/", 40) + "x\n",
	"",
}

func TestParseManifest(t *testing.T) {
	t.Parallel()
	keys, bad := ParseManifest([]byte(manifestSeeds[1] + manifestSeeds[2]))
	if want := []string{"demo/2/1/1.png", "demo/ok.png"}; !slices.Equal(keys, want) || len(bad) != 3 {
		t.Fatalf("got %q and %d bad lines, want %q and 3", keys, len(bad), want)
	}
}

// FuzzParseManifest: whatever a manifest object holds, only valid tile keys
// come out, and every non-blank, non-comment line is either a key or an error.
func FuzzParseManifest(f *testing.F) {
	for _, s := range manifestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		keys, bad := ParseManifest(body)
		for _, k := range keys {
			if err := tile.ValidateKey(k); err != nil {
				t.Fatalf("staged %q: %v", k, err)
			}
		}
		lines := 0
		for l := range strings.Lines(string(body)) {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines++
			}
		}
		if len(keys)+len(bad) != lines {
			t.Fatalf("%d keys + %d errors for %d lines", len(keys), len(bad), lines)
		}
	})
}
