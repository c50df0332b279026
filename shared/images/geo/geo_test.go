package geo_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/geo"
	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
)

const mm = 1e-3

// requireTool skips the test when an external program is missing, or fails
// it when TILESIEVE_REQUIRE_IMAGETOOLS=1 asks for every tool.
func requireTool(t testing.TB, name, pkg string) { imagetest.Require(t, name, pkg) }

func TestUTMGolden(t *testing.T) {
	t.Parallel()
	for _, p := range utmGolden {
		t.Run(fmt.Sprintf("%d/%g,%g", p.epsg, p.lon, p.lat), func(t *testing.T) {
			t.Parallel()
			c, err := geo.Lookup(p.epsg)
			if err != nil {
				t.Fatal(err)
			}
			x, y := c.FromLonLat(p.lon, p.lat)
			if d := math.Hypot(x-p.x, y-p.y); !(d < mm) {
				t.Errorf("forward: got %.4f %.4f, want %.4f %.4f (%.3g m off)", x, y, p.x, p.y, d)
			}
			lon, lat := c.ToLonLat(p.x, p.y)
			if d := groundDistance(lon, lat, p.lon, p.lat); !(d < mm) {
				t.Errorf("inverse: got %.10f %.10f, want %.10f %.10f (%.3g m off)", lon, lat, p.lon, p.lat, d)
			}
		})
	}
}

// groundDistance is a small distance in metres on the sphere, enough to
// state an error bound for two nearly equal points.
func groundDistance(lon1, lat1, lon2, lat2 float64) float64 {
	dl := math.Remainder(lon1-lon2, 360) * math.Cos(lat2*math.Pi/180)
	return math.Hypot(dl, lat1-lat2) * math.Pi / 180 * geo.WGS84A
}

// TestUTMAgainstGDAL projects random points across zones north and south, to
// 1° beyond the zone edges, with gdaltransform and compares both directions.
func TestUTMAgainstGDAL(t *testing.T) {
	t.Parallel()
	requireTool(t, "gdaltransform", "gdal-bin")
	for _, code := range []int{32601, 32619, 32633, 32660, 32701, 32733, 32756} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			c, err := geo.Lookup(code)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(code), 2))
			lon0 := float64(6*(code%100) - 183)
			var lons, lats []float64
			for range 200 {
				lat := rng.Float64()*164 - 80
				if code > 32700 {
					lat = -math.Abs(lat)
				} else {
					lat = math.Abs(lat)
				}
				lons = append(lons, lon0+rng.Float64()*8-4)
				lats = append(lats, lat)
			}
			xs, ys := gdalTransform(t, "EPSG:4326", fmt.Sprintf("EPSG:%d", code), lons, lats)
			backLon, backLat := gdalTransform(t, fmt.Sprintf("EPSG:%d", code), "EPSG:4326", xs, ys)
			var worstF, worstI float64
			for i := range lons {
				x, y := c.FromLonLat(lons[i], lats[i])
				worstF = math.Max(worstF, math.Hypot(x-xs[i], y-ys[i]))
				lon, lat := c.ToLonLat(xs[i], ys[i])
				worstI = math.Max(worstI, groundDistance(lon, lat, backLon[i], backLat[i]))
			}
			t.Logf("worst forward %.3g m, inverse %.3g m", worstF, worstI)
			if !(worstF < mm) || !(worstI < mm) {
				t.Errorf("got worst forward %.3g m, inverse %.3g m, want both < 1 mm", worstF, worstI)
			}
		})
	}
}

func gdalTransform(t *testing.T, from, to string, xs, ys []float64) (ox, oy []float64) {
	t.Helper()
	var in bytes.Buffer
	for i := range xs {
		fmt.Fprintf(&in, "%.12f %.12f\n", xs[i], ys[i])
	}
	cmd := exec.Command("gdaltransform", "-s_srs", from, "-t_srs", to, "-output_xy")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gdaltransform: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		var x, y float64
		if _, err := fmt.Sscan(line, &x, &y); err != nil {
			t.Fatalf("gdaltransform output %q: %v", line, err)
		}
		ox, oy = append(ox, x), append(oy, y)
	}
	if len(ox) != len(xs) {
		t.Fatalf("gdaltransform: got %d points, want %d", len(ox), len(xs))
	}
	return ox, oy
}

func TestMercator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lon, lat, x, y float64
	}{
		{0, 0, 0, 0},
		{180, 0, geo.MercatorHalfWorld, 0},
		{-180, geo.MaxMercatorLat, -geo.MercatorHalfWorld, geo.MercatorHalfWorld},
		// gdaltransform -s_srs EPSG:4326 -t_srs EPSG:3857
		{15, 52, 1669792.3618991, 6800125.45439731},
		{-122.4194, 37.7749, -13627665.2712181, 4547675.35434056},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%g,%g", tt.lon, tt.lat), func(t *testing.T) {
			t.Parallel()
			x, y := geo.LonLatToMercator(tt.lon, tt.lat)
			if math.Abs(x-tt.x) > mm || math.Abs(y-tt.y) > mm {
				t.Errorf("got %.4f %.4f, want %.4f %.4f", x, y, tt.x, tt.y)
			}
			lon, lat := geo.MercatorToLonLat(tt.x, tt.y)
			if groundDistance(lon, lat, tt.lon, tt.lat) > mm {
				t.Errorf("inverse: got %.10f %.10f, want %.10f %.10f", lon, lat, tt.lon, tt.lat)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		epsg int
		want string
	}{
		{3857, "EPSG:3857 (WGS 84 / Pseudo-Mercator)"},
		{4326, "EPSG:4326 (WGS 84)"},
		{32601, "EPSG:32601 (WGS 84 / UTM zone 1N)"},
		{32660, "EPSG:32660 (WGS 84 / UTM zone 60N)"},
		{32701, "EPSG:32701 (WGS 84 / UTM zone 1S)"},
		{32760, "EPSG:32760 (WGS 84 / UTM zone 60S)"},
		{32600, ""},
		{32661, ""}, // UPS north
		{32700, ""},
		{32761, ""},
		{2056, ""},
		{0, ""},
		{-3857, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.epsg), func(t *testing.T) {
			t.Parallel()
			c, err := geo.Lookup(tt.epsg)
			if tt.want == "" {
				var ue *geo.UnsupportedError
				if !errors.As(err, &ue) || ue.EPSG != tt.epsg {
					t.Fatalf("got %v, want an *UnsupportedError for %d", err, tt.epsg)
				}
				for _, cmd := range []string{geo.ReprojectCommand, geo.GoogleMapsCommand} {
					if !strings.Contains(err.Error(), cmd) {
						t.Errorf("got message %q, want it to quote %q", err, cmd)
					}
				}
				return
			}
			if err != nil || c.String() != tt.want || c.EPSG() != tt.epsg {
				t.Errorf("got %v, %v, want %s", c, err, tt.want)
			}
		})
	}
}

func TestOutsideDomain(t *testing.T) {
	t.Parallel()
	utm, _ := geo.Lookup(32633)
	wgs, _ := geo.Lookup(4326)
	var zero geo.CRS
	tests := []struct {
		name string
		f    func() (float64, float64)
	}{
		{"utm far side", func() (float64, float64) { return utm.FromLonLat(15+120, 10) }},
		{"utm beyond pole", func() (float64, float64) { return utm.FromLonLat(15, 91) }},
		{"utm NaN", func() (float64, float64) { return utm.FromLonLat(math.NaN(), 0) }},
		{"utm inverse far", func() (float64, float64) { return utm.ToLonLat(1e12, 0) }},
		{"utm inverse Inf", func() (float64, float64) { return utm.ToLonLat(0, math.Inf(1)) }},
		{"4326 beyond pole", func() (float64, float64) { return wgs.FromLonLat(0, -90.5) }},
		{"mercator beyond pole", func() (float64, float64) { return geo.LonLatToMercator(0, 100) }},
		{"zero CRS", func() (float64, float64) { return zero.FromLonLat(1, 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if x, y := tt.f(); !math.IsNaN(x) || !math.IsNaN(y) {
				t.Errorf("got %g %g, want NaN NaN", x, y)
			}
		})
	}
}

// TestUTMRoundTrip checks forward∘inverse over a zone and 10° beyond it,
// where Karney's series is still far below a millimetre.
func TestUTMRoundTrip(t *testing.T) {
	t.Parallel()
	tm, err := geo.UTM(33, false)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for lat := -84.0; lat <= 84; lat += 3.5 {
		for dl := -13.0; dl <= 13; dl += 0.75 {
			x, y := tm.Forward(15+dl, lat)
			lon, back := tm.Inverse(x, y)
			worst = math.Max(worst, groundDistance(lon, back, 15+dl, lat))
		}
	}
	if !(worst < 1e-6) {
		t.Errorf("got worst round trip %.3g m, want < 1 µm", worst)
	}
}

func TestNewTransverseMercatorRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		a, f, k0, lon0, fe float64
	}{
		{"zero a", 0, 0, 1, 0, 0},
		{"negative f", 1, -0.1, 1, 0, 0},
		{"f one", 1, 1, 1, 0, 0},
		{"zero k0", 1, 0, 0, 0, 0},
		{"NaN lon0", 1, 0, 1, math.NaN(), 0},
		{"Inf easting", 1, 0, 1, 0, math.Inf(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := geo.NewTransverseMercator(tt.a, tt.f, tt.k0, tt.lon0, tt.fe, 0); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
	for _, zone := range []int{0, 61, -1} {
		if _, err := geo.UTM(zone, false); err == nil {
			t.Errorf("UTM(%d): got no error, want one", zone)
		}
	}
}

// FuzzProjection feeds arbitrary codes and coordinates through every
// conversion: nothing may panic, and a point inside a served CRS's domain
// must come back where it started.
func FuzzProjection(f *testing.F) {
	f.Add(32633, 15.0, 52.0)
	f.Add(4326, -180.0, 90.0)
	f.Add(3857, 1e300, -1e300)
	f.Add(32760, 180.5, -80.0)
	f.Fuzz(func(t *testing.T, epsg int, a, b float64) {
		c, err := geo.Lookup(epsg)
		if err != nil {
			return
		}
		x, y := c.FromLonLat(a, b)
		c.ToLonLat(a, b)
		c.FromMercator(a, b)
		c.ToMercator(a, b)
		if math.IsNaN(x) || math.IsInf(x, 0) || math.IsInf(y, 0) || math.Abs(b) > 84 || math.Abs(a) > 1e6 {
			return
		}
		if c.EPSG() > 32600 {
			lon0 := float64(6*(c.EPSG()%100) - 183)
			if math.Abs(math.Remainder(a-lon0, 360)) > 30 {
				return // the round trip is only promised near the zone
			}
		}
		lon, lat := c.ToLonLat(x, y)
		if d := groundDistance(lon, lat, a, b); !(d < mm) {
			t.Errorf("%v: %g,%g → %g,%g → %g,%g (%.3g m off)", c, a, b, x, y, lon, lat, d)
		}
	})
}

func BenchmarkUTMForward(b *testing.B) {
	c, _ := geo.Lookup(32633)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.FromLonLat(12+float64(i%600)*0.01, 48+float64(i%700)*0.01)
	}
}

func BenchmarkUTMInverse(b *testing.B) {
	c, _ := geo.Lookup(32633)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.ToLonLat(300000+float64(i%600)*10, 5300000+float64(i%700)*10)
	}
}

func BenchmarkMercatorToUTM(b *testing.B) {
	c, _ := geo.Lookup(32633)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.FromMercator(1.5e6+float64(i%600)*10, 6.2e6+float64(i%700)*10)
	}
}
