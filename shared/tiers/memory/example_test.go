package memory_test

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// A cache bounded in bytes: tiles go in by key, and a purge removes a whole
// key prefix at the cost of what it removes.
func ExampleNew() {
	c, err := memory.New(memory.Config{MaxBytes: 64 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, key := range []string{"osm/12/2048/1361.pbf", "osm/12/2048/1362.pbf", "sat/3/1/2.png"} {
		c.Set(key, &tile.Tile{Body: []byte("tile bytes"), ContentType: "application/x-protobuf"})
	}
	if t, ok := c.Get("osm/12/2048/1361.pbf"); ok {
		fmt.Printf("hit: %d bytes of %s\n", len(t.Body), t.ContentType)
	}
	entries, _ := c.DeletePrefix("osm/")
	fmt.Println("purged:", entries, "left:", c.Len())
	_, ok := c.Get("osm/12/2048/1362.pbf")
	fmt.Println("after purge, hit:", ok)
	// Output:
	// hit: 10 bytes of application/x-protobuf
	// purged: 2 left: 1
	// after purge, hit: false
}

// A zero or negative bound is a programming error, reported at once.
func ExampleNew_invalid() {
	_, err := memory.New(memory.Config{})
	fmt.Println(err)
	// Output:
	// cache: MaxBytes must be > 0, got 0
}
