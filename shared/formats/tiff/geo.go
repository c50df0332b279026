package tiff

import (
	"fmt"

	"github.com/tilesieve/tilesieve/shared/formats/tiff/geotiff"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/ifd"
)

// Georeferencing is the file's georeferencing; ErrNotGeoreferenced when the
// file has no GeoTIFF tags, a FormatError when they are malformed.
func (f *File) Georeferencing() (*geotiff.Georef, error) {
	if f.Geo != nil {
		return f.Geo, nil
	}
	if f.geoErr != nil {
		return nil, f.geoErr
	}
	return nil, ErrNotGeoreferenced
}

// LevelTransform is the geotransform of level i: the full-resolution one
// scaled by the ratio of the sizes, as GDAL scales its overviews.
func (f *File) LevelTransform(i int) ([6]float64, error) {
	g, err := f.Georeferencing()
	if err != nil {
		return [6]float64{}, err
	}
	if i < 0 || i >= len(f.Levels) {
		return [6]float64{}, fmt.Errorf("tiff: no level %d (%d levels)", i, len(f.Levels))
	}
	full, l := f.Levels[0], f.Levels[i]
	sx := float64(full.Width) / float64(l.Width)
	sy := float64(full.Height) / float64(l.Height)
	gt := g.GeoTransform
	return [6]float64{gt[0], gt[1] * sx, gt[2] * sy, gt[3], gt[4] * sx, gt[5] * sy}, nil
}

// readGeo reads the georeferencing of d into f.Geo, or the reason it has
// none into f.geoErr.
func (f *File) readGeo(d *ifd.IFD) {
	floats := func(tag uint16) []float64 {
		if v, ok := d.Get(tag); ok {
			return v.Floats()
		}
		return nil
	}
	t := geotiff.Tags{
		PixelScale:     floats(tagModelPixelScale),
		Tiepoints:      floats(tagModelTiepoint),
		Transformation: floats(tagModelTransformation),
		DoubleParams:   floats(tagGeoDoubleParams),
	}
	if v, ok := d.Get(tagGeoASCIIParams); ok {
		t.ASCIIParams = string(v.Raw)
	}
	if v, ok := d.Get(tagGeoKeyDirectory); ok {
		if v.Type != ifd.TypeShort || !v.Loaded() {
			f.geoErr = formatErr("GeoKeyDirectory of type %d, or too long", v.Type)
			return
		}
		t.KeyDirectory = make([]uint16, v.Len())
		for i := range t.KeyDirectory {
			u, _ := v.Uint(i)
			t.KeyDirectory[i] = uint16(u)
		}
	}
	if len(t.KeyDirectory) == 0 && len(t.Tiepoints) == 0 && len(t.Transformation) == 0 {
		return
	}
	g, err := geotiff.Read(t)
	if err != nil {
		f.geoErr = FormatError(err.Error())
		return
	}
	f.Geo = g
}
