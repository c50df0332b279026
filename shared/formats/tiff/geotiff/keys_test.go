package geotiff

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	t.Parallel()
	// A directory as GDAL writes it for EPSG:32633: model projected,
	// raster PixelIsArea, the citation in GeoAsciiParams, units metre.
	dir := []uint16{
		1, 1, 0, 5,
		KeyModelType, 0, 1, 1,
		KeyRasterType, 0, 1, 1,
		KeyCitation, TagASCIIParams, 22, 0,
		KeyProjectedCSType, 0, 1, 32633,
		KeyProjLinearUnits, 0, 1, 9001,
	}
	d, err := ParseKeys(dir, nil, "WGS 84 / UTM zone 33N|\x00")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[uint16]int{KeyModelType: 1, KeyRasterType: 1, KeyProjectedCSType: 32633, KeyProjLinearUnits: 9001} {
		if got, ok := d.Short(key); !ok || got != want {
			t.Errorf("key %d: got %d %v, want %d", key, got, ok, want)
		}
	}
	if got := d.Keys[KeyCitation].ASCII; got != "WGS 84 / UTM zone 33N" {
		t.Errorf("got citation %q, want %q", got, "WGS 84 / UTM zone 33N")
	}
	withDoubles := []uint16{1, 1, 0, 1, 2057, TagDoubleParams, 1, 1}
	d, err = ParseKeys(withDoubles, []float64{1, 6378137}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Keys[2057].Doubles; len(got) != 1 || got[0] != 6378137 {
		t.Errorf("got doubles %v, want [6378137]", got)
	}
}

func TestParseKeysErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dir     []uint16
		doubles []float64
		ascii   string
		want    string
	}{
		{"short", []uint16{1, 1}, nil, "", "at least 4"},
		{"version", []uint16{2, 1, 0, 0}, nil, "", "version 2"},
		{"more keys than held", []uint16{1, 1, 0, 3, 1024, 0, 1, 1}, nil, "", "says 3 keys"},
		{"doubles past the end", []uint16{1, 1, 0, 1, 2057, TagDoubleParams, 2, 1}, []float64{1}, "", "past GeoDoubleParams"},
		{"ascii past the end", []uint16{1, 1, 0, 1, 1026, TagASCIIParams, 10, 0}, nil, "abc", "past GeoAsciiParams"},
		{"shorts past the end", []uint16{1, 1, 0, 1, 1026, TagKeyDirectory, 10, 4}, nil, "", "past the directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseKeys(tc.dir, tc.doubles, tc.ascii)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTransform(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		scale, tiepoint, matrix []float64
		point                   bool
		want                    [6]float64
		wantErr                 string
	}{
		{"tiepoint and scale", []float64{10, 10, 0}, []float64{0, 0, 0, 500000, 4000000, 0}, nil, false,
			[6]float64{500000, 10, 0, 4000000, 0, -10}, ""},
		{"tiepoint not at the origin", []float64{2, 3, 0}, []float64{10, 20, 0, 100, 200, 0}, nil, false,
			[6]float64{80, 2, 0, 260, 0, -3}, ""},
		{"pixel is point", []float64{10, 10, 0}, []float64{0, 0, 0, 500000, 4000000, 0}, nil, true,
			[6]float64{499995, 10, 0, 4000005, 0, -10}, ""},
		{"matrix", nil, nil, []float64{10, 1, 0, 500, 2, -10, 0, 600, 0, 0, 0, 0, 0, 0, 0, 1}, false,
			[6]float64{500, 10, 1, 600, 2, -10}, ""},
		{"none", nil, nil, nil, false, [6]float64{}, "no ModelTransformation"},
		{"ground control points", []float64{1, 1, 0}, make([]float64, 12), nil, false, [6]float64{}, "ground control points"},
		{"short matrix", nil, nil, []float64{1, 2, 3}, false, [6]float64{}, "16"},
		{"zero scale", []float64{0, 10, 0}, []float64{0, 0, 0, 1, 1, 0}, nil, false, [6]float64{}, "degenerate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Transform(tc.scale, tc.tiepoint, tc.matrix, tc.point)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := Transform(nil, nil, nil, false); !errors.Is(err, ErrNoTransform) {
		t.Errorf("got %v, want ErrNoTransform", err)
	}
}

// FuzzParseKeys decodes any key directory: errors are fine, panics are not.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte{1, 0, 1, 0, 0, 0, 2, 0, 0, 4, 0, 0, 1, 0, 1, 0, 0, 12, 0x31, 0x87, 3, 0, 0, 0}, "abc|", 2)
	f.Fuzz(func(t *testing.T, raw []byte, ascii string, ndoubles int) {
		dir := make([]uint16, len(raw)/2)
		for i := range dir {
			dir[i] = uint16(raw[2*i]) | uint16(raw[2*i+1])<<8
		}
		doubles := make([]float64, max(0, ndoubles%64))
		_, _ = ParseKeys(dir, doubles, ascii)
	})
}

func TestRead(t *testing.T) {
	t.Parallel()
	utm := []uint16{1, 1, 0, 4, KeyModelType, 0, 1, 1, KeyRasterType, 0, 1, 2, KeyProjectedCSType, 0, 1, 32633, KeyProjLinearUnits, 0, 1, 9001}
	geog := []uint16{1, 1, 0, 2, KeyGeographicType, 0, 1, 4326, KeyGeogAngularUnits, 0, 1, 9102}
	user := []uint16{1, 1, 0, 2, KeyModelType, 0, 1, 1, KeyProjectedCSType, 0, 1, UserDefined}
	tie := []float64{0, 0, 0, 500000, 4000000, 0}
	scale := []float64{10, 10, 0}
	tests := []struct {
		name    string
		tags    Tags
		want    Georef
		wantErr string
	}{
		{"projected, pixel is point", Tags{KeyDirectory: utm, Tiepoints: tie, PixelScale: scale},
			Georef{Model: ModelProjected, EPSG: 32633, ProjectedEPSG: 32633, PixelIsPoint: true, LinearUnits: 9001,
				GeoTransform: [6]float64{499995, 10, 0, 4000005, 0, -10}}, ""},
		{"geographic without a model key", Tags{KeyDirectory: geog, Tiepoints: tie, PixelScale: scale},
			Georef{Model: ModelGeographic, EPSG: 4326, GeographicEPSG: 4326, AngularUnits: 9102,
				GeoTransform: [6]float64{500000, 10, 0, 4000000, 0, -10}}, ""},
		{"user-defined CRS", Tags{KeyDirectory: user, Tiepoints: tie, PixelScale: scale},
			Georef{Model: ModelProjected, GeoTransform: [6]float64{500000, 10, 0, 4000000, 0, -10}}, ""},
		{"no directory", Tags{Tiepoints: tie, PixelScale: scale}, Georef{}, "no CRS"},
		{"no model", Tags{KeyDirectory: []uint16{1, 1, 0, 0}, Tiepoints: tie, PixelScale: scale}, Georef{}, "GTModelTypeGeoKey"},
		{"no transform", Tags{KeyDirectory: utm}, Georef{}, "no ModelTransformation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Read(tc.tags)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got != tc.want {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}
