package purge

import (
	"context"
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin/sources"
)

// TestWorkerSourcesFixtures: with SOURCES, each change is mapped to the
// tile keys of the source whose bucket and prefix hold it, in every shape
// AWS delivers (S3 notifications, EventBridge events, SQS batches of
// either); changes no source reads are ignored. The fixtures' buckets are
// "tiles" (the default) and "my-maps" (EventBridge, an existing bucket).
func TestWorkerSourcesFixtures(t *testing.T) {
	t.Parallel()
	table := sources.New(sources.Default{Bucket: workerBucket, Prefix: "tiles/"}, []sources.Source{
		{Name: "mine", Bucket: "my-maps", Prefix: "tiles/"},
		{Name: "radar", Bucket: "my-maps", Prefix: "tiles/weather/radar/"},
		// Shadows the default bucket's osm/.
		{Name: "osm", Bucket: "elsewhere", Prefix: ""},
	})
	for _, tt := range []struct {
		file     string
		prefixes []string
	}{
		{"s3-put.json", []string{"city maps/c++/100%/3/4/5.png"}},
		{"s3-delete.json", nil},                                           // tiles/osm/… is the source osm's tileset, read from another bucket
		{"eventbridge-created.json", []string{"city maps/c++/3/4/5.png"}}, // bucket "tiles"
		{"sqs-eventbridge.json", []string{
			"mine/city maps/c++/3/4/5.png",
			"mine/osm/5/16/10.png",
			"mine/weather/radar/2025-03-08T00:00Z/5/16/10.png",
			"radar/2025-03-08T00:00Z/5/16/10.png",
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			we := newWorkerEnv(t, WorkerConfig{TilesPrefix: "tiles/", Sources: table}, workerOpts{})
			res := we.w.Process(context.Background(), decodeFixture(t, tt.file))
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			got := slices.Sorted(slices.Values(res.Prefixes))
			if !slices.Equal(got, tt.prefixes) {
				t.Errorf("prefixes: got %q, want %q", got, tt.prefixes)
			}
			if len(tt.prefixes) == 0 && we.head(t) != 0 {
				t.Errorf("journal head %d, want no entry", we.head(t))
			}
		})
	}
}
