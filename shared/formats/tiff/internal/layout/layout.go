// Package layout knows how the samples of a TIFF tile are laid out, and
// which layouts this module decodes: which band is alpha, how many bytes a
// decompressed tile holds, when the predictor applies, and which
// combinations of bands, bits, photometric interpretation, compression and
// predictor make an image.
package layout

import "fmt"

// Values of TIFF tags used here.
const (
	compLZW        = 5
	compJPEG       = 7
	compDeflate    = 8
	compDeflateOld = 32946
	compWebP       = 50001

	photoMinIsWhite = 0
	photoMinIsBlack = 1
	photoRGB        = 2
	photoSeparated  = 5
	photoYCbCr      = 6

	formatUint  = 1
	formatInt   = 2
	formatFloat = 3

	predNone       = 1
	predHorizontal = 2
	predFloat      = 3
)

// Layout is how the samples of one level's tiles are stored.
type Layout struct {
	TileWidth, TileHeight int
	Bands, Bits, Format   int // Format is the SampleFormat tag
	Photometric           int
	Compression           int
	Predictor             int
	Planar                int // the PlanarConfiguration tag
	Alpha                 int // the alpha band, -1 for none
	Premultiplied         bool
}

// Alpha finds the alpha band among the samples beyond the colour ones, from
// the first ExtraSamples value (extra): 1 is premultiplied alpha, 2
// straight alpha; 0 (unspecified, or no tag) is taken for straight alpha
// when it is the second band of gray or the fourth of RGB, as writers that
// start from PNG mean it. band is -1 when there is no alpha.
func Alpha(photometric, bands int, extra uint64) (band int, premultiplied bool) {
	color := 1
	switch photometric {
	case photoRGB, photoYCbCr:
		color = 3
	case photoSeparated:
		color = 4
	}
	switch {
	case bands <= color:
		return -1, false
	case extra == 1:
		return color, true
	case extra == 2, extra == 0 && bands == color+1 && (color == 1 || color == 3):
		return color, false
	}
	return -1, false
}

// TileBytes is the size of one decompressed tile (of one plane when the
// bands are stored apart). Callers bound the factors, so it cannot overflow.
func (l Layout) TileBytes() uint64 {
	bands := uint64(l.Bands)
	if l.Planar == 2 {
		bands = 1
	}
	row := (uint64(l.TileWidth)*bands*uint64(l.Bits) + 7) / 8
	return row * uint64(l.TileHeight)
}

// Predicts reports whether the predictor applies: libtiff applies it with
// LZW and Deflate and ignores it with the other compressions.
func (l Layout) Predicts() bool {
	switch l.Compression {
	case compLZW, compDeflate, compDeflateOld:
		return l.Predictor != predNone
	}
	return false
}

// Check says what keeps a tile of this layout from being decoded, "" when
// nothing does; mask is a transparency mask. The compression itself is
// the caller's to check.
func (l Layout) Check(mask bool) string {
	lossy := l.Compression == compJPEG || l.Compression == compWebP
	switch {
	case l.Planar != 1 && l.Bands > 1:
		return fmt.Sprintf("bands stored apart (PlanarConfiguration %d)", l.Planar)
	case mask && (lossy || l.Bands != 1 || l.Bits != 1 && l.Bits != 8):
		return fmt.Sprintf("mask of %d bands of %d bits, compression %d", l.Bands, l.Bits, l.Compression)
	case !mask && !l.samplesOK():
		return fmt.Sprintf("%d bands of %d-bit samples of format %d, photometric %d, compression %d",
			l.Bands, l.Bits, l.Format, l.Photometric, l.Compression)
	case l.Predicts() && !l.predictorOK():
		return fmt.Sprintf("predictor %d with %d-bit samples of format %d", l.Predictor, l.Bits, l.Format)
	}
	return ""
}

// samplesOK lists the images built: 8-bit gray, gray+alpha, RGB and RGBA
// (JPEG: gray, RGB or YCbCr; WebP: RGB or RGBA), and single-band 16-bit
// integers and 32-bit floats (lossless compressions only).
func (l Layout) samplesOK() bool {
	p, b := l.Photometric, l.Bands
	if l.Bits == 8 && l.Format == formatUint {
		switch l.Compression {
		case compJPEG:
			return b == 1 && (p == photoMinIsBlack || p == photoMinIsWhite) || b == 3 && (p == photoRGB || p == photoYCbCr)
		case compWebP:
			return p == photoRGB && (b == 3 || b == 4 && l.Alpha == 3)
		}
		return b == 1 && (p == photoMinIsBlack || p == photoMinIsWhite) ||
			b == 2 && p == photoMinIsBlack && l.Alpha == 1 ||
			b == 3 && p == photoRGB ||
			b == 4 && p == photoRGB && l.Alpha == 3
	}
	lossless := l.Compression != compJPEG && l.Compression != compWebP
	return lossless && b == 1 && (l.Bits == 16 && (l.Format == formatUint || l.Format == formatInt) ||
		l.Bits == 32 && l.Format == formatFloat)
}

func (l Layout) predictorOK() bool {
	switch l.Predictor {
	case predHorizontal:
		return l.Bits == 8 || l.Bits == 16 || l.Bits == 32
	case predFloat:
		return l.Format == formatFloat && l.Bits == 32
	}
	return false
}
