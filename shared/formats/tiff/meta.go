package tiff

import (
	"github.com/tilesieve/tilesieve/shared/formats/tiff/gdalmeta"
	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/ifd"
)

// textTags are the TIFF text tags kept as metadata, under GDAL's names.
var textTags = []struct {
	tag  uint16
	name string
}{
	{tagImageDescription, "TIFFTAG_IMAGEDESCRIPTION"},
	{tagArtist, "TIFFTAG_ARTIST"},
	{tagCopyright, "TIFFTAG_COPYRIGHT"},
	{tagSoftware, "TIFFTAG_SOFTWARE"},
	{tagDateTime, "TIFFTAG_DATETIME"},
}

// readStructure parses the structural metadata at the start of b, if any.
func (f *File) readStructure(b []byte) {
	s, ok, err := gdalmeta.ParseStructure(b)
	switch {
	case err != nil:
		f.Warnings = append(f.Warnings, err.Error())
	case ok:
		f.Structure = s
	}
}

// readTags reads the metadata, nodata and georeferencing of the
// full-resolution IFD. Problems become warnings (or, for the
// georeferencing, the error Georeferencing returns), never failures.
func (f *File) readTags(d *ifd.IFD) {
	for _, t := range textTags {
		if v, ok := d.Get(t.tag); ok && v.Type == ifd.TypeASCII && v.Loaded() {
			f.Metadata = append(f.Metadata, gdalmeta.Item{Name: t.name, Sample: -1, Value: v.String()})
		}
	}
	if v, ok := d.Get(tagGDALMetadata); ok {
		items, err := gdalmeta.ParseMetadata(v.String())
		if err != nil {
			f.Warnings = append(f.Warnings, err.Error())
		}
		f.Metadata = append(f.Metadata, items...)
	}
	if v, ok := d.Get(tagGDALNoData); ok {
		nd, err := gdalmeta.ParseNoData(v.String())
		if err != nil {
			f.Warnings = append(f.Warnings, err.Error())
		} else {
			f.NoData = &nd
			for _, l := range f.Levels {
				l.noData = &nd
			}
		}
	}
	f.readGeo(d)
}
