// Package demoimage is the local stack's demo IIIF image: a 3072×2048 chart
// of labelled cells (A1 to D6), each divided into squares labelled with
// their pixel coordinates, so a viewer shows at a glance where it is and
// that every zoom level is sharp.
//
// The image is a file libvips wrote (make.sh, run in this directory, writes
// it again), not one drawn at start: it is a pyramidal TIFF of 256×256 JPEG
// tiles as users make theirs with vips tiffsave --tile --pyramid, so the
// local stack serves the kind of file the tile function meets in S3, and
// the file is under 1 MB.
package demoimage

import _ "embed"

// TIFF is the image file.
//
//go:embed image.tif
var TIFF []byte

// ID is the image's IIIF id: the key Key under TILES_PREFIX without .tif.
// It holds a slash, which IIIF URLs escape (demo%2Fimage).
const ID = "demo/image"

// Key is where the local stack stores the image under TILES_PREFIX.
const Key = ID + ".tif"

// Size is the image's width and height; TileSize its tiles' edge.
const (
	Width, Height = 3072, 2048
	TileSize      = 256
)
