package tiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
)

// needTool skips the test when a command-line tool is missing, or fails it
// when TILESIEVE_REQUIRE_IMAGETOOLS=1. With -short the tests that write
// files with tools are skipped too (testdata_test.go still runs), unless
// the tools are required.
func needTool(t testing.TB, name, debian string) {
	t.Helper()
	if testing.Short() && os.Getenv(imagetest.RequireEnv) != "1" {
		t.Skipf("writes files with %s: skipped with -short", name)
	}
	imagetest.Require(t, name, debian)
}

func needVips(t testing.TB) { needTool(t, "vips", "libvips-tools") }
func needGDAL(t testing.TB) { needTool(t, "gdal_translate", "gdal-bin") }

// run runs a tool and fails the test with its output if it fails.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// source describes a test image written as PNG (8-bit) or ENVI (DEMs).
type source struct {
	w, h  int
	bands int  // 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA
	noise bool // add noise: exercises lossless codecs; JPEG sources stay smooth
}

// sample is the value of band b at (x, y): smooth ramps, a bit of noise
// when asked, and for alpha a disc of opaque pixels in a transparent field.
func (s source) sample(r *rand.Rand, x, y, b int) uint8 {
	if b == s.bands-1 && (s.bands == 2 || s.bands == 4) {
		dx, dy := float64(x-s.w/2), float64(y-s.h/2)
		if dx*dx+dy*dy < float64(s.w*s.w)/9 {
			return 255
		}
		return 0
	}
	var v int
	switch b {
	case 0:
		v = x * 255 / s.w
	case 1:
		v = y * 255 / s.h
	default:
		v = 128 + int(60*math.Sin(float64(x+y)/40))
	}
	if s.noise {
		v += r.IntN(64) - 32
	}
	return uint8(min(255, max(0, v)))
}

// writePNG writes the source as an 8-bit PNG.
func (s source) writePNG(t testing.TB, path string) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(s.w), uint64(s.h)))
	rect := image.Rect(0, 0, s.w, s.h)
	var img image.Image
	switch s.bands {
	case 1:
		g := image.NewGray(rect)
		for y := range s.h {
			for x := range s.w {
				g.Pix[y*g.Stride+x] = s.sample(r, x, y, 0)
			}
		}
		img = g
	default:
		n := image.NewNRGBA(rect)
		for y := range s.h {
			for x := range s.w {
				var c color.NRGBA
				switch s.bands {
				case 2:
					v := s.sample(r, x, y, 0)
					c = color.NRGBA{v, v, v, s.sample(r, x, y, 1)}
				case 3:
					c = color.NRGBA{s.sample(r, x, y, 0), s.sample(r, x, y, 1), s.sample(r, x, y, 2), 255}
				default:
					c = color.NRGBA{s.sample(r, x, y, 0), s.sample(r, x, y, 1), s.sample(r, x, y, 2), s.sample(r, x, y, 3)}
				}
				n.SetNRGBA(x, y, c)
			}
		}
		img = n
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if s.bands == 2 {
		// Go's PNG encoder has no gray+alpha: it wrote RGBA (and RGB for
		// an opaque image, so 3 bands need nothing).
		g, a := path+".g.v", path+".a.v"
		run(t, "vips", "extract_band", path, g, "0")
		run(t, "vips", "extract_band", path, a, "3")
		run(t, "vips", "bandjoin", g+" "+a, path+".ga.v")
		run(t, "vips", "pngsave", path+".ga.v", path)
	}
}

// dem is a DEM source written as ENVI (raw samples and a header).
type dem struct {
	w, h   int
	kind   string  // "int16", "uint16", "float32"
	nodata float64 // written into the corner pixels
	hole   bool    // nodata in the whole top-left 256x256 block too
}

func (d dem) value(x, y int) float64 {
	if (x == 0 || x == d.w-1) && (y == 0 || y == d.h-1) || d.hole && x < 256 && y < 256 {
		return d.nodata
	}
	v := 1000*math.Sin(float64(x)/37)*math.Cos(float64(y)/23) + float64(x-y)
	if d.kind == "float32" {
		return float64(float32(v + 0.123))
	}
	if d.kind == "uint16" {
		v += 3000
	}
	return math.Round(v)
}

// writeENVI writes the DEM as ENVI raw data (little-endian) and its header.
func (d dem) writeENVI(t testing.TB, path string) {
	t.Helper()
	var b []byte
	for y := range d.h {
		for x := range d.w {
			v := d.value(x, y)
			switch d.kind {
			case "int16":
				b = binary.LittleEndian.AppendUint16(b, uint16(int16(v)))
			case "uint16":
				b = binary.LittleEndian.AppendUint16(b, uint16(v))
			default:
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
			}
		}
	}
	code := map[string]int{"int16": 2, "uint16": 12, "float32": 4}[d.kind]
	hdr := fmt.Sprintf("ENVI\nsamples = %d\nlines = %d\nbands = 1\nheader offset = 0\nfile type = ENVI Standard\n"+
		"data type = %d\ninterleave = bsq\nbyte order = 0\n", d.w, d.h, code)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(path, filepath.Ext(path))+".hdr", []byte(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
}

// countingReader counts the reads made through it.
type countingReader struct {
	r     RangeReader
	reads atomic.Int64
	bytes atomic.Int64
}

func (c *countingReader) ReadRange(ctx context.Context, off, n int64) ([]byte, error) {
	c.reads.Add(1)
	c.bytes.Add(n)
	return c.r.ReadRange(ctx, off, n)
}

// openFile opens a file on disk through a counting reader.
func openFile(t testing.TB, path string) (*File, *countingReader) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: ReaderAt(bytes.NewReader(b))}
	f, err := Open(context.Background(), cr, int64(len(b)), Options{})
	if err != nil {
		t.Fatalf("Open %s: %v", filepath.Base(path), err)
	}
	if f.OpenStats.Reads != int(cr.reads.Load()) {
		t.Errorf("got OpenStats.Reads %d, want %d", f.OpenStats.Reads, cr.reads.Load())
	}
	return f, cr
}

// levelRaw is a whole level decoded by libvips or GDAL: bands 8-bit
// samples per pixel, or float64 samples for DEMs.
type levelRaw struct {
	w, h, bands int
	pix         []uint8
	fpix        []float64
}

// vipsLevel decodes a level with libvips: page n of a pyramid, or SubIFD n.
func vipsLevel(t testing.TB, path string, n int, subifd bool, w, h, bands int) levelRaw {
	t.Helper()
	out := filepath.Join(t.TempDir(), "level.raw")
	opt := fmt.Sprintf("[page=%d]", n)
	if subifd {
		opt = fmt.Sprintf("[subifd=%d]", n-1)
	}
	run(t, "vips", "rawsave", path+opt, out)
	return readRaw(t, out, w, h, bands, "uint8")
}

// gdalLevel decodes a level with GDAL (overview n-1 for n > 0); mask asks
// for the mask band instead.
func gdalLevel(t testing.TB, path string, n int, mask bool, w, h, bands int, kind string) levelRaw {
	t.Helper()
	out := filepath.Join(t.TempDir(), "level.bin")
	args := []string{"-q", "-of", "ENVI", "-co", "INTERLEAVE=BIP"}
	if n > 0 {
		args = append(args, "-ovr", fmt.Sprint(n-1))
	}
	if mask {
		args = append(args, "-b", "mask")
	}
	run(t, "gdal_translate", append(args, path, out)...)
	return readRaw(t, out, w, h, bands, kind)
}

func readRaw(t testing.TB, path string, w, h, bands int, kind string) levelRaw {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := levelRaw{w: w, h: h, bands: bands}
	size := map[string]int{"uint8": 1, "int16": 2, "uint16": 2, "float32": 4}[kind]
	if len(b) != w*h*bands*size {
		t.Fatalf("reference level of %d bytes, want %dx%dx%dx%d", len(b), w, h, bands, size)
	}
	switch kind {
	case "uint8":
		l.pix = b
	default:
		l.fpix = make([]float64, w*h)
		for i := range l.fpix {
			switch kind {
			case "int16":
				l.fpix[i] = float64(int16(binary.LittleEndian.Uint16(b[2*i:])))
			case "uint16":
				l.fpix[i] = float64(binary.LittleEndian.Uint16(b[2*i:]))
			default:
				l.fpix[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
			}
		}
	}
	return l
}

// samples8 is the 8-bit samples of img at (x, y), bands of them: gray, gray
// and alpha, RGB or RGBA, whatever the image type holding them.
func samples8(img image.Image, x, y, bands int) []uint8 {
	var r, g, b, a uint8
	switch m := img.(type) {
	case *image.Gray:
		v := m.GrayAt(x, y).Y
		r, g, b, a = v, v, v, 255
	case *image.RGBA:
		c := m.RGBAAt(x, y)
		r, g, b, a = c.R, c.G, c.B, c.A
	case *image.NRGBA:
		c := m.NRGBAAt(x, y)
		r, g, b, a = c.R, c.G, c.B, c.A
	case *image.YCbCr:
		c := m.YCbCrAt(x, y)
		r, g, b = color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
		a = 255
	default:
		c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
		r, g, b, a = c.R, c.G, c.B, c.A
	}
	switch bands {
	case 1:
		return []uint8{r}
	case 2:
		return []uint8{r, a}
	case 3:
		return []uint8{r, g, b}
	}
	return []uint8{r, g, b, a}
}

// diff compares the pixels of a decoded tile with the reference level
// where they overlap. Lossy decoders differ most where chroma changes
// sharply, and on the last two columns and rows of a level, whose chroma
// is drawn from the tile's padding: diff counts the samples off by more
// than limit away from the edges (over), and keeps the largest difference
// anywhere (max).
type diff struct {
	limit float64
	max   float64
	where string
	sum   float64
	n     int
	over  int
}

func (d *diff) add(v, ref float64, edge bool, where func() string) {
	e := math.Abs(v - ref)
	if math.IsNaN(v) && math.IsNaN(ref) {
		e = 0
	}
	if e > d.max || math.IsNaN(e) {
		d.max, d.where = e, where()
	}
	if (e > d.limit || math.IsNaN(e)) && !edge {
		d.over++
	}
	d.sum += e
	d.n++
}

func (d *diff) mean() float64 { return d.sum / float64(max(1, d.n)) }

// compareTile adds the differences between tile (tx, ty) of a level and
// the reference to d.
func compareTile(d *diff, tile *Tile, l *Level, tx, ty int, ref levelRaw) {
	x0, y0 := tx*l.TileWidth, ty*l.TileHeight
	for y := y0; y < min(y0+l.TileHeight, ref.h); y++ {
		for x := x0; x < min(x0+l.TileWidth, ref.w); x++ {
			at := func() string { return fmt.Sprintf("pixel (%d,%d)", x, y) }
			edge := x >= ref.w-2 || y >= ref.h-2
			if tile.Raster != nil {
				d.add(float64(tile.Raster.At(x-x0, y-y0)), ref.fpix[y*ref.w+x], edge, at)
				continue
			}
			s := samples8(tile.Image, x-x0, y-y0, ref.bands)
			for b := range ref.bands {
				d.add(float64(s[b]), float64(ref.pix[(y*ref.w+x)*ref.bands+b]), edge, at)
			}
		}
	}
}

// compareMask adds the differences between a decoded mask and the
// reference mask (GDAL reads a 1-bit mask as 0 and 255).
func compareMask(d *diff, m *image.Alpha, l *Level, tx, ty int, ref levelRaw) {
	x0, y0 := tx*l.TileWidth, ty*l.TileHeight
	for y := y0; y < min(y0+l.TileHeight, ref.h); y++ {
		for x := x0; x < min(x0+l.TileWidth, ref.w); x++ {
			d.add(float64(m.AlphaAt(x-x0, y-y0).A), float64(ref.pix[y*ref.w+x]), false, func() string { return fmt.Sprintf("mask pixel (%d,%d)", x, y) })
		}
	}
}

// allTiles lists every tile of a level.
func allTiles(l *Level) []image.Point {
	var pts []image.Point
	for y := range l.TilesDown {
		for x := range l.TilesAcross {
			pts = append(pts, image.Pt(x, y))
		}
	}
	return pts
}

// decodeLevel reads and decodes every tile of level l of the file at path.
func decodeLevel(t testing.TB, path string, l *Level, mask bool) ([]Raw, []*Tile) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raws, _, err := l.ReadTiles(context.Background(), ReaderAt(bytes.NewReader(b)), allTiles(l), ReadOptions{Mask: mask})
	if err != nil {
		t.Fatal(err)
	}
	tiles := make([]*Tile, len(raws))
	for i, raw := range raws {
		if tiles[i], err = l.Decode(raw); err != nil {
			t.Fatalf("tile %v: %v", raw.Tile, err)
		}
		if tiles[i].Image != nil && tiles[i].Image.Bounds() != image.Rect(0, 0, l.TileWidth, l.TileHeight) {
			t.Fatalf("tile %v: got bounds %v, want the tile size %dx%d", raw.Tile, tiles[i].Image.Bounds(), l.TileWidth, l.TileHeight)
		}
	}
	return raws, tiles
}

// writeTemp writes b to a file in a temporary directory.
func writeTemp(t testing.TB, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.tif")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
