package xyz_test

// Helpers that make rasters with GDAL and read its answers back: GDAL is the
// reference the resampler is held to.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tilesieve/tilesieve/shared/images/geo"
	"github.com/tilesieve/tilesieve/shared/images/xyz"
	"github.com/tilesieve/tilesieve/shared/testkit/imagetest"
)

// requireGDAL skips the test when the GDAL command-line tools are missing,
// or fails it when TILESIEVE_REQUIRE_IMAGETOOLS=1 asks for every tool.
func requireGDAL(t testing.TB) {
	t.Helper()
	for _, name := range []string{"gdal_translate", "gdalwarp", "gdalinfo"} {
		imagetest.Require(t, name, "gdal-bin")
	}
}

func run(t testing.TB, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// gdalInfo is the part of `gdalinfo -json` the tests read.
type gdalInfo struct {
	Size         [2]int     `json:"size"`
	GeoTransform [6]float64 `json:"geoTransform"`
	Bands        []struct {
		Block     [2]int `json:"block"`
		Color     string `json:"colorInterpretation"`
		Overviews []struct {
			Size [2]int `json:"size"`
		} `json:"overviews"`
	} `json:"bands"`
	Metadata map[string]map[string]string `json:"metadata"`
	Stac     struct {
		EPSG int `json:"proj:epsg"`
	} `json:"stac"`
}

func readInfo(t testing.TB, path string) gdalInfo {
	t.Helper()
	var info gdalInfo
	if err := json.Unmarshal(run(t, "gdalinfo", "-json", "-mdd", "all", path), &info); err != nil {
		t.Fatalf("gdalinfo %s: %v", path, err)
	}
	return info
}

// rasterOf describes a COG from its gdalinfo, as a TIFF reader would.
func rasterOf(info gdalInfo) xyz.Raster {
	b := info.Bands[0]
	r := xyz.Raster{EPSG: info.Stac.EPSG, Transform: info.GeoTransform, Bands: len(info.Bands),
		Levels: []xyz.Level{{Width: info.Size[0], Height: info.Size[1], TileWidth: b.Block[0], TileHeight: b.Block[1]}}}
	for _, o := range b.Overviews {
		r.Levels = append(r.Levels, xyz.Level{Width: o.Size[0], Height: o.Size[1], TileWidth: b.Block[0], TileHeight: b.Block[1]})
	}
	r.HasAlpha = info.Bands[len(info.Bands)-1].Color == "Alpha"
	if ts := info.Metadata["TILING_SCHEME"]; ts != nil {
		r.TilingScheme = ts["NAME"]
		r.AlignedLevels, _ = strconv.Atoi(ts["ALIGNED_LEVELS"])
	}
	return r
}

// pixels is a decoded raster: w × h pixels of `bands` interleaved samples,
// 8-bit (b) or float32 (f).
type pixels struct {
	w, h, bands int
	b           []uint8
	f           []float32
}

// writeENVI writes p as a raw ENVI file GDAL reads (path + ".hdr").
func writeENVI(t testing.TB, path string, p pixels) {
	t.Helper()
	dtype, data := 1, p.b
	if p.f != nil {
		dtype = 4
		data = make([]byte, 4*len(p.f))
		for i, v := range p.f {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
	}
	hdr := fmt.Sprintf("ENVI\nsamples = %d\nlines = %d\nbands = %d\nheader offset = 0\nfile type = ENVI Standard\n"+
		"data type = %d\ninterleave = bip\nbyte order = 0\n", p.w, p.h, p.bands, dtype)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(path, filepath.Ext(path))+".hdr", []byte(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readENVI reads a pixel-interleaved ENVI file written by GDAL.
func readENVI(t testing.TB, path string) pixels {
	t.Helper()
	hdr, err := os.ReadFile(strings.TrimSuffix(path, filepath.Ext(path)) + ".hdr")
	if err != nil {
		t.Fatal(err)
	}
	var p pixels
	dtype := 0
	sc := bufio.NewScanner(bytes.NewReader(hdr))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(v))
		switch strings.TrimSpace(k) {
		case "samples":
			p.w = n
		case "lines":
			p.h = n
		case "bands":
			p.bands = n
		case "data type":
			dtype = n
		case "interleave":
			if strings.TrimSpace(v) != "bip" {
				t.Fatalf("%s: interleave %s, want bip", path, v)
			}
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	switch dtype {
	case 1:
		p.b = data
	case 4:
		p.f = make([]float32, len(data)/4)
		for i := range p.f {
			p.f[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	default:
		t.Fatalf("%s: data type %d", path, dtype)
	}
	if n := p.w * p.h * p.bands; len(p.b)+len(p.f) != n {
		t.Fatalf("%s: %d samples, want %d", path, len(p.b)+len(p.f), n)
	}
	return p
}

// source is a raster GDAL warps (tif) and the same pixels cut into stored
// tiles for the resampler.
type source struct {
	tif      string
	raster   xyz.Raster
	levels   []pixels
	maskBand bool // the last band of each level is the validity mask
}

// sourceSpec is how to make a source.
type sourceSpec struct {
	epsg      int
	ulx, uly  float64
	px, py    float64 // pixel size; py < 0
	full      pixels
	nodata    *float64
	mask      bool // the last band of full becomes an internal mask
	overviews int
	tile      int
}

// buildSource writes the pixels, georeferences them with gdal_translate and
// makes each overview with gdal_translate -outsize -r average, as gdaladdo
// sizes them: ⌈size / 2^k⌉.
func buildSource(t testing.TB, dir, name string, s sourceSpec) *source {
	t.Helper()
	raw := filepath.Join(dir, name+".bin")
	writeENVI(t, raw, s.full)
	src := &source{tif: filepath.Join(dir, name+".tif"), maskBand: s.mask}
	args := []string{"-q", "-of", "GTiff", "-a_srs", fmt.Sprintf("EPSG:%d", s.epsg), "-a_ullr",
		g17(s.ulx), g17(s.uly), g17(s.ulx + float64(s.full.w)*s.px), g17(s.uly + float64(s.full.h)*s.py)}
	if s.nodata != nil {
		args = append(args, "-a_nodata", g17(*s.nodata))
	}
	if s.mask {
		for b := 1; b < s.full.bands; b++ {
			args = append(args, "-b", strconv.Itoa(b))
		}
		args = append(args, "-mask", strconv.Itoa(s.full.bands), "--config", "GDAL_TIFF_INTERNAL_MASK", "YES")
	}
	run(t, "gdal_translate", append(args, raw, src.tif)...)
	info := readInfo(t, src.tif)
	bands := s.full.bands
	if s.mask {
		bands--
	}
	src.raster = xyz.Raster{EPSG: s.epsg, Transform: info.GeoTransform, Bands: bands, Float: s.full.f != nil,
		NoData: s.nodata, HasMask: s.mask}
	src.levels = []pixels{s.full}
	for k := 0; k <= s.overviews; k++ {
		if k > 0 {
			w, h := (s.full.w+1<<k-1)>>k, (s.full.h+1<<k-1)>>k
			out := filepath.Join(dir, fmt.Sprintf("%s-ovr%d.bin", name, k))
			in := src.tif
			if s.mask {
				in = raw // the mask band is averaged with the rest, then thresholded
			}
			run(t, "gdal_translate", "-q", "-of", "ENVI", "-co", "INTERLEAVE=BIP", "-r", "average",
				"-outsize", strconv.Itoa(w), strconv.Itoa(h), in, out)
			src.levels = append(src.levels, readENVI(t, out))
		}
		l := src.levels[k]
		src.raster.Levels = append(src.raster.Levels, xyz.Level{Width: l.w, Height: l.h, TileWidth: s.tile, TileHeight: s.tile})
	}
	return src
}

func g17(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }

// tiles serves the source's levels as stored tiles of full size; the part
// past the raster's edge is filled with a colour that must never show.
func (s *source) tiles() xyz.TileSource {
	return xyz.TileSourceFunc(func(ctx context.Context, level, x, y int) (xyz.Block, error) {
		l, lv := s.levels[level], s.raster.Levels[level]
		tw, th := lv.TileWidth, lv.TileHeight
		r := image.Rect(0, 0, tw, th)
		var b xyz.Block
		bands := l.bands
		if s.maskBand {
			bands--
			b.Mask = image.NewAlpha(r)
		}
		if l.f != nil {
			b.Float = xyz.NewFloatImage(r)
		}
		img := image.NewNRGBA(r)
		for j := range th {
			for i := range tw {
				sx, sy := x*tw+i, y*th+j
				if sx >= l.w || sy >= l.h {
					img.Pix[img.PixOffset(i, j)] = 77
					continue
				}
				o := (sy*l.w + sx) * l.bands
				if b.Float != nil {
					b.Float.Set(i, j, l.f[o])
					continue
				}
				p := img.Pix[img.PixOffset(i, j):]
				p[0], p[1], p[2], p[3] = l.b[o], l.b[o], l.b[o], 255
				if bands >= 3 {
					p[1], p[2] = l.b[o+1], l.b[o+2]
				}
				if s.maskBand && l.b[o+bands] >= 128 {
					b.Mask.Pix[b.Mask.PixOffset(i, j)] = 255
				}
			}
		}
		if b.Float == nil {
			b.Image = img
		}
		return b, nil
	})
}

// warpTiles is GDAL's rendering of nx × ny XYZ tiles from (x0, y0) in one
// image: bilinear, exact transforms (-et 0), from the full resolution.
func warpTiles(t testing.TB, dir, src string, z, x0, y0, nx, ny, size int, float bool) pixels {
	t.Helper()
	a, b := xyz.TileBounds(z, x0, y0+ny-1), xyz.TileBounds(z, x0+nx-1, y0)
	out := filepath.Join(dir, fmt.Sprintf("warp-%s-%d-%d-%d.bin", filepath.Base(src), z, x0, y0))
	args := []string{"-q", "-overwrite", "-t_srs", "EPSG:3857", "-te", g17(a[0]), g17(a[1]), g17(b[2]), g17(b[3]),
		"-ts", strconv.Itoa(nx * size), strconv.Itoa(ny * size), "-r", "bilinear", "-et", "0", "-of", "ENVI", "-co", "INTERLEAVE=BIP"}
	if float {
		args = append(args, "-ot", "Float32", "-dstnodata", "nan")
	} else {
		args = append(args, "-dstalpha")
	}
	run(t, "gdalwarp", append(args, src, out)...)
	return readENVI(t, out)
}

// sub is tile (i, j) of size × size pixels of a mosaic of tiles.
func (p pixels) sub(i, j, size int) pixels {
	s := pixels{w: size, h: size, bands: p.bands}
	for y := range size {
		o := ((j*size+y)*p.w + i*size) * p.bands
		if p.f != nil {
			s.f = append(s.f, p.f[o:o+size*p.bands]...)
		} else {
			s.b = append(s.b, p.b[o:o+size*p.bands]...)
		}
	}
	return s
}

// nearNaN reports whether a float pixel or one of its neighbours is NaN
// while another is not: the one-pixel seam where no data begins.
func (p pixels) nearNaN(x, y int) bool {
	nan := 0
	for d := range 9 {
		xx, yy := max(0, min(p.w-1, x+d%3-1)), max(0, min(p.h-1, y+d/3-1))
		if math.IsNaN(float64(p.f[(yy*p.w+xx)*p.bands])) {
			nan++
		}
	}
	return nan > 0 && nan < 9
}

// tileAt is the XYZ tile holding a point at zoom z.
func tileAt(lon, lat float64, z int) (x, y int) {
	mx, my := geo.LonLatToMercator(lon, lat)
	n := math.Ldexp(1, z)
	return int((mx + geo.MercatorHalfWorld) / (2 * geo.MercatorHalfWorld) * n),
		int((geo.MercatorHalfWorld - my) / (2 * geo.MercatorHalfWorld) * n)
}
