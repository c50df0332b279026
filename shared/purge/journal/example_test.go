package journal_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/tilesieve/tilesieve/shared/origin/s3local"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
)

// The journal against an S3 endpoint (here the in-process one, reached over
// HTTP with SigV4 as on AWS): writers append purges, readers catch up with
// one GET, and a check that finds nothing new is a 304.
func ExampleJournal() {
	srv, err := s3local.New(s3local.Config{Buckets: []string{"tiles"}})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC) }
	j := journal.New(srv.Client(hs.URL), "tiles", "_tilesieve/journal/", journal.Options{Now: clock})

	for _, prefixes := range [][]string{{"osm/12/2048/"}, {"osm.json", "osm.pmtiles", "osm/"}} {
		e, err := j.Append(ctx, prefixes, "example")
		if err != nil {
			panic(err)
		}
		fmt.Println("appended", e.Seq, e.Prefixes)
	}

	snap, err := j.Read(ctx, "")
	if err != nil {
		panic(err)
	}
	fmt.Println("head at", snap.Seq, "keeps", len(snap.Entries), "entries")
	for _, e := range snap.Entries {
		fmt.Println(" ", e.Seq, e.Prefixes, e.Time.Format(time.RFC3339))
	}

	_, err = j.Read(ctx, snap.ETag)
	fmt.Println("read again, unchanged:", errors.Is(err, journal.ErrUnchanged))
	// Output:
	// appended 1 [osm/12/2048/]
	// appended 2 [osm.json osm.pmtiles osm/]
	// head at 2 keeps 2 entries
	//   1 [osm/12/2048/] 2025-03-14T09:00:00Z
	//   2 [osm.json osm.pmtiles osm/] 2025-03-14T09:00:00Z
	// read again, unchanged: true
}
