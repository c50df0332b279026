package config

import (
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/origin/sources"
)

func TestParseSources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []sources.Source
	}{
		{"", nil},
		{"osm=s3://other-bucket/tiles/osm/", []sources.Source{{Name: "osm", Bucket: "other-bucket", Prefix: "tiles/osm/"}}},
		{"osm=s3://other-bucket", []sources.Source{{Name: "osm", Bucket: "other-bucket"}}},
		{"osm=s3://other-bucket/", []sources.Source{{Name: "osm", Bucket: "other-bucket"}}},
		{"sat=s3://open.data-1/v2/?requester-pays", []sources.Source{{Name: "sat", Bucket: "open.data-1", Prefix: "v2/", RequesterPays: true}}},
		{"world=s3://b12/maps/world-2024.pmtiles", []sources.Source{{Name: "world", Bucket: "b12", Prefix: "maps/world-2024.pmtiles"}}},
		{"a=s3://b12/x/ , b=s3://b34/y.mbtiles\n c_1.v2=s3://b12/?requester-pays", []sources.Source{
			{Name: "a", Bucket: "b12", Prefix: "x/"},
			{Name: "b", Bucket: "b34", Prefix: "y.mbtiles"},
			{Name: "c_1.v2", Bucket: "b12", RequesterPays: true},
		}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSources(tc.in)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d: got %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseSourcesRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
	}{
		{"osm", "want NAME=s3://BUCKET/PREFIX"},
		{"=s3://bucket/x/", "want a tileset name"},
		{"osm=https://bucket/x/", "want an s3://BUCKET/PREFIX location"},
		{"osm=s3://Bucket/x/", `bucket "Bucket"`},
		{"osm=s3://ab/x/", `bucket "ab"`},
		{"osm=s3://a..b/x/", "no two dots"},
		{"osm=s3://bucket/x", `prefix "x": want a directory ending in /`},
		{"osm=s3://bucket/x//", `prefix "x//"`},
		{"osm=s3://bucket/x/?public", "unknown option ?public"},
		{"osm/x=s3://bucket/x/", `tileset name "osm/x"`},
		{"_tilesieve=s3://bucket/x/", `tileset name "_tilesieve"`},
		{"osm.json=s3://bucket/x/", "must not end in .json"},
		{"osm.pmtiles=s3://bucket/x/", "must not end in .pmtiles"},
		{"osm=s3://bucket/x/,osm=s3://other/y/", "tileset osm named twice"},
		{"osm=s3://bucket/../x.pmtiles", `archive key "../x.pmtiles"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSources(tc.in)
			if err == nil {
				t.Fatalf("got %v and no error, want an error with %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestParseSourcesJoinsProblems: every bad entry is named at once.
func TestParseSourcesJoinsProblems(t *testing.T) {
	t.Parallel()
	_, err := ParseSources("a=s3://bucket/x,b=s3://B/y/,c=s3://good-bucket/z/")
	if err == nil {
		t.Fatal("got no error, want one")
	}
	for _, want := range []string{`"a=s3://bucket/x"`, `"b=s3://B/y/"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "good-bucket") {
		t.Errorf("got %q, want the good entry left out", err)
	}
}

func TestLoadSources(t *testing.T) {
	t.Parallel()
	base := map[string]string{"TILES_BUCKET": "main", "TILES_PREFIX": "tiles/"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for no error
	}{
		{"two sources", map[string]string{"SOURCES": "a=s3://one-bucket/x/,b=s3://two-bucket/"}, ""},
		{"source in the main bucket beside the journal", map[string]string{"SOURCES": "a=s3://main/elsewhere/"}, ""},
		{"source holding the journal", map[string]string{"SOURCES": "a=s3://main/"}, "the journal would be served as tiles"},
		{"source holding the journal's directory", map[string]string{"SOURCES": "a=s3://main/_tilesieve/"}, "the journal would be served as tiles"},
		{"archive source in the main bucket", map[string]string{"SOURCES": "a=s3://main/a.pmtiles"}, ""},
		{"bad entry", map[string]string{"SOURCES": "a=s3://x/"}, "SOURCES:"},
		{"staging a source's archive", map[string]string{"SOURCES": "a=s3://one-bucket/a.pmtiles", "STAGE_PREFIXES": "a.pmtiles"}, ""},
		{"staging a source's directory", map[string]string{"SOURCES": "a=s3://one-bucket/x/", "STAGE_PREFIXES": "a/1/"}, "only its archive"},
		{"staging a directory source as an archive", map[string]string{"SOURCES": "a=s3://one-bucket/x/", "STAGE_PREFIXES": "a.pmtiles"}, "has no such archive"},
		{"staging the other kind of archive", map[string]string{"SOURCES": "a=s3://one-bucket/a.mbtiles", "STAGE_PREFIXES": "a.pmtiles"}, "has no such archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			lookup := func(k string) string { return env[k] }
			_, terr := LoadTiles(lookup)
			_, werr := LoadWorker(lookup)
			for _, err := range []error{terr, werr} {
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("got error %v, want none", err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					if strings.Contains(tc.name, "staging") && err == werr {
						continue // the worker does not stage
					}
					t.Errorf("got error %v, want one with %q", err, tc.want)
				}
			}
		})
	}
}

// FuzzParseSources: any input is parsed or refused, never a panic, and
// what is parsed spells itself back to the same sources.
func FuzzParseSources(f *testing.F) {
	for _, s := range []string{
		"",
		"osm=s3://other-bucket/tiles/osm/",
		"sat=s3://open.data-1/v2/?requester-pays",
		"world=s3://b12/maps/world.pmtiles, db=s3://b12/x.mbtiles?requester-pays",
		"a=s3://b12/x/\nb=s3://b34/",
		"a=s3://b12/x//?requester-pays?x",
		"=s3://",
		"a==s3://b12/",
		"a=s3://b12/\x00/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseSources(s)
		if err != nil {
			return
		}
		var parts []string
		for _, src := range list {
			parts = append(parts, src.String())
		}
		again, err := ParseSources(strings.Join(parts, ","))
		if err != nil {
			t.Fatalf("%q parsed to %v, whose spelling is refused: %v", s, list, err)
		}
		if len(again) != len(list) {
			t.Fatalf("got %v, want %v", again, list)
		}
		for i := range list {
			if again[i] != list[i] {
				t.Fatalf("got %+v, want %+v", again[i], list[i])
			}
		}
	})
}
