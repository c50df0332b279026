package iiif_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/math/f64"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/pixel"
	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
)

// needVips is the vips command, or skips the test (fails it when
// TILESIEVE_REQUIRE_IMAGETOOLS=1).
func needVips(t *testing.T) string { return imagetest.Require(t, "vips", "libvips-tools") }

func runVips(t *testing.T, vips, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(vips, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "VIPS_CONCURRENCY=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("vips %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func readImage(t *testing.T, path string) *image.RGBA {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rgba(m)
}

func rgba(m image.Image) *image.RGBA {
	r := image.NewRGBA(image.Rect(0, 0, m.Bounds().Dx(), m.Bounds().Dy()))
	draw.Draw(r, r.Rect, m, m.Bounds().Min, draw.Src)
	return r
}

func writePNG(t *testing.T, path string, m image.Image) {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// vipsSource is a 601×401 test image and its pyramid, made with vips.
type vipsSource struct {
	vips, dir string
	levels    []*image.RGBA
}

// makeSource draws smooth color fields crossed by hard edges (lines and
// vips-rendered text), saves it, and has vips make its pyramid as tiffsave
// does (each level half the one before, rounded down).
func makeSource(t *testing.T, vips string) *vipsSource {
	dir := t.TempDir()
	runVips(t, vips, dir, "text", "text.png", "tilesieve IIIF 3.0 and 2.1", "--dpi", "200")
	text := readImage(t, filepath.Join(dir, "text.png"))
	const w, h = 601, 401
	src := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x), float64(y)
			r := 128 + 70*math.Sin(fx/41+fy/97) + 40*math.Cos(fy/29)
			g := 128 + 60*math.Cos(fx/23-fy/61) + 30*math.Sin((fx+fy)/17)
			b := 128 + 80*math.Sin(math.Hypot(fx-300, fy-200)/31)
			// Dark lines six pixels wide with soft edges, as a scan has.
			d := min(math.Abs(math.Mod(fx+fy, 97)-48), math.Abs(math.Mod(fx-2*fy+1002, 131)-65)/math.Sqrt(5)*math.Sqrt(2))
			if a := max(0, min(1, (4-d)/2)); a > 0 {
				r, g, b = r*(1-a)+20*a, g*(1-a)+30*a, b*(1-a)+40*a
			}
			if p := image.Pt(x-40, y-180); p.In(text.Rect) {
				a := float64(text.Pix[text.PixOffset(p.X, p.Y)]) / 255
				r, g, b = r*(1-a)+250*a, g*(1-a)+250*a, b*(1-a)+240*a
			}
			src.SetRGBA(x, y, color.RGBA{clamp(r), clamp(g), clamp(b), 255})
		}
	}
	writePNG(t, filepath.Join(dir, "src.png"), src)
	runVips(t, vips, dir, "tiffsave", "src.png", "pyramid.tif", "--tile", "--pyramid", "--tile-width", "128", "--tile-height", "128")
	s := &vipsSource{vips: vips, dir: dir, levels: []*image.RGBA{src}}
	for page := 1; page <= 2; page++ {
		name := fmt.Sprintf("level%d.png", page)
		runVips(t, vips, dir, "pngsave", fmt.Sprintf("pyramid.tif[page=%d]", page), name)
		s.levels = append(s.levels, readImage(t, filepath.Join(dir, name)))
	}
	return s
}

func clamp(v float64) uint8 { return uint8(max(0, min(255, math.Round(v)))) }

// image describes the source as stored: every level, or level 0 only.
func (s *vipsSource) image(levels int) iiif.Image {
	img := iiif.Image{JPEGTiles: true}
	for _, l := range s.levels[:levels] {
		img.Levels = append(img.Levels, iiif.Level{Width: l.Rect.Dx(), Height: l.Rect.Dy(), TileWidth: 128, TileHeight: 128})
	}
	return img
}

// Tile cuts a 128×128 tile, padded with black, from a level.
func (s *vipsSource) Tile(_ context.Context, level, x, y int) (image.Image, error) {
	t := image.NewRGBA(image.Rect(0, 0, 128, 128))
	draw.Draw(t, t.Rect, s.levels[level], image.Pt(x*128, y*128), draw.Src)
	return t, nil
}

// fidelityCase is a request and the vips operations that make the same
// answer from the full-resolution source.
type fidelityCase struct {
	path   string
	levels int // levels the image has (3, or 1: no pyramid)
}

var fidelityCases = []fidelityCase{
	{"full/240,/0/default.png", 3},                // level 1 scaled by 0.8
	{"60,60,360,240/180,120/0/default.png", 3},    // level 1 at scale 1
	{"73,47,300,200/120,/0/default.png", 3},       // off the level grid
	{"full/90,/0/default.png", 3},                 // level 2 scaled by 0.6
	{"256,0,256,256/128,128/0/default.png", 3},    // one stored tile
	{"30,24,420,300/210,/!90/default.png", 3},     // mirrored, turned
	{"30,24,420,300/210,/270/gray.png", 3},        // gray, turned
	{"6,6,60,48/^150,/0/default.png", 3},          // upscaled 2.5 times
	{"full/60,/0/default.png", 1},                 // shrunk 10 times, no pyramid
	{"120,60,240,180/180,60/180/default.png", 3},  // distorted
	{"pct:10,10,80,80/!180,180/0/default.png", 3}, // confined
	{"square/^!420,420/90/default.png", 3},        // square, upscaled, turned
}

// TestFidelity checks each answer is within 30 dB PSNR of what vips makes
// with crop, thumbnail_image (its default lanczos3; affine with bicubic to
// enlarge), flip, rot and colourspace b-w from the full-resolution source. It also logs, for each
// scaled case and under -v, what each x/image/draw kernel would give from
// the same level: the measurement behind the pipeline's choice.
func TestFidelity(t *testing.T) {
	vips := needVips(t)
	source := makeSource(t, vips)
	pipe, err := pixel.New(pixel.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	renderer, err := iiif.NewRenderer(pipe, 1<<26)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range fidelityCases {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			img := source.image(c.levels)
			res, err := resolvePath(iiif.V3, c.path, img, specLimitsBig)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := iiif.NewPlan(res, img)
			if err != nil {
				t.Fatal(err)
			}
			out, err := renderer.Render(context.Background(), res, plan, img, source)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := image.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			want := vipsReference(t, source, res, i)
			psnr := psnrOf(rgba(got), want)
			t.Logf("level %d, %v -> %dx%d: %.1f dB", plan.Level, plan.Source.Size(), res.Width, res.Height, psnr)
			if psnr < 30 {
				t.Errorf("PSNR against vips: got %.1f dB, want at least 30", psnr)
			}
			if testing.Verbose() && res.Rotation == 0 && !res.Mirror && res.Quality == iiif.QualityColor &&
				(plan.Source.Dx() != res.Width || plan.Source.Dy() != res.Height) {
				logKernels(t, source.levels[plan.Level], res.Region, 1/float64(int(1)<<plan.Level), res.Width, res.Height, want)
			}
		})
	}
}

var specLimitsBig = iiif.Limits{MaxWidth: 4000, MaxHeight: 4000, MaxArea: 1 << 24}

// vipsReference makes res's answer with vips from the full-resolution
// source.
func vipsReference(t *testing.T, s *vipsSource, res iiif.Resolved, i int) *image.RGBA {
	dir := t.TempDir()
	r := res.Region
	src := filepath.Join(s.dir, "src.png")
	cur := fmt.Sprintf("c%d.v", i)
	runVips(t, s.vips, dir, "crop", src, cur, fmt.Sprint(r.Min.X), fmt.Sprint(r.Min.Y), fmt.Sprint(r.Dx()), fmt.Sprint(r.Dy()))
	switch next := fmt.Sprintf("s%d.v", i); {
	case res.Width > r.Dx() && res.Height > r.Dy():
		// vips resize upsizes half an output pixel off the grid it shrinks
		// on (libvips#943: 27.7 dB against the pipeline as it is, 56.0
		// shifted by half a pixel). affine, told to map pixel centres and
		// to copy the edges, upsizes on the pipeline's grid (bilinear
		// against ApproxBiLinear: 55.8 dB).
		m := fmt.Sprintf("%g 0 0 %g", float64(res.Width)/float64(r.Dx()), float64(res.Height)/float64(r.Dy()))
		runVips(t, s.vips, dir, "affine", cur, next, m, "--interpolate", "bicubic", "--extend", "copy",
			"--idx", "0.5", "--idy", "0.5", "--odx", "-0.5", "--ody", "-0.5", "--oarea", fmt.Sprintf("0 0 %d %d", res.Width, res.Height))
		cur = next
	case r.Dx() != res.Width || r.Dy() != res.Height:
		runVips(t, s.vips, dir, "thumbnail_image", cur, next, fmt.Sprint(res.Width), "--height", fmt.Sprint(res.Height), "--size", "force")
		cur = next
	}
	if res.Mirror {
		runVips(t, s.vips, dir, "flip", cur, "m.v", "horizontal")
		cur = "m.v"
	}
	if res.Rotation != 0 {
		runVips(t, s.vips, dir, "rot", cur, "r.v", fmt.Sprintf("d%d", res.Rotation))
		cur = "r.v"
	}
	if res.Quality == iiif.QualityGray {
		runVips(t, s.vips, dir, "colourspace", cur, "g.v", "b-w")
		cur = "g.v"
	}
	runVips(t, s.vips, dir, "pngsave", cur, "ref.png")
	return readImage(t, filepath.Join(dir, "ref.png"))
}

// psnrOf is the peak signal-to-noise ratio of a against b over R, G and B.
func psnrOf(a, b *image.RGBA) float64 {
	if a.Rect.Size() != b.Rect.Size() {
		return 0
	}
	var sum float64
	n := 0
	for i := 0; i < len(a.Pix); i += 4 {
		for c := range 3 {
			d := float64(a.Pix[i+c]) - float64(b.Pix[i+c])
			sum += d * d
			n++
		}
	}
	if sum == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/(sum/float64(n)))
}

// logKernels logs how close each kernel comes to want, sampling the
// region exactly in level coordinates (the level's last row and column
// repeated past its edge), as the pipeline does.
func logKernels(t *testing.T, level *image.RGBA, region image.Rectangle, scale float64, w, h int, want *image.RGBA) {
	padded := image.NewRGBA(image.Rect(0, 0, level.Rect.Dx()+1, level.Rect.Dy()+1))
	draw.Draw(padded, padded.Rect, level, image.Point{}, draw.Src)
	draw.Draw(padded, image.Rect(level.Rect.Dx(), 0, level.Rect.Dx()+1, level.Rect.Dy()), level, image.Pt(level.Rect.Dx()-1, 0), draw.Src)
	draw.Draw(padded, image.Rect(0, level.Rect.Dy(), level.Rect.Dx()+1, level.Rect.Dy()+1), padded, image.Pt(0, level.Rect.Dy()-1), draw.Src)
	x0, y0 := float64(region.Min.X)*scale, float64(region.Min.Y)*scale
	sx, sy := float64(w)/(float64(region.Dx())*scale), float64(h)/(float64(region.Dy())*scale)
	var parts []string
	for _, k := range []struct {
		name string
		k    xdraw.Interpolator
	}{{"ApproxBiLinear", xdraw.ApproxBiLinear}, {"BiLinear", xdraw.BiLinear}, {"CatmullRom", xdraw.CatmullRom}} {
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		k.k.Transform(dst, f64.Aff3{sx, 0, -x0 * sx, 0, sy, -y0 * sy}, padded, padded.Rect, xdraw.Src, nil)
		parts = append(parts, fmt.Sprintf("%s %.1f dB", k.name, psnrOf(dst, want)))
	}
	t.Logf("kernels, exact: %s", strings.Join(parts, ", "))
}
