package tiff

import (
	"fmt"
)

// SmallSide is the largest width and height of an image that needs no
// reduced-resolution level: a viewer's overview of it decodes at most a
// few tiles.
const SmallSide = 1024

// Fix is the advice Validate gives: how to make a file this package serves.
const Fix = "vips tiffsave in out.tif --tile --pyramid --compression jpeg --tile-width 512 --tile-height 512" +
	", or gdal_translate -of COG in out.tif"

// Validate reports whether f can be served, for uploads. It must be tiled
// (ErrNotTiled) and pyramidal: its smallest level no wider and no taller
// than SmallSide (ErrNotPyramidal; an image that small needs no other
// level); and every level and mask must be of a compression and samples
// Decode reads (an UnsupportedError). The message of the first problem
// found says what to run.
func Validate(f *File) error {
	if len(f.Levels) == 0 {
		return FormatError("no image")
	}
	top := f.Levels[0]
	if !top.Tiled {
		return fmt.Errorf("%w: the %dx%d image is stored in strips; make it tiled: %s",
			ErrNotTiled, top.Width, top.Height, Fix)
	}
	low := f.Levels[len(f.Levels)-1]
	if low.Width > SmallSide || low.Height > SmallSide {
		return fmt.Errorf("%w: the %dx%d image's smallest level is %dx%d, larger than %dx%d; add levels: %s",
			ErrNotPyramidal, top.Width, top.Height, low.Width, low.Height, SmallSide, SmallSide, Fix)
	}
	for i, l := range f.Levels {
		err := l.decodeErr
		if err == nil && l.Mask != nil {
			err = l.Mask.decodeErr
		}
		if err != nil {
			return fmt.Errorf("%w (level %d, %dx%d); rewrite it: %s", err, i, l.Width, l.Height, Fix)
		}
	}
	return nil
}
