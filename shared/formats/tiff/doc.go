// Package tiff reads tiled TIFF, BigTIFF and Cloud Optimized GeoTIFF images
// by range, for serving their tiles from object storage.
//
// Open reads the header and every IFD once (a few range reads: one for a
// COG whose IFDs and tile arrays fit in its first 64 KiB, two for a larger
// one) and describes the image as resolution levels, full resolution first,
// whether the levels are chained IFDs (libvips --pyramid, GDAL COG
// overviews) or SubIFDs (libvips --subifd). Transparency masks
// (NewSubfileType 4 and 5, as GDAL writes beside JPEG) are attached to the
// level of their size; IFDs that are not levels are listed in File.Skipped
// with the reason. The File is meant to be cached per object version:
// afterwards, Level.ReadTiles reads the stored bytes of the tiles a request
// needs, one range read per tile or fewer (adjacent tiles and a tile's mask
// are read in one range), and Level.WholeJPEG turns a stored JPEG tile into
// a complete JPEG without decoding it. Level.Decode decompresses and builds
// the pixels when a request needs them.
//
// What is read: classic TIFF and BigTIFF in both byte orders; compression
// none, LZW, Deflate, PackBits, JPEG (with JPEGTables; YCbCr, RGB and gray)
// and WebP; predictors 2 and 3; 8-bit gray, gray+alpha, RGB and RGBA, and
// single-band 16-bit integer and 32-bit float samples; sparse tiles.
// GeoTIFF georeferencing (package geotiff), GDAL_NODATA, GDAL_METADATA and
// the COG structural metadata (package gdalmeta) are parsed. Stripped
// images are described but not read (Validate says how to convert them).
//
// What is promised: every count is bounded by Options before anything is
// allocated for it, every offset is checked against the object's size, a
// loop among IFDs is an error, and decompression never produces more than
// the tile holds. Malformed input gives a FormatError, valid input this
// package does not read an UnsupportedError, a count over a bound a
// LimitError; errors of the RangeReader are passed on wrapped. No input
// makes it panic.
package tiff
