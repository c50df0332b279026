package style_test

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/docs/style"
)

// A style authored against a local run, served through a CDN.
func ExampleRewrite() {
	stored := []byte(`{"version":8,"sources":{"osm":{"type":"vector","url":"http://127.0.0.1:8080/osm.json"},` +
		`"sat":{"type":"raster","tiles":["https://tiles.example.com/{z}/{x}/{y}.jpg"]}},` +
		`"sprite":"sprite","glyphs":"/fonts/{fontstack}/{range}.pbf","layers":[]}`)
	out, err := style.Rewrite(stored, "https://d1.cloudfront.net", "osm")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output:
	// {"version":8,"sources":{"osm":{"type":"vector","url":"https://d1.cloudfront.net/osm.json"},"sat":{"type":"raster","tiles":["https://tiles.example.com/{z}/{x}/{y}.jpg"]}},"sprite":"https://d1.cloudfront.net/osm/sprite","glyphs":"https://d1.cloudfront.net/fonts/{fontstack}/{range}.pbf","layers":[]}
}
