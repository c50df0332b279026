package gdalmeta

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseMetadata(t *testing.T) {
	t.Parallel()
	const doc = `<GDALMetadata>
  <Item name="NAME" domain="TILING_SCHEME">GoogleMapsCompatible</Item>
  <Item name="ZOOM_LEVEL" domain="TILING_SCHEME">3</Item>
  <Item name="TILING_SCHEME_NAME">WebMercatorQuad</Item>
  <Item name="STATISTICS_MAXIMUM" sample="0">255</Item>
  <Item name="OFFSET" sample="0" role="offset">-10.5</Item>
  <Item name="AREA_OR_POINT">Area &amp; more</Item>
</GDALMetadata>`
	items, err := ParseMetadata(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Item{
		{Name: "NAME", Domain: "TILING_SCHEME", Sample: -1, Value: "GoogleMapsCompatible"},
		{Name: "ZOOM_LEVEL", Domain: "TILING_SCHEME", Sample: -1, Value: "3"},
		{Name: "TILING_SCHEME_NAME", Sample: -1, Value: "WebMercatorQuad"},
		{Name: "STATISTICS_MAXIMUM", Sample: 0, Value: "255"},
		{Name: "OFFSET", Sample: 0, Role: "offset", Value: "-10.5"},
		{Name: "AREA_OR_POINT", Sample: -1, Value: "Area & more"},
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items %+v, want %d", len(items), items, len(want))
	}
	for i := range want {
		if items[i] != want[i] {
			t.Errorf("item %d: got %+v, want %+v", i, items[i], want[i])
		}
	}
	if v, ok := items.Get("TILING_SCHEME", "NAME"); !ok || v != "GoogleMapsCompatible" {
		t.Errorf("got TILING_SCHEME NAME %q %v, want GoogleMapsCompatible", v, ok)
	}
	if _, ok := items.Get("", "STATISTICS_MAXIMUM"); ok {
		t.Error("got a band's item for the whole image")
	}
}

func TestParseMetadataErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
	}{
		{"not XML", "<GDALMetadata><Item", "GDAL_METADATA"},
		{"other root", "<Other/>", "root"},
		{"no name", `<GDALMetadata><Item>1</Item></GDALMetadata>`, "without a name"},
		{"bad sample", `<GDALMetadata><Item name="a" sample="x">1</Item></GDALMetadata>`, "sample"},
		{"deep", "<GDALMetadata>" + strings.Repeat("<a>", 20) + strings.Repeat("</a>", 20) + "</GDALMetadata>", "too deep"},
		{"too many items", "<GDALMetadata>" + strings.Repeat(`<Item name="a">1</Item>`, MaxItems+1) + "</GDALMetadata>", "more than"},
		{"too long", strings.Repeat(" ", MaxXMLBytes+1), "over"},
		{"entity", `<!DOCTYPE x [<!ENTITY e "boom">]><GDALMetadata><Item name="a">&e;</Item></GDALMetadata>`, "GDAL_METADATA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseMetadata(tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseNoData(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		err  bool
	}{
		{"0", 0, false},
		{"-9999\x00", -9999, false},
		{" -3.4028234663852886e+38 ", -3.4028234663852886e+38, false},
		{"nan", math.NaN(), false},
		{"-inf", math.Inf(-1), false},
		{"none", 0, true},
		{"", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseNoData(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("got error %v, want error %v", err, tc.err)
			}
			if !tc.err && got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseStructure(t *testing.T) {
	t.Parallel()
	// As GDAL 3.6 writes it, the leading space of the last line included.
	body := "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\nBLOCK_LEADER=SIZE_AS_UINT4\n" +
		"BLOCK_TRAILER=LAST_4_BYTES_REPEATED\nKNOWN_INCOMPATIBLE_EDITION=NO\n MASK_INTERLEAVED_WITH_IMAGERY=YES\n"
	b := []byte("GDAL_STRUCTURAL_METADATA_SIZE=000174 bytes\n" + body + "\x00\x0f\x00")
	s, ok, err := ParseStructure(b)
	if !ok || err != nil {
		t.Fatalf("got ok %v, error %v", ok, err)
	}
	want := Structure{Items: s.Items, RowMajor: true, Leader: true, Trailer: true, MaskInterleaved: true}
	if len(s.Items) != 6 || s.Items[1] != [2]string{"BLOCK_ORDER", "ROW_MAJOR"} || !reflect.DeepEqual(*s, want) {
		t.Errorf("got %+v, want %+v", *s, want)
	}
	if _, ok, _ := ParseStructure([]byte("\x0f\x00\x00\x01")); ok {
		t.Error("got structural metadata in an ordinary file")
	}
	for _, bad := range []string{
		"GDAL_STRUCTURAL_METADATA_SIZE=000999 bytes\nA=B\n",
		"GDAL_STRUCTURAL_METADATA_SIZE=abc bytes\n",
		"GDAL_STRUCTURAL_METADATA_SIZE=",
	} {
		if _, ok, err := ParseStructure([]byte(bad)); !ok || err == nil {
			t.Errorf("%q: got ok %v error %v, want ok and an error", bad, ok, err)
		}
	}
}

func FuzzParseMetadata(f *testing.F) {
	f.Add(`<GDALMetadata><Item name="NAME" domain="TILING_SCHEME">GoogleMapsCompatible</Item></GDALMetadata>`)
	f.Add(`<GDALMetadata><Item name="a" sample="1" role="scale">2</Item><Item name="b"/></GDALMetadata>`)
	f.Fuzz(func(t *testing.T, s string) {
		items, err := ParseMetadata(s)
		if err == nil && len(items) > MaxItems {
			t.Fatalf("got %d items", len(items))
		}
	})
}

func FuzzParseStructure(f *testing.F) {
	f.Add([]byte("GDAL_STRUCTURAL_METADATA_SIZE=000022 bytes\nBLOCK_ORDER=ROW_MAJOR\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = ParseStructure(b)
	})
}
