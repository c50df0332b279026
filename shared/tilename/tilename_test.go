package tilename

import (
	"slices"
	"testing"
)

func TestDerived(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fn   string // "key": Derived; "prefix": DerivedOfPrefix
		in   string
		want []string
	}{
		{"key", "osm.pmtiles", []string{"osm/", "osm.json"}},
		{"key", "my.map.pmtiles", []string{"my.map/", "my.map.json"}},
		{"key", "osm/metadata.json", []string{"osm.json"}},
		{"key", "osm/12/2048/1361.png", nil},
		{"key", "deep/a.pmtiles", nil},
		{"key", "deep/osm/metadata.json", nil},
		{"key", ".pmtiles", nil},
		{"key", "/metadata.json", nil},
		{"key", "osm.json", nil},
		{"key", "osm.mbtiles", []string{"osm/", "osm.json"}}, // an MBTiles database is its tileset too
		{"prefix", "osm.pmtiles", []string{"osm/", "osm.json"}},
		{"prefix", "osm.pm", []string{"osm/", "osm.json"}},
		{"prefix", "my.map.pmtiles", []string{"my.map/", "my.map.json"}},
		{"prefix", "osm/", []string{"osm.json"}},
		{"prefix", "osm/meta", []string{"osm.json"}},
		{"prefix", "osm/metadata.json", []string{"osm.json"}},
		{"prefix", "osm/12/", nil},
		{"prefix", "osm/12/2048/1361.png", nil},
		{"prefix", "os", nil}, // covers osm/, osm.json and osm.pmtiles itself
		{"prefix", "osm.json", nil},
		{"prefix", "", nil},
		{"prefix", ".pmtiles", nil},
		{"prefix", "deep/a.pmtiles", nil},
	}
	for _, tt := range tests {
		t.Run(tt.fn+"/"+tt.in, func(t *testing.T) {
			t.Parallel()
			derive := Derived
			if tt.fn == "prefix" {
				derive = DerivedOfPrefix
			}
			if got := derive(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"Dir", Dir("osm"), "osm/"},
		{"TileJSONKey", TileJSONKey("osm"), "osm.json"},
		{"MetadataKey", MetadataKey("osm"), "osm/metadata.json"},
		{"TrimArchiveExt pmtiles", TrimArchiveExt("osm.pmtiles"), "osm"},
		{"TrimArchiveExt mbtiles", TrimArchiveExt("osm.mbtiles"), "osm"},
		{"TrimArchiveExt other", TrimArchiveExt("osm.json"), "osm.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestArchiveAndTileJSONName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key      string
		archive  string
		isArch   bool
		tilejson string
		isTJ     bool
	}{
		{"osm.pmtiles", "osm", true, "", false},
		{"osm.json", "", false, "osm", true},
		{".pmtiles", "", false, "", false},
		{"a/b.pmtiles", "", false, "", false},
		{"a/b.json", "", false, "", false},
		{"osm", "", false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()
			if n, ok := singleFileName(tt.key); ok != tt.isArch || (ok && n != tt.archive) {
				t.Errorf("singleFileName: got %q %v, want %q %v", n, ok, tt.archive, tt.isArch)
			}
			if n, ok := TileJSONName(tt.key); ok != tt.isTJ || (ok && n != tt.tilejson) {
				t.Errorf("TileJSONName: got %q %v, want %q %v", n, ok, tt.tilejson, tt.isTJ)
			}
		})
	}
}

func TestDerivedOfPrefixSingleFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefix string
		want   []string
	}{
		{"osm.pmtiles", []string{"osm/", "osm.json"}},
		{"osm.pm", []string{"osm/", "osm.json"}},
		{"osm.mbtiles", []string{"osm/", "osm.json"}},
		{"osm.mb", []string{"osm/", "osm.json"}},
		{"osm.x", nil},
		{"my.map.pmtiles", []string{"my.map/", "my.map.json"}},
		{"osm/", []string{"osm.json"}},
		{"osm/meta", []string{"osm.json"}},
		{"osm/metadata.json", []string{"osm.json"}},
		{"osm/12/", nil},
		{"osm/12/2048/1361.png", nil},
		{"os", nil}, // covers osm/, osm.json and osm.pmtiles itself
		{"osm.json", nil},
		{"", nil},
		{".pmtiles", nil},
		{"deep/a.pmtiles", nil},
		{"deep/a.mbtiles", nil},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			t.Parallel()
			if got := DerivedOfPrefix(tt.prefix); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
