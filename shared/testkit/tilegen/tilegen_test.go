package tilegen

import (
	"slices"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/tile"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	keys := Keys(40000, 1)
	if len(keys) != 40000 {
		t.Fatalf("got %d keys", len(keys))
	}
	if !slices.Equal(keys, Keys(40000, 1)) {
		t.Fatal("not deterministic")
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Fatalf("duplicate %s", k)
		}
		seen[k] = true
		if err := tile.ValidateKey(k); err != nil {
			t.Fatal(err)
		}
	}
	// Every layer's low-zoom pyramid is complete: 4^0+…+4^6 tiles.
	pyramid := 0
	for _, k := range keys {
		if strings.HasPrefix(k, "osm/") && k[4]-'0' <= PyramidZoom && k[5] == '/' {
			pyramid++
		}
	}
	if pyramid != (1<<(2*(PyramidZoom+1))-1)/3 {
		t.Fatalf("osm pyramid has %d tiles", pyramid)
	}
}
