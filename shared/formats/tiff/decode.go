package tiff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math"

	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/codec"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/pixels"
)

// Tile is a decoded tile. It always has the full tile size: TIFF pads the
// tiles on the right and bottom edges of a level, and the padding is
// decoded with the rest (callers crop to the level's size).
type Tile struct {
	// Image holds 8-bit samples: *image.Gray for gray; *image.YCbCr,
	// straight from the JPEG decoder, for JPEG YCbCr; *image.RGBA for RGB
	// (alpha 255, JPEG and lossy WebP included) and premultiplied RGBA or
	// gray+alpha; *image.NRGBA for straight alpha (lossless WebP
	// included). A sparse tile is *image.Gray of nodata (or 0) for gray
	// without alpha, transparent *image.RGBA otherwise. Nil for Raster
	// tiles.
	Image image.Image
	// Raster holds single-band 16-bit integer and 32-bit float samples,
	// as they are stored (nodata included: see File.NoData). Nil for
	// 8-bit tiles.
	Raster *Raster
	// Mask is the tile's transparency mask (0 transparent, 255 opaque),
	// nil unless the Raw was read with its mask.
	Mask *image.Alpha
}

// Raster is a single band of float32 samples, row by row.
type Raster struct {
	Width, Height int
	Pix           []float32
}

// At is the sample at column x, row y.
func (r *Raster) At(x, y int) float32 { return r.Pix[y*r.Width+x] }

// Decode decompresses and unpredicts a tile read by ReadTiles and builds
// its pixels. Decompressed bytes are capped to exactly what the tile holds:
// more (a decompression bomb) or less is a FormatError, found before any
// larger allocation. JPEG tiles are checked to be of the tile's size
// before they are decoded.
func (l *Level) Decode(raw Raw) (*Tile, error) {
	if err := l.checkRaw(raw); err != nil {
		return nil, err
	}
	t := &Tile{}
	var err error
	switch {
	case raw.Sparse:
		l.fillSparse(t)
	case l.Compression == CompressionJPEG:
		t.Image, err = l.decodeJPEG(raw.Data)
	case l.Compression == CompressionWebP:
		t.Image, err = l.decodeWebP(raw.Data)
	default:
		err = l.decodeSamples(t, raw.Data)
	}
	if err != nil {
		return nil, l.tileErr(raw.Tile, err)
	}
	if raw.HasMask && l.Mask != nil {
		if t.Mask, err = l.Mask.decodeMask(raw.Mask); err != nil {
			return nil, l.tileErr(raw.Tile, fmt.Errorf("mask: %w", err))
		}
	}
	return t, nil
}

// checkRaw refuses what Decode cannot decode before it allocates.
func (l *Level) checkRaw(raw Raw) error {
	if l.decodeErr != nil {
		return l.decodeErr
	}
	if raw.Tile.X < 0 || raw.Tile.Y < 0 || raw.Tile.X >= l.TilesAcross || raw.Tile.Y >= l.TilesDown {
		return fmt.Errorf("tiff: tile %v outside the level's %dx%d tiles", raw.Tile, l.TilesAcross, l.TilesDown)
	}
	if raw.HasMask && l.Mask != nil && l.Mask.decodeErr != nil {
		return l.Mask.decodeErr
	}
	for _, b := range [][]byte{raw.Data, raw.Mask} {
		if int64(len(b)) > l.opts.MaxStoredTileBytes {
			return &LimitError{"stored tile bytes", uint64(len(b)), uint64(l.opts.MaxStoredTileBytes)}
		}
	}
	if !raw.Sparse && raw.Data == nil {
		return errors.New("tiff: a Raw with no data that is not sparse")
	}
	return nil
}

// tileErr says which tile an error is about; decoders' errors become
// FormatErrors, this package's own pass through.
func (l *Level) tileErr(p image.Point, err error) error {
	var (
		fe FormatError
		ue *UnsupportedError
		le *LimitError
	)
	if errors.As(err, &fe) || errors.As(err, &ue) || errors.As(err, &le) {
		return err
	}
	return formatErr("tile %v of the %dx%d level: %v", p, l.Width, l.Height, err)
}

// inflate decompresses and unpredicts data into the tile's samples.
func (l *Level) inflate(data []byte) ([]byte, binary.ByteOrder, error) {
	buf, err := codec.Decompress(int(l.Compression), data, int(l.layout().TileBytes()))
	if err != nil {
		return nil, nil, err
	}
	order := l.order
	if l.layout().Predicts() {
		switch l.Predictor {
		case PredictorHorizontal:
			err = codec.UndoHorizontal(buf, l.order, l.TileWidth, l.Bands, l.Bits)
		case PredictorFloat:
			err = codec.UndoFloat(buf, l.TileWidth, l.Bands, l.Bits)
			order = binary.BigEndian
		}
	}
	return buf, order, err
}

// decodeSamples builds the pixels of a tile of a lossless compression.
func (l *Level) decodeSamples(t *Tile, data []byte) error {
	buf, order, err := l.inflate(data)
	if err != nil {
		return err
	}
	w, h := l.TileWidth, l.TileHeight
	if l.Bits != 8 {
		pix := pixels.Float32(buf, w*h, l.Bits, l.SampleFormat == SampleInt, order)
		t.Raster = &Raster{Width: w, Height: h, Pix: pix}
		return nil
	}
	t.Image = pixels.Image8(buf, w, h, l.Bands, l.Premultiplied, l.Photometric == PhotometricMinIsWhite)
	return nil
}

// fillSparse makes the pixels of a tile with no stored bytes: nodata (or
// 0) where there is no alpha, as GDAL reads them; transparent where there
// can be.
func (l *Level) fillSparse(t *Tile) {
	r := image.Rect(0, 0, l.TileWidth, l.TileHeight)
	nd := 0.0
	if l.noData != nil {
		nd = *l.noData
	}
	switch {
	case l.Bits != 8:
		pix := make([]float32, r.Dx()*r.Dy())
		for i := range pix {
			pix[i] = float32(nd)
		}
		t.Raster = &Raster{Width: r.Dx(), Height: r.Dy(), Pix: pix}
	case l.Bands == 1:
		g := image.NewGray(r)
		if nd > 0 && nd <= 255 && nd == math.Trunc(nd) {
			for i := range g.Pix {
				g.Pix[i] = uint8(nd)
			}
		}
		t.Image = g
	default:
		t.Image = image.NewRGBA(r)
	}
}

// decodeMask decodes a mask tile; nil data (a sparse tile) is transparent.
func (m *Level) decodeMask(data []byte) (*image.Alpha, error) {
	var buf []byte
	if data != nil {
		var err error
		if buf, _, err = m.inflate(data); err != nil {
			return nil, err
		}
	}
	return pixels.Mask(buf, m.TileWidth, m.TileHeight, m.Bits), nil
}
