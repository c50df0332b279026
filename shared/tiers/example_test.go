package tiers_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// An engine over S3 (here the in-process endpoint) with a memory tier: the
// first Get is a miss that fills the memory tier, the second a hit; a purge
// sends the next Get to S3 again.
func ExampleEngine_Get() {
	s3srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles"}})
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(s3srv.Handler())
	defer hs.Close()
	api := s3srv.Client(hs.URL)
	ctx := context.Background()
	if _, err := s3local.Put(ctx, api, "tiles", "tiles/osm/1/0/0.png", []byte("tile bytes"), "image/png", ""); err != nil {
		log.Fatal(err)
	}

	mem, err := memory.New(memory.Config{MaxBytes: 16 << 20})
	if err != nil {
		log.Fatal(err)
	}
	eng, err := tiers.New(tiers.Config{}, tiers.Deps{
		Memory: mem,
		Origin: origin.NewWithS3(api, origin.Config{Bucket: "tiles", Prefix: "tiles/"}),
	})
	if err != nil {
		log.Fatal(err)
	}
	get := func() {
		r, err := eng.Get(ctx, "osm/1/0/0.png", time.Now())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.Source, string(r.Tile.Body), r.Tile.ContentType)
	}
	get()
	get()
	n, err := eng.Purge("osm/")
	fmt.Println("purged", n, err)
	get()
	// Output:
	// origin tile bytes image/png
	// memory tile bytes image/png
	// purged 1 <nil>
	// origin tile bytes image/png
}
