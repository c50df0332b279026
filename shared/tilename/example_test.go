package tilename_test

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/tilename"
)

// An upload of an archive changes its tileset and TileJSON too, so a purge
// of the archive's key purges those names as well.
func ExampleDerived() {
	fmt.Println(tilename.Derived("osm.pmtiles"))
	fmt.Println(tilename.Derived("osm/metadata.json"))
	fmt.Println(tilename.Derived("osm/12/2048/1361.pbf"))
	// Output:
	// [osm/ osm.json]
	// [osm.json]
	// []
}
