// Package geotiff reads the georeferencing of a GeoTIFF: the key directory
// (tags 34735, 34736, 34737) and the model tags (33550, 33922, 34264), as
// GeoTIFF 1.1 (OGC 19-008r4) defines them, into a CRS code and GDAL's
// affine geotransform.
package geotiff

import "errors"

// ModelType is GTModelTypeGeoKey.
type ModelType int

// Model types.
const (
	ModelProjected  ModelType = 1
	ModelGeographic ModelType = 2
	ModelGeocentric ModelType = 3
)

// Tags are the raw values of the GeoTIFF tags of an image; a missing tag
// is nil (or "").
type Tags struct {
	KeyDirectory   []uint16
	DoubleParams   []float64
	ASCIIParams    string
	PixelScale     []float64
	Tiepoints      []float64
	Transformation []float64
}

// Georef is the georeferencing of an image.
type Georef struct {
	Model ModelType
	// EPSG is the code of the CRS: ProjectedCSTypeGeoKey for a projected
	// model, GeographicTypeGeoKey for a geographic one; 0 when the CRS is
	// user-defined (32767) or not given.
	EPSG int
	// ProjectedEPSG and GeographicEPSG are the two keys as written, 0 when
	// absent or user-defined.
	ProjectedEPSG, GeographicEPSG int
	// PixelIsPoint is GTRasterTypeGeoKey PixelIsPoint: the model tags name
	// pixel centres. GeoTransform is corrected for it, as GDAL does.
	PixelIsPoint bool
	// GeoTransform maps pixel corners of the image to the model, in GDAL's
	// form: x = gt[0] + col*gt[1] + row*gt[2], y = gt[3] + col*gt[4] + row*gt[5].
	GeoTransform [6]float64
	// LinearUnits (ProjLinearUnitsGeoKey, e.g. 9001 metre) and AngularUnits
	// (GeogAngularUnitsGeoKey, e.g. 9102 degree) are EPSG unit codes, 0
	// when not given; VerticalEPSG and VerticalUnits likewise.
	LinearUnits, AngularUnits   int
	VerticalEPSG, VerticalUnits int
	// Citation is GTCitationGeoKey, or the projected or geographic
	// citation when that is absent.
	Citation string
}

// Projected reports whether the model is projected (coordinates in linear
// units such as metres), not geographic (degrees).
func (g *Georef) Projected() bool { return g.Model == ModelProjected }

// Read decodes the georeferencing of tags. A file needs a key directory
// (for its CRS) and a transform (ModelTransformation, or one tiepoint with
// ModelPixelScale); ground control points are not supported.
func Read(t Tags) (*Georef, error) {
	if t.KeyDirectory == nil {
		return nil, errors.New("geotiff: model tags without a GeoKeyDirectory: no CRS")
	}
	keys, err := ParseKeys(t.KeyDirectory, t.DoubleParams, t.ASCIIParams)
	if err != nil {
		return nil, err
	}
	g := &Georef{}
	g.fromKeys(keys)
	if g.Model == 0 {
		return nil, errors.New("geotiff: no GTModelTypeGeoKey, nor a CRS to tell the model from")
	}
	g.GeoTransform, err = Transform(t.PixelScale, t.Tiepoints, t.Transformation, g.PixelIsPoint)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// fromKeys fills g from the key directory.
func (g *Georef) fromKeys(k Keys) {
	code := func(key uint16) int {
		if v, ok := k.Short(key); ok && v != UserDefined {
			return v
		}
		return 0
	}
	g.ProjectedEPSG, g.GeographicEPSG = code(KeyProjectedCSType), code(KeyGeographicType)
	g.LinearUnits, g.AngularUnits = code(KeyProjLinearUnits), code(KeyGeogAngularUnits)
	g.VerticalEPSG, g.VerticalUnits = code(KeyVerticalCSType), code(KeyVerticalUnits)
	if v, ok := k.Short(KeyRasterType); ok && v == RasterPixelIsPoint {
		g.PixelIsPoint = true
	}
	if v, ok := k.Short(KeyModelType); ok && v >= 1 && v <= 3 {
		g.Model = ModelType(v)
	} else if _, ok := k.Short(KeyProjectedCSType); ok {
		g.Model = ModelProjected
	} else if _, ok := k.Short(KeyGeographicType); ok {
		g.Model = ModelGeographic
	}
	switch g.Model {
	case ModelProjected:
		g.EPSG = g.ProjectedEPSG
	case ModelGeographic:
		g.EPSG = g.GeographicEPSG
	}
	for _, key := range []uint16{KeyCitation, KeyPCSCitation, KeyGeogCitation} {
		if e, ok := k.Keys[key]; ok && e.ASCII != "" {
			g.Citation = e.ASCII
			break
		}
	}
}
