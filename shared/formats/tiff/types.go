package tiff

import "fmt"

// Compression is the value of the Compression tag (259).
type Compression uint16

// Compressions named by this package; only None, LZW, JPEG, Deflate,
// DeflateOld, PackBits and WebP are read.
const (
	CompressionNone       Compression = 1
	CompressionCCITTRLE   Compression = 2
	CompressionCCITTG3    Compression = 3
	CompressionCCITTG4    Compression = 4
	CompressionLZW        Compression = 5
	CompressionOldJPEG    Compression = 6
	CompressionJPEG       Compression = 7
	CompressionDeflate    Compression = 8 // Adobe Deflate
	CompressionJPEG2000   Compression = 34712
	CompressionLERC       Compression = 34887
	CompressionLZMA       Compression = 34925
	CompressionPackBits   Compression = 32773
	CompressionDeflateOld Compression = 32946 // PKZIP-style Deflate, as old libtiff wrote it
	CompressionZSTD       Compression = 50000
	CompressionWebP       Compression = 50001
	CompressionJPEGXL     Compression = 50002
)

var compressionNames = map[Compression]string{
	CompressionNone: "none", CompressionCCITTRLE: "CCITT RLE", CompressionCCITTG3: "CCITT G3",
	CompressionCCITTG4: "CCITT G4", CompressionLZW: "LZW", CompressionOldJPEG: "old-style JPEG",
	CompressionJPEG: "JPEG", CompressionDeflate: "Deflate", CompressionJPEG2000: "JPEG 2000",
	CompressionLERC: "LERC", CompressionLZMA: "LZMA", CompressionPackBits: "PackBits",
	CompressionDeflateOld: "Deflate (old code)", CompressionZSTD: "ZSTD", CompressionWebP: "WebP",
	CompressionJPEGXL: "JPEG XL",
}

// String names the compression and gives its code, e.g. "JPEG (7)".
func (c Compression) String() string {
	if n, ok := compressionNames[c]; ok {
		return fmt.Sprintf("%s (%d)", n, uint16(c))
	}
	return fmt.Sprintf("unknown (%d)", uint16(c))
}

// Photometric is the value of the PhotometricInterpretation tag (262).
type Photometric uint16

// Photometric interpretations.
const (
	PhotometricMinIsWhite Photometric = 0
	PhotometricMinIsBlack Photometric = 1
	PhotometricRGB        Photometric = 2
	PhotometricPalette    Photometric = 3
	PhotometricMask       Photometric = 4
	PhotometricSeparated  Photometric = 5
	PhotometricYCbCr      Photometric = 6
)

// SampleFormat is the value of the SampleFormat tag (339).
type SampleFormat uint16

// Sample formats.
const (
	SampleUint  SampleFormat = 1
	SampleInt   SampleFormat = 2
	SampleFloat SampleFormat = 3
)

// Predictors (tag 317).
const (
	PredictorNone       = 1
	PredictorHorizontal = 2
	PredictorFloat      = 3
)

// Tags read by this package.
const (
	tagNewSubfileType      = 254
	tagImageWidth          = 256
	tagImageLength         = 257
	tagBitsPerSample       = 258
	tagCompression         = 259
	tagPhotometric         = 262
	tagImageDescription    = 270
	tagStripOffsets        = 273
	tagSamplesPerPixel     = 277
	tagRowsPerStrip        = 278
	tagPlanarConfig        = 284
	tagSoftware            = 305
	tagDateTime            = 306
	tagArtist              = 315
	tagPredictor           = 317
	tagTileWidth           = 322
	tagTileLength          = 323
	tagTileOffsets         = 324
	tagTileByteCounts      = 325
	tagSubIFDs             = 330
	tagExtraSamples        = 338
	tagSampleFormat        = 339
	tagJPEGTables          = 347
	tagCopyright           = 33432
	tagModelPixelScale     = 33550
	tagModelTiepoint       = 33922
	tagModelTransformation = 34264
	tagGeoKeyDirectory     = 34735
	tagGeoDoubleParams     = 34736
	tagGeoASCIIParams      = 34737
	tagGDALMetadata        = 42112
	tagGDALNoData          = 42113
)

// NewSubfileType bits.
const (
	subfileReduced = 1
	subfileMask    = 4
)
