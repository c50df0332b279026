package sources_test

import (
	"slices"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin/sources"
)

func table() *sources.Table {
	return sources.New(sources.Default{Bucket: "main", Prefix: "tiles/"}, []sources.Source{
		{Name: "osm", Bucket: "other", Prefix: "maps/osm/"},
		{Name: "sat", Bucket: "open-data", Prefix: "", RequesterPays: true},
		{Name: "world", Bucket: "other", Prefix: "maps/world.pmtiles"},
		{Name: "db", Bucket: "main", Prefix: "tiles/dbs/roads.mbtiles"},
		{Name: "osm2", Bucket: "other", Prefix: "maps/osm/v2/"}, // inside osm's prefix
	})
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tb := table()
	for _, tc := range []struct {
		key            string
		source         string // "" for the default
		objectKey      string
		routed, exists bool
	}{
		{key: "roads/1/2/3.pbf"},
		{key: "roads.pmtiles"},
		{key: "osmosis/1/2/3.pbf"},
		{key: "osm/1/2/3.pbf", source: "osm", objectKey: "maps/osm/1/2/3.pbf", routed: true, exists: true},
		{key: "osm/metadata.json", source: "osm", objectKey: "maps/osm/metadata.json", routed: true, exists: true},
		{key: "osm.pmtiles", source: "osm", routed: true},
		{key: "osm.mbtiles", source: "osm", routed: true},
		{key: "osm.json", source: "osm", routed: true},
		{key: "osm", source: "osm", routed: true},
		{key: "sat/4/5/6.jpg", source: "sat", objectKey: "4/5/6.jpg", routed: true, exists: true},
		{key: "world.pmtiles", source: "world", objectKey: "maps/world.pmtiles", routed: true, exists: true},
		{key: "world.mbtiles", source: "world", routed: true},
		{key: "world/1/2/3.pbf", source: "world", routed: true},
		{key: "db.mbtiles", source: "db", objectKey: "tiles/dbs/roads.mbtiles", routed: true, exists: true},
		{key: "db.pmtiles", source: "db", routed: true},
	} {
		t.Run(tc.key, func(t *testing.T) {
			src, obj, routed, exists := tb.Lookup(tc.key)
			if src.Name != tc.source || obj != tc.objectKey || routed != tc.routed || exists != tc.exists {
				t.Errorf("got %q %q %v %v, want %q %q %v %v", src.Name, obj, routed, exists, tc.source, tc.objectKey, tc.routed, tc.exists)
			}
		})
	}
}

func TestTileKeys(t *testing.T) {
	t.Parallel()
	tb := table()
	j := sources.Journal{Bucket: "main", Prefix: "_tilesieve/journal/"}
	for _, tc := range []struct {
		bucket, key string
		want        []string
	}{
		{"main", "tiles/roads/1/2/3.pbf", []string{"roads/1/2/3.pbf"}},
		{"main", "tiles/roads.pmtiles", []string{"roads.pmtiles"}},
		{"main", "elsewhere/roads/1/2/3.pbf", nil},
		{"main", "_tilesieve/journal/head", nil},
		// The default's osm/ is shadowed by the source of that name.
		{"main", "tiles/osm/1/2/3.pbf", nil},
		{"main", "tiles/osm.pmtiles", nil},
		{"other", "maps/osm/1/2/3.pbf", []string{"osm/1/2/3.pbf"}},
		{"other", "maps/osm/metadata.json", []string{"osm/metadata.json"}},
		{"other", "maps/osm/v2/1/2/3.pbf", []string{"osm/v2/1/2/3.pbf", "osm2/1/2/3.pbf"}},
		{"other", "maps/world.pmtiles", []string{"world.pmtiles"}},
		{"other", "maps/world.pmtiles.tmp", nil},
		{"other", "maps/osmx/1/2/3.pbf", nil},
		{"other", "tiles/roads/1/2/3.pbf", nil},
		{"open-data", "4/5/6.jpg", []string{"sat/4/5/6.jpg"}},
		{"open-data", "a//b", nil},
		// A key in two places: the default's tile and the source's archive.
		{"main", "tiles/dbs/roads.mbtiles", []string{"dbs/roads.mbtiles", "db.mbtiles"}},
		{"nobody", "tiles/roads/1/2/3.pbf", nil},
	} {
		t.Run(tc.bucket+"/"+tc.key, func(t *testing.T) {
			if got := tb.TileKeys(tc.bucket, tc.key, j); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTileKeysJournalInWholeBucket: with TILES_PREFIX empty, the journal's
// own writes are never tiles.
func TestTileKeysJournalInWholeBucket(t *testing.T) {
	t.Parallel()
	tb := sources.New(sources.Default{Bucket: "main"}, nil)
	j := sources.Journal{Bucket: "main", Prefix: "_tilesieve/journal/"}
	if got := tb.TileKeys("main", "_tilesieve/journal/head", j); got != nil {
		t.Errorf("got %q, want none", got)
	}
	if got, want := tb.TileKeys("main", "a/1/2/3.png", j), []string{"a/1/2/3.png"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLookupAgreesWithTileKeys: the key a read is routed to maps back to
// the tile key it was read for, so its change purges it.
func TestLookupAgreesWithTileKeys(t *testing.T) {
	t.Parallel()
	tb := table()
	j := sources.Journal{Bucket: "main", Prefix: "_tilesieve/journal/"}
	for _, key := range []string{"osm/1/2/3.pbf", "sat/4/5/6.jpg", "world.pmtiles", "db.mbtiles", "osm2/0/0/0.pbf", "roads/1/1/1.png"} {
		src, obj, routed, exists := tb.Lookup(key)
		bucket := src.Bucket
		if !routed {
			bucket, obj = "main", "tiles/"+key
		} else if !exists {
			t.Fatalf("%s: routed to nothing", key)
		}
		if got := tb.TileKeys(bucket, obj, j); !slices.Contains(got, key) {
			t.Errorf("%s read from %s/%s: its change maps to %q, want %s among them", key, bucket, obj, got, key)
		}
	}
}

func TestBuckets(t *testing.T) {
	t.Parallel()
	if got, want := table().Buckets(), []string{"main", "other", "open-data"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
