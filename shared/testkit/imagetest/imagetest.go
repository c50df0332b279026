// Package imagetest makes the image files tests serve the way users make
// theirs: with libvips (Debian's libvips-tools) and GDAL (gdal-bin). A test
// whose tool is missing is skipped with the package that installs it, or
// fails when TILESIEVE_REQUIRE_IMAGETOOLS=1 (CI installs both and sets it).
package imagetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/tooltest"
)

// RequireEnv, set to 1, makes a missing image tool a failure.
const RequireEnv = "TILESIEVE_REQUIRE_IMAGETOOLS"

// Require returns the path of cmd, or skips t (fails it when RequireEnv
// is 1) when it is missing; pkg is the Debian package that installs it.
func Require(t testing.TB, cmd, pkg string) string {
	t.Helper()
	return tooltest.Debian(cmd, pkg, RequireEnv).Path(t)
}

// Run runs a command of libvips or GDAL in dir.
func Run(t testing.TB, dir, cmd string, args ...string) {
	t.Helper()
	pkg := "gdal-bin"
	if cmd == "vips" {
		pkg = "libvips-tools"
	}
	Require(t, cmd, pkg)
	c := exec.Command(cmd, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cmd, args, err, out)
	}
}

// Noise writes dir/name, a w×h RGB TIFF of libvips noise around mean (its
// three bands alike), stored in strips, as a source for other files.
func Noise(t testing.TB, dir, name string, w, h int, mean string) string {
	t.Helper()
	g, rgb, u := filepath.Join(dir, name+".g.v"), filepath.Join(dir, name+".rgb.v"), filepath.Join(dir, name+".u.v")
	Run(t, dir, "vips", "gaussnoise", g, strconv.Itoa(w), strconv.Itoa(h), "--mean", mean, "--sigma", "20")
	Run(t, dir, "vips", "bandjoin", g+" "+g+" "+g, rgb)
	Run(t, dir, "vips", "cast", rgb, u, "uchar")
	out := filepath.Join(dir, name)
	Run(t, dir, "vips", "tiffsave", u, out)
	return out
}

// Pyramid is a w×h RGB pyramidal TIFF of 256-px JPEG tiles, as
// vips tiffsave --tile --pyramid writes it.
func Pyramid(t testing.TB, w, h int, mean string) []byte {
	t.Helper()
	dir := t.TempDir()
	src := Noise(t, dir, "src.tif", w, h, mean)
	out := filepath.Join(dir, "pyramid.tif")
	Run(t, dir, "vips", "tiffsave", src, out, "--tile", "--pyramid", "--compression", "jpeg", "--tile-width", "256", "--tile-height", "256")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
