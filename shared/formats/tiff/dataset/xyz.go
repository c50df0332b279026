package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"strings"
	"time"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/images/xyz"
	"github.com/tilesieve/tilesieve/shared/images/xyz/terrain"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// A georeferenced TIFF (a Cloud Optimized GeoTIFF) opened as a tileset is
// served as XYZ tiles (shared/images/xyz): where a level sits on the web
// map grid, a tile is a stored tile, passed on as it is stored (a JPEG made
// whole, a WebP) with no decode; elsewhere the stored tiles a tile covers
// are decoded and resampled once. A single-band 16-bit or float raster is
// an elevation model: its tiles are terrain-RGB (NAME/z/x/y.png, the
// TileJSON's) and Terrarium (NAME/terrarium/z/x/y.png).

// TerrariumVariant is the path segment of an elevation model's Terrarium
// tiles: NAME/terrarium/z/x/y.png.
const TerrariumVariant = "terrarium"

// jpegQuality is the quality of resampled JPEG tiles.
const jpegQuality = 85

// cogTileset is a dataset seen as XYZ tiles.
type cogTileset struct {
	*dataset
	ts    *xyz.Tileset
	float bool // an elevation model
	attr  string
}

// openTileset makes d's tileset view: refused (formats.ErrInvalid, with the
// command that makes a servable file) when its georeferencing is malformed
// or in a CRS not served, formats.ErrNotTileset when it has none.
func openTileset(d *dataset, name string) (formats.Dataset, error) {
	g, err := d.f.Georeferencing()
	switch {
	case errors.Is(err, tiff.ErrNotGeoreferenced):
		return nil, fmt.Errorf("tiff: %s: %w", name, formats.ErrNotTileset)
	case err != nil:
		return nil, formats.Invalid(err)
	}
	top := d.f.Levels[0]
	r := xyz.Raster{EPSG: g.EPSG, Transform: g.GeoTransform, Bands: top.Bands,
		HasAlpha: top.Alpha >= 0, HasMask: top.Mask != nil, NoData: d.f.NoData,
		Float: top.Bits > 8 || top.SampleFormat == tiff.SampleFloat}
	if r.Float {
		r.Bands = 1
	}
	for _, l := range d.levels {
		r.Levels = append(r.Levels, xyz.Level{Width: l.Width, Height: l.Height, TileWidth: l.TileWidth, TileHeight: l.TileHeight})
	}
	r.TilingScheme, _ = d.f.Metadata.Get("TILING_SCHEME", "NAME")
	if r.TilingScheme == "" {
		r.TilingScheme, _ = d.f.Metadata.Get("", "TILING_SCHEME_NAME")
	}
	if a, ok := d.f.Metadata.Get("TILING_SCHEME", "ALIGNED_LEVELS"); ok {
		fmt.Sscan(a, &r.AlignedLevels)
	}
	ts, err := xyz.New(r, xyz.Config{})
	if err != nil {
		return nil, formats.Invalid(err)
	}
	c := &cogTileset{dataset: d, ts: ts, float: r.Float}
	c.attr, _ = d.f.Metadata.Get("", "TIFFTAG_COPYRIGHT")
	return c, nil
}

// Accepts reports the tiles a COG has: png, jpg (and webp where its tiles
// are stored as WebP) of imagery; png of an elevation model, in terrain-RGB
// and Terrarium.
func (c *cogTileset) Accepts(r formats.TileRequest) bool {
	ext := strings.ToLower(r.Ext)
	switch {
	case c.float:
		return ext == "png" && (r.Variant == "" || r.Variant == TerrariumVariant)
	case r.Variant != "":
		return false
	case ext == "webp":
		return d0(c).Compression == tiff.CompressionWebP
	}
	return ext == "png" || ext == "jpg" || ext == "jpeg"
}

func d0(c *cogTileset) *tiff.Level { return c.f.Levels[0] }

func (c *cogTileset) Tile(ctx context.Context, r formats.TileRequest) (formats.Tile, error) {
	if !c.Accepts(r) {
		return formats.Tile{}, tile.ErrNotFound
	}
	p, err := c.ts.Plan(int(r.Z), int(r.X), int(r.Y))
	switch {
	case err != nil:
		return formats.Tile{}, fmt.Errorf("tiff: tile %d/%d/%d: %w: %w", r.Z, r.X, r.Y, err, tile.ErrNotFound)
	case p.Kind == xyz.Empty:
		return formats.Tile{}, tile.ErrNotFound
	}
	version := fmt.Sprintf("%s%d-%d-%d.%s", variantTag(r.Variant), r.Z, r.X, r.Y, strings.ToLower(r.Ext))
	if b, ct, ok, err := c.stored(ctx, p, r.Ext); ok || err != nil {
		return formats.Tile{Body: b, ContentType: ct, Version: version}, err
	}
	began := time.Now()
	b, ct, err := c.render(ctx, p, r)
	tile.AddPixels(ctx, time.Since(began))
	if errors.Is(err, xyz.ErrNoData) {
		return formats.Tile{}, tile.ErrNotFound
	}
	return formats.Tile{Body: b, ContentType: ct, Version: version}, err
}

func variantTag(v string) string {
	if v == "" {
		return ""
	}
	return v + "-"
}

// stored answers a Stored plan with the stored tile's bytes when they are
// the answer: a JPEG tile for jpg (made whole), a WebP tile for webp. ok is
// false when the tile must be decoded (png answers, with their transparency
// where a mask says so).
func (c *cogTileset) stored(ctx context.Context, p xyz.Plan, ext string) ([]byte, string, bool, error) {
	if p.Kind != xyz.Stored || c.float {
		return nil, "", false, nil
	}
	l := c.f.Levels[p.Level]
	ext = strings.ToLower(ext)
	jpg := (ext == "jpg" || ext == "jpeg") && l.Compression == tiff.CompressionJPEG && l.Photometric != tiff.PhotometricMinIsWhite
	webp := ext == "webp" && l.Compression == tiff.CompressionWebP
	if !jpg && !webp {
		return nil, "", false, nil
	}
	raws, _, err := l.ReadTiles(ctx, c.src, []image.Point{{X: p.Stored.X, Y: p.Stored.Y}}, tiff.ReadOptions{})
	switch {
	case err != nil:
		return nil, "", true, err
	case raws[0].Sparse:
		return nil, "", true, tile.ErrNotFound
	case webp:
		return raws[0].Data, "image/webp", true, nil
	}
	b, err := l.WholeJPEG(raws[0].Data)
	return b, "image/jpeg", true, err
}

// render decodes the stored tiles p covers, read together, and encodes the
// tile: resampled imagery as PNG (transparent where there is no data) or
// JPEG, an elevation model as terrain-RGB or Terrarium PNG.
func (c *cogTileset) render(ctx context.Context, p xyz.Plan, r formats.TileRequest) ([]byte, string, error) {
	src := &blocks{l: c.f.Levels[p.Level], src: c.src}
	if p.Kind == xyz.Resample {
		src.prefetch(ctx, p.Tiles)
	} else {
		src.prefetch(ctx, []xyz.TileIndex{p.Stored})
	}
	var buf bytes.Buffer
	if c.float {
		f, err := c.ts.RenderFloat(ctx, src, p)
		if err != nil {
			return nil, "", err
		}
		img := terrain.RGB(f)
		if r.Variant == TerrariumVariant {
			img = terrain.Terrarium(f)
		}
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
		return buf.Bytes(), "image/png", err
	}
	img, err := c.ts.RenderImage(ctx, src, p)
	if err != nil {
		return nil, "", err
	}
	if e := strings.ToLower(r.Ext); e == "jpg" || e == "jpeg" {
		err = jpeg.Encode(&buf, onWhite(img), &jpeg.Options{Quality: jpegQuality})
		return buf.Bytes(), "image/jpeg", err
	}
	err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
	return buf.Bytes(), "image/png", err
}

// onWhite is img flattened on white, for JPEG.
func onWhite(img *image.NRGBA) image.Image {
	out := image.NewRGBA(img.Bounds())
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(out, out.Bounds(), img, img.Bounds().Min, draw.Over)
	return out
}

func (c *cogTileset) TileJSON(_ context.Context, baseURL, name string) (tileset.TileJSON, error) {
	m := c.ts.Metadata()
	a := tileset.Archive{Ext: "png", MinZoom: m.MinZoom, MaxZoom: m.MaxZoom, Bounds: m.Bounds, Center: m.Center}
	switch {
	case c.float:
	case d0(c).Compression == tiff.CompressionJPEG:
		a.Ext = "jpg" // the stored tiles, passed on as they are where the grid matches
	case d0(c).Compression == tiff.CompressionWebP:
		a.Ext = "webp"
	}
	meta := map[string]string{"name": name}
	if c.attr != "" {
		meta["attribution"] = c.attr
	}
	mb, _ := json.Marshal(meta)
	tj, err := tileset.FromArchive(baseURL, name, a, mb)
	if err != nil {
		return tj, err
	}
	if m.TileSize != 256 {
		tj.TileSize = m.TileSize
	}
	if c.float {
		tj.Encoding = "mapbox"
	}
	return tj, nil
}

// blocks is the xyz.TileSource of one tile: the stored tiles it covers,
// read together first, each decoded when asked.
type blocks struct {
	l    *tiff.Level
	src  tiff.RangeReader
	at   map[xyz.TileIndex]int
	raws []tiff.Raw
	err  error
}

func (b *blocks) prefetch(ctx context.Context, tiles []xyz.TileIndex) {
	pts := make([]image.Point, len(tiles))
	b.at = make(map[xyz.TileIndex]int, len(tiles))
	for i, t := range tiles {
		pts[i] = image.Pt(t.X, t.Y)
		b.at[t] = i
	}
	b.raws, _, b.err = b.l.ReadTiles(ctx, b.src, pts, tiff.ReadOptions{Mask: b.l.Mask != nil})
}

func (b *blocks) Tile(_ context.Context, level, x, y int) (xyz.Block, error) {
	if b.err != nil {
		return xyz.Block{}, b.err
	}
	i, ok := b.at[xyz.TileIndex{X: x, Y: y}]
	if !ok {
		return xyz.Block{}, fmt.Errorf("tiff: tile %d,%d of level %d was not read", x, y, level)
	}
	if b.raws[i].Sparse {
		return xyz.Block{}, nil
	}
	t, err := b.l.Decode(b.raws[i])
	if err != nil {
		return xyz.Block{}, err
	}
	blk := xyz.Block{Image: t.Image, Mask: t.Mask}
	if t.Raster != nil {
		blk.Image = nil
		blk.Float = &xyz.FloatImage{Pix: t.Raster.Pix, Stride: t.Raster.Width,
			Rect: image.Rect(0, 0, t.Raster.Width, t.Raster.Height)}
	}
	return blk, nil
}
