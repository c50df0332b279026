package pmwrite_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles/pmwrite"
)

// Tiles go in in any order; identical ones are stored once, and the three
// sea tiles, neighbours on the Hilbert curve (ids 2-4), become one
// run-length entry. The archive reads back through the product's reader.
func ExampleWriter() {
	w, err := pmwrite.New(os.TempDir())
	if err != nil {
		panic(err)
	}
	defer w.Close()
	sea := []byte("\x89PNG sea")
	for _, t := range []struct {
		z    uint8
		x, y uint32
		body []byte
	}{{1, 1, 1, sea}, {0, 0, 0, []byte("\x89PNG world")}, {1, 0, 1, sea}, {1, 0, 0, []byte("\x89PNG land")}, {1, 1, 0, sea}} {
		if err := w.Add(t.z, t.x, t.y, t.body); err != nil {
			panic(err)
		}
	}
	var archive bytes.Buffer
	st, err := w.Finish(&archive, pmwrite.Options{TileType: pmtiles.TileTypePNG, Metadata: []byte(`{"name":"world"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d tiles, %d entries, %d distinct\n", st.Tiles, st.Entries, st.Contents)

	r, err := pmtiles.Open(context.Background(), pmtiles.ReaderAt(bytes.NewReader(archive.Bytes())), int64(archive.Len()), pmtiles.Options{})
	if err != nil {
		panic(err)
	}
	tile, _, _ := r.ReadTile(context.Background(), 1, 0, 1)
	h := r.Header()
	fmt.Printf("1/0/1: %q; zooms %d-%d, clustered %v, directories %v\n", tile, h.MinZoom, h.MaxZoom, h.Clustered, h.InternalCompression)
	// Output:
	// 5 tiles, 3 entries, 3 distinct
	// 1/0/1: "\x89PNG sea"; zooms 0-1, clustered true, directories gzip
}
