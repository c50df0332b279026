// Package dataset is a TIFF read by package tiff seen as a formats.Dataset:
// as an image, a formats.Pyramid of the levels tiff decodes (the IIIF
// service derives its answers from it); as a tileset, a georeferenced TIFF
// (a Cloud Optimized GeoTIFF) served as XYZ tiles through
// shared/images/xyz, stored tiles passed on where a level sits on the web
// map grid.
package dataset

import (
	"context"
	"fmt"
	"image"

	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/formats/tiff"
	"github.com/tilesieve/tilesieve/shared/formats/tileset"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Open opens one version of a TIFF as a formats.Dataset that is a
// formats.Pyramid: its header and IFDs read once (what the probe read first
// is not read again), its tiles by range afterwards. A file this package
// cannot serve (not a TIFF, stored in strips, a compression it does not
// read) is refused (formats.ErrInvalid), with what to run in the message.
func Open(ctx context.Context, obj formats.Object, opts formats.Options) (formats.Dataset, error) {
	d, err := open(ctx, obj, opts)
	if err != nil || opts.View != formats.ViewTiles {
		return d, err
	}
	return openTileset(d, obj.Name)
}

// open opens the image: the levels this package decodes.
func open(ctx context.Context, obj formats.Object, opts formats.Options) (*dataset, error) {
	src := formats.Prefetched(obj.First, obj.Range)
	f, err := tiff.Open(ctx, src, obj.Size, tiff.Options{MaxStoredTileBytes: opts.MaxTileBytes})
	switch {
	case tiff.IsReadError(err):
		return nil, err // the object could not be read: passing
	case err != nil:
		return nil, formats.Invalid(err)
	}
	d := &dataset{f: f, src: src}
	for i, l := range f.Levels {
		err := l.Decodable()
		if err != nil {
			if i == 0 {
				return nil, formats.Invalid(fmt.Errorf("%w; rewrite it: %s", err, tiff.Fix))
			}
			break // the levels above it serve
		}
		d.levels = append(d.levels, formats.PyramidLevel{Width: l.Width, Height: l.Height,
			TileWidth: l.TileWidth, TileHeight: l.TileHeight, JPEG: storedJPEG(l)})
	}
	return d, nil
}

// dataset is an open TIFF version.
type dataset struct {
	f      *tiff.File
	src    tiff.RangeReader
	levels []formats.PyramidLevel // the levels it serves: f.Levels' first ones
}

// Accepts reports no tile: opened as an image, a TIFF has no z/x/y
// (openTileset makes its tileset view).
func (d *dataset) Accepts(formats.TileRequest) bool { return false }

func (d *dataset) Tile(context.Context, formats.TileRequest) (formats.Tile, error) {
	return formats.Tile{}, tile.ErrNotFound
}

func (d *dataset) TileJSON(context.Context, string, string) (tileset.TileJSON, error) {
	return tileset.TileJSON{}, fmt.Errorf("tiff: an image has no TileJSON: %w", tile.ErrNotFound)
}

// Close releases nothing: a TIFF holds no resource but its reader's.
func (d *dataset) Close() error { return nil }

func (d *dataset) Levels() []formats.PyramidLevel { return d.levels }

func (d *dataset) Bands() (gray, alpha bool) {
	l := d.f.Levels[0]
	return l.Photometric == tiff.PhotometricMinIsBlack || l.Photometric == tiff.PhotometricMinIsWhite, l.Alpha >= 0 || l.Mask != nil
}

func (d *dataset) Pictured() error {
	l := d.f.Levels[0]
	if l.Bits == 8 {
		return nil
	}
	kind := "unsigned"
	switch l.SampleFormat {
	case tiff.SampleFloat:
		kind = "float"
	case tiff.SampleInt:
		kind = "signed"
	}
	return &formats.NotPictureError{Reason: fmt.Sprintf("its samples are %d-bit %s, heights or measurements rather than colours", l.Bits, kind)}
}

func (d *dataset) StoredJPEG(ctx context.Context, l int, at image.Point) ([]byte, error) {
	lv, err := d.level(l)
	if err != nil {
		return nil, err
	}
	raws, _, err := lv.ReadTiles(ctx, d.src, []image.Point{at}, tiff.ReadOptions{})
	if err != nil {
		return nil, err
	}
	if raws[0].Sparse {
		return nil, fmt.Errorf("tiff: tile %v of level %d is not stored: %w", at, l, tile.ErrNotFound)
	}
	return lv.WholeJPEG(raws[0].Data)
}

func (d *dataset) ReadTiles(ctx context.Context, l int, at []image.Point) (func(i int) (image.Image, error), error) {
	lv, err := d.level(l)
	if err != nil {
		return nil, err
	}
	raws, _, err := lv.ReadTiles(ctx, d.src, at, tiff.ReadOptions{Mask: lv.Mask != nil})
	if err != nil {
		return nil, err
	}
	return func(i int) (image.Image, error) {
		t, err := lv.Decode(raws[i])
		switch {
		case err != nil:
			return nil, err
		case t.Mask != nil:
			return masked(t.Image, t.Mask), nil
		}
		return t.Image, nil
	}, nil
}

// level is the served level l.
func (d *dataset) level(l int) (*tiff.Level, error) {
	if l < 0 || l >= len(d.levels) {
		return nil, fmt.Errorf("tiff: no level %d of %d", l, len(d.levels))
	}
	return d.f.Levels[l], nil
}

// storedJPEG reports whether the level's stored tiles can be answered as
// they are, made whole: JPEG of a photometric browsers show as stored,
// without a mask that would make parts transparent.
func storedJPEG(l *tiff.Level) bool {
	return l.Compression == tiff.CompressionJPEG && l.Photometric != tiff.PhotometricMinIsWhite && l.Mask == nil && l.Alpha < 0
}

// masked is img with the transparency of mask, as non-premultiplied RGBA.
func masked(img image.Image, mask *image.Alpha) image.Image {
	b := img.Bounds()
	out := image.NewNRGBA(b)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			i := out.PixOffset(x, y)
			out.Pix[i], out.Pix[i+1], out.Pix[i+2] = uint8(r>>8), uint8(g>>8), uint8(bl>>8)
			out.Pix[i+3] = mask.AlphaAt(x, y).A
		}
	}
	return out
}
