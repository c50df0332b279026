package registry_test

import (
	"testing"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/registry"
)

// TestRegistryMatchesTable: every format of formats.Table opens, so a format
// added to the table without its opener (or the reverse) fails here.
func TestRegistryMatchesTable(t *testing.T) {
	t.Parallel()
	for _, s := range formats.Table {
		if _, ok := registry.Opener(s.Name); !ok {
			t.Errorf("format %s (%s): no opener in the registry", s.Name, s.Ext)
		}
	}
	if _, ok := registry.Opener("no such format"); ok {
		t.Error("an unknown format has an opener")
	}
}
