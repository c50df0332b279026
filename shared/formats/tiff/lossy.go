package tiff

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"

	"golang.org/x/image/webp"

	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/jpegseg"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/pixels"
)

// WholeJPEG makes a JPEG tile of l, as stored, a complete JPEG stream that
// any decoder reads right: the tables of JPEGTables go between SOI and the
// tile's own frame, and an application marker says how to read the
// colours. Photometric RGB gets an Adobe APP14 marker with transform 0, so
// that decoders do not take the components for YCbCr; YCbCr and gray get a
// JFIF APP0 marker, a plain JFIF stream. This is the no-decode path: a
// request for exactly one stored tile is answered with these bytes. A
// MinIsWhite gray JPEG would show inverted: it is an UnsupportedError,
// and such tiles go through Decode.
func (l *Level) WholeJPEG(raw []byte) ([]byte, error) {
	if l.Compression != CompressionJPEG {
		return nil, fmt.Errorf("tiff: WholeJPEG of a level compressed with %v", l.Compression)
	}
	if l.decodeErr != nil {
		return nil, l.decodeErr
	}
	if l.Photometric == PhotometricMinIsWhite {
		return nil, unsupported("a stored JPEG tile of a MinIsWhite image, which decoders show inverted")
	}
	return l.merge(raw)
}

// merge puts the tables in front of a stored JPEG tile.
func (l *Level) merge(raw []byte) ([]byte, error) {
	color := jpegseg.JFIF
	if l.Photometric == PhotometricRGB {
		color = jpegseg.AdobeRGB
	}
	whole, err := jpegseg.Merge(l.tables, raw, color)
	if err != nil {
		return nil, FormatError(err.Error())
	}
	return whole, nil
}

// decodeJPEG decodes a JPEG tile after checking that its frame has the
// tile's size and band count.
func (l *Level) decodeJPEG(data []byte) (image.Image, error) {
	whole, err := l.merge(data)
	if err != nil {
		return nil, err
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(whole))
	if err != nil {
		return nil, err
	}
	if err := l.checkFrame(cfg); err != nil {
		return nil, err
	}
	img, err := jpeg.Decode(bytes.NewReader(whole))
	if g, ok := img.(*image.Gray); ok && l.Photometric == PhotometricMinIsWhite {
		for i := range g.Pix {
			g.Pix[i] = 255 - g.Pix[i]
		}
	}
	return img, err
}

// decodeWebP decodes a WebP tile after checking its size. Lossless tiles
// come back as *image.NRGBA, lossy ones as *image.RGBA (*image.NRGBA with
// alpha) converted from VP8's limited-range YCbCr.
func (l *Level) decodeWebP(data []byte) (image.Image, error) {
	cfg, err := webp.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if err := l.checkFrame(cfg); err != nil {
		return nil, err
	}
	img, err := webp.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return pixels.FromLimitedYCbCr(img), nil
}

// checkFrame checks that a compressed tile is of the tile's size and holds
// as many bands as the level.
func (l *Level) checkFrame(cfg image.Config) error {
	if cfg.Width != l.TileWidth || cfg.Height != l.TileHeight {
		return fmt.Errorf("frame of %dx%d pixels in tiles of %dx%d", cfg.Width, cfg.Height, l.TileWidth, l.TileHeight)
	}
	if gray := cfg.ColorModel == color.GrayModel; gray != (l.Bands == 1) {
		return fmt.Errorf("frame of gray %v for %d bands", gray, l.Bands)
	}
	return nil
}
