// Package imagetools writes test images with libvips and GDAL, as users
// write theirs: the files the upload command and the local stack are tested
// over. A test that needs a tool it does not find is skipped, or failed
// when TILESIEVE_REQUIRE_IMAGETOOLS is set (CI sets it), as in the rest of
// the project.
package imagetools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// WebMercatorWorld is the extent of the web mercator world in EPSG:3857
// metres, as -a_ullr takes it: west, north, east, south.
var WebMercatorWorld = []string{"-20037508.342789244", "20037508.342789244", "20037508.342789244", "-20037508.342789244"}

// Run runs a tool (vips, gdal_translate, gdalwarp) in dir.
func Run(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	Need(t, name)
	c := exec.Command(name, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// Need skips t when the tool name is missing, or fails it when
// TILESIEVE_REQUIRE_IMAGETOOLS is set.
func Need(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err == nil {
		return
	}
	pkg := "gdal-bin"
	if name == "vips" {
		pkg = "libvips-tools"
	}
	if os.Getenv("TILESIEVE_REQUIRE_IMAGETOOLS") != "" {
		t.Fatalf("%s not found: install %s", name, pkg)
	}
	t.Skipf("%s not found: apt-get install %s", name, pkg)
}

// Noise writes dir/name, a w×h RGB image of libvips noise in libvips'
// own format, and returns name.
func Noise(t testing.TB, dir, name string, w, h int) string {
	t.Helper()
	Run(t, dir, "vips", "gaussnoise", name+".g.v", strconv.Itoa(w), strconv.Itoa(h), "--mean", "128", "--sigma", "30")
	Run(t, dir, "vips", "bandjoin", name+".g.v "+name+".g.v "+name+".g.v", name+".rgb.v")
	Run(t, dir, "vips", "cast", name+".rgb.v", name, "uchar")
	return name
}

// StripTIFF writes dir/name, a w×h RGB TIFF of noise stored in strips (a
// TIFF as most tools save one, and a source GDAL reads), and returns its
// path.
func StripTIFF(t testing.TB, dir, name string, w, h int) string {
	t.Helper()
	Run(t, dir, "vips", "tiffsave", Noise(t, dir, name+".v", w, h), name)
	return filepath.Join(dir, name)
}

// Pyramid writes dir/name, a w×h RGB pyramidal TIFF of 256-px JPEG tiles
// (vips tiffsave --tile --pyramid), and returns its path.
func Pyramid(t testing.TB, dir, name string, w, h int) string {
	t.Helper()
	Run(t, dir, "vips", "tiffsave", Noise(t, dir, name+".v", w, h), name, "--tile", "--pyramid", "--compression", "jpeg")
	return filepath.Join(dir, name)
}

// COG writes dir/name, a Cloud Optimized GeoTIFF GDAL makes of a w×h RGB
// image georeferenced in srs over ullr (-a_srs, -a_ullr), with the COG
// driver's creation options co (as "-co", "K=V" pairs), and returns its
// path.
func COG(t testing.TB, dir, name, srs string, ullr []string, w, h int, co ...string) string {
	t.Helper()
	src := StripTIFF(t, dir, name+".src.tif", w, h)
	geo := name + ".geo.tif"
	Run(t, dir, "gdal_translate", append(append([]string{"-q", "-a_srs", srs, "-a_ullr"}, ullr...), filepath.Base(src), geo)...)
	Run(t, dir, "gdal_translate", append(append([]string{"-q", "-of", "COG"}, co...), geo, name)...)
	return filepath.Join(dir, name)
}

// DEM writes dir/name, a single-band float32 COG GDAL makes (Deflate,
// predictor 3, as GDAL writes elevation models) of a w×h noise image scaled
// to 100–1120 m, georeferenced in srs over ullr, and returns its path.
func DEM(t testing.TB, dir, name, srs string, ullr []string, w, h int) string {
	t.Helper()
	src := StripTIFF(t, dir, name+".src.tif", w, h)
	geo := name + ".geo.tif"
	Run(t, dir, "gdal_translate", append(append([]string{"-q", "-b", "1", "-ot", "Float32", "-scale", "0", "255", "100", "1120",
		"-a_srs", srs, "-a_ullr"}, ullr...), filepath.Base(src), geo)...)
	Run(t, dir, "gdal_translate", "-q", "-of", "COG", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=3", geo, name)
	return filepath.Join(dir, name)
}
