package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/aerial"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
)

// halfWorld is half the width of the web mercator world, in metres.
const halfWorld = 20037508.342789244

// The imagery's place: its web mercator copy starts at XYZ tile
// (cogX0, cogY0) of zoom cogZoom (13.4° E, 49.4° N), at that zoom's
// resolution, so GDAL's GoogleMapsCompatible COG stores it on the grid
// unshifted; its UTM copy starts at (utmEast, utmNorth) of zone 33 north
// with utmPixel-metre pixels, about the same place.
const (
	cogZoom, cogX0, cogY0 = 14, 8800, 5600
	utmEPSG               = "EPSG:32633"
	utmEast, utmNorth     = 400000.0, 5460000.0
	utmPixel              = 10.0
)

// cogImagery is what the section serves: the files under the bucket's
// directory and the tiles requested from each.
type cogImagery struct {
	Commands []string      // the GDAL commands that wrote the COGs
	Made     time.Duration // drawing the source and writing both COGs and the archive
	// Stored are the GoogleMapsCompatible COG's full-resolution tiles as
	// XYZ tiles (key "z/x/y.jpg"), the archive's content.
	Stored map[string][]byte
	Zoom   int
	// Keys are the tiles requested from the COG and the archive, Prime
	// one more of them that no run requests.
	Keys  []string
	Prime string
	Bytes map[string]int64 // file sizes: cog.tif, arc.pmtiles, utm.tif
}

// makeCOGImagery draws the aerial scene, side pixels square, and writes,
// into www: cog.tif (GoogleMapsCompatible JPEG COG), utm.tif (the same
// pixels in UTM zone 33, a JPEG COG) and arc.pmtiles (cog.tif's stored
// tiles, through the product's writer). It picks p.Tiles of the stored
// tiles, in a fixed random order, for the runs.
func makeCOGImagery(ctx context.Context, p COGParams, tmp, www string) (cogImagery, error) {
	began := time.Now()
	img := cogImagery{Bytes: map[string]int64{}}
	src := filepath.Join(tmp, "aerial.ppm")
	f, err := os.Create(src)
	if err != nil {
		return img, err
	}
	err = aerial.New(1).WritePPM(f, p.Side, p.Side)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return img, err
	}
	span := 2 * halfWorld / math.Exp2(cogZoom) // one tile, in metres
	minX, maxY := -halfWorld+cogX0*span, halfWorld-cogY0*span
	side := float64(p.Side) / 256 * span
	utmSide := float64(p.Side) * utmPixel
	for _, args := range [][]string{
		{"-of", "COG", "-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "COMPRESS=JPEG", "-a_srs", "EPSG:3857",
			"-a_ullr", ftoa(minX), ftoa(maxY), ftoa(minX + side), ftoa(maxY - side), src, filepath.Join(www, "cog.tif")},
		{"-of", "COG", "-co", "COMPRESS=JPEG", "-a_srs", utmEPSG,
			"-a_ullr", ftoa(utmEast), ftoa(utmNorth), ftoa(utmEast + utmSide), ftoa(utmNorth - utmSide), src, filepath.Join(www, "utm.tif")},
	} {
		cmd := exec.CommandContext(ctx, "gdal_translate", append([]string{"-q"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return img, fmt.Errorf("gdal_translate: %w\n%s", err, out)
		}
		shown := slices.Clone(args)
		shown[len(shown)-2], shown[len(shown)-1] = "aerial.ppm", filepath.Base(shown[len(shown)-1])
		img.Commands = append(img.Commands, "gdal_translate "+strings.Join(shown, " "))
	}
	os.Remove(src)
	if img.Stored, img.Zoom, err = storedTiles(ctx, filepath.Join(www, "cog.tif")); err != nil {
		return img, err
	}
	if img.Zoom != cogZoom {
		return img, fmt.Errorf("cog.tif: stored at zoom %d, want %d", img.Zoom, cogZoom)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range img.Stored {
			if !yield(k) {
				return
			}
		}
	})
	if len(keys) < p.Tiles+1 {
		return img, fmt.Errorf("cog.tif: %d stored tiles, want at least %d", len(keys), p.Tiles+1)
	}
	r := rand.New(rand.NewPCG(43, 0xc09))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	img.Keys, img.Prime = keys[:p.Tiles], keys[p.Tiles]
	var tiles []archiveTile
	for _, k := range keys {
		var z, x, y int
		fmt.Sscanf(k, "%d/%d/%d.jpg", &z, &x, &y)
		tiles = append(tiles, archiveTile{uint8(z), uint32(x), uint32(y), img.Stored[k]})
	}
	if err := writePMTiles(filepath.Join(www, "arc.pmtiles"), tiles, pmtiles.TileTypeJPEG, "arc"); err != nil {
		return img, err
	}
	for _, name := range []string{"cog.tif", "utm.tif", "arc.pmtiles"} {
		st, err := os.Stat(filepath.Join(www, name))
		if err != nil {
			return img, err
		}
		img.Bytes[name] = st.Size()
	}
	img.Made = time.Since(began)
	return img, nil
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// storedTiles reads every full-resolution tile of a GoogleMapsCompatible
// JPEG COG, made whole (the bytes a passthrough answers), keyed by the XYZ
// tile it is: the zoom and offset come from the geotransform, which must
// sit on the web mercator grid of 256-pixel tiles. Each tile must decode as
// a 256×256 JPEG.
func storedTiles(ctx context.Context, path string) (map[string][]byte, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	src := tiff.ReaderAt(f)
	tf, err := tiff.Open(ctx, src, st.Size(), tiff.Options{})
	if err != nil {
		return nil, 0, err
	}
	g, err := tf.Georeferencing()
	if err != nil {
		return nil, 0, err
	}
	l := tf.Levels[0]
	if g.EPSG != 3857 || l.TileWidth != 256 || l.TileHeight != 256 || l.Compression != tiff.CompressionJPEG {
		return nil, 0, fmt.Errorf("%s: EPSG:%d, %dx%d %v tiles; want EPSG:3857, 256x256 JPEG", path, g.EPSG, l.TileWidth, l.TileHeight, l.Compression)
	}
	gt := g.GeoTransform
	zf := math.Log2(2 * halfWorld / (256 * gt[1]))
	z := int(math.Round(zf))
	span := 2 * halfWorld / math.Exp2(float64(z))
	fx, fy := (gt[0]+halfWorld)/span, (halfWorld-gt[3])/span
	if math.Abs(zf-float64(z)) > 1e-6 || math.Abs(fx-math.Round(fx)) > 1e-6 || math.Abs(fy-math.Round(fy)) > 1e-6 || gt[2] != 0 || gt[4] != 0 {
		return nil, 0, fmt.Errorf("%s: geotransform %v is not on the web mercator grid", path, gt)
	}
	x0, y0 := int(math.Round(fx)), int(math.Round(fy))
	out := map[string][]byte{}
	for ty := range l.TilesDown {
		row := make([]image.Point, l.TilesAcross)
		for tx := range row {
			row[tx] = image.Pt(tx, ty)
		}
		raws, _, err := l.ReadTiles(ctx, src, row, tiff.ReadOptions{})
		if err != nil {
			return nil, 0, err
		}
		for _, raw := range raws {
			if raw.Sparse {
				continue
			}
			b, err := l.WholeJPEG(raw.Data)
			if err != nil {
				return nil, 0, err
			}
			if c, err := jpeg.DecodeConfig(bytes.NewReader(b)); err != nil || c.Width != 256 || c.Height != 256 {
				return nil, 0, fmt.Errorf("%s: stored tile %v: %v, %dx%d", path, raw.Tile, err, c.Width, c.Height)
			}
			out[fmt.Sprintf("%d/%d/%d.jpg", z, x0+raw.Tile.X, y0+raw.Tile.Y)] = b
		}
	}
	return out, z, nil
}

// utmKeys picks n+1 XYZ tiles at zoom z inside bounds (west, south, east,
// north in degrees, the TileJSON's) shrunk by a sixth on each side, so
// every tile is all data: the n nearest the centre, in order of distance,
// for the runs, and the farthest as the one that opens the file.
func utmKeys(z int, bounds []float64, n int) (keys []string, prime string, err error) {
	if len(bounds) != 4 {
		return nil, "", fmt.Errorf("utm.json: bounds %v", bounds)
	}
	dx, dy := (bounds[2]-bounds[0])/6, (bounds[3]-bounds[1])/6
	w, s, e, nth := bounds[0]+dx, bounds[1]+dy, bounds[2]-dx, bounds[3]-dy
	x0, y0 := lonLatTile(z, w, nth)
	x1, y1 := lonLatTile(z, e, s)
	cx, cy := (float64(x0)+float64(x1))/2, (float64(y0)+float64(y1))/2
	type cand struct {
		x, y int
		d    float64
	}
	var cs []cand
	// Tiles strictly inside the corner tiles lie wholly inside the box.
	for y := y0 + 1; y < y1; y++ {
		for x := x0 + 1; x < x1; x++ {
			cs = append(cs, cand{x, y, math.Hypot(float64(x)-cx, float64(y)-cy)})
		}
	}
	if len(cs) < n+1 {
		return nil, "", fmt.Errorf("utm.tif: %d tiles at zoom %d inside its data, want %d", len(cs), z, n+1)
	}
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.y, b.y), cmp.Compare(a.x, b.x))
	})
	for _, c := range cs[:n] {
		keys = append(keys, fmt.Sprintf("%d/%d/%d.jpg", z, c.x, c.y))
	}
	last := cs[len(cs)-1]
	return keys, fmt.Sprintf("%d/%d/%d.jpg", z, last.x, last.y), nil
}

// lonLatTile is the XYZ tile at zoom z that holds lon, lat.
func lonLatTile(z int, lon, lat float64) (x, y int) {
	n := math.Exp2(float64(z))
	r := lat * math.Pi / 180
	x = int((lon + 180) / 360 * n)
	y = int((1 - math.Log(math.Tan(r)+1/math.Cos(r))/math.Pi) / 2 * n)
	return x, y
}
