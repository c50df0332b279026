// Package geo converts coordinates between the coordinate reference systems a
// georeferenced raster is served from and geographic longitude/latitude on
// WGS 84, with exact formulas and no projection library: web mercator
// (EPSG:3857), WGS 84 geographic (EPSG:4326, x = longitude, y = latitude, as
// GeoTIFF stores it) and the 120 WGS 84 UTM zones (EPSG:32601–32660 north,
// 32701–32760 south).
//
// It promises: web mercator exactly as EPSG:3857 defines it (a sphere of the
// WGS 84 semi-major axis); transverse mercator by Krüger's series to order n⁶
// (Karney 2011), within a few nanometres of the exact mapping inside a UTM zone
// and well under a millimetre a few thousand kilometres beyond it; and no
// panic on any input: a point outside a projection's domain, or a non-finite
// one, gives NaN (or ±Inf where the projection goes to infinity, as web
// mercator at a pole).
package geo

import (
	"fmt"
	"math"
	"sync"
)

// CRS is one of the coordinate reference systems this package serves. The
// zero value is no CRS: its conversions return NaN.
type CRS struct {
	code int
	kind kind
	tm   *TransverseMercator // for UTM
}

type kind uint8

const (
	kindNone kind = iota
	kindWebMercator
	kindGeographic
	kindUTM
)

// EPSG codes this package knows by name.
const (
	WebMercatorEPSG = 3857
	WGS84EPSG       = 4326
)

// Reprojection commands that turn an unsupported raster into a servable one,
// quoted in UnsupportedError.
const (
	ReprojectCommand  = "gdalwarp -t_srs EPSG:3857 -of COG in.tif out.tif"
	GoogleMapsCommand = "gdal_translate -of COG -co TILING_SCHEME=GoogleMapsCompatible in.tif out.tif"
)

// UnsupportedError is a coordinate reference system this package does not
// serve. Its message says how to make a file that is served.
type UnsupportedError struct {
	EPSG int
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("geo: EPSG:%d is not served (EPSG:3857, EPSG:4326 and the WGS 84 UTM zones "+
		"EPSG:32601-32660 and 32701-32760 are); reproject it with `%s`, or to serve stored tiles "+
		"as they are, `%s`", e.EPSG, ReprojectCommand, GoogleMapsCommand)
}

// utmZones holds the 120 UTM projections, built once, on the first Lookup
// of one rather than at every cold start: a Lookup on the request path
// allocates nothing.
var utmZones = sync.OnceValue(func() *[2][61]*TransverseMercator {
	var z [2][61]*TransverseMercator
	for zone := 1; zone <= 60; zone++ {
		z[0][zone], _ = UTM(zone, false)
		z[1][zone], _ = UTM(zone, true)
	}
	return &z
})

// Lookup returns the CRS of an EPSG code, or an *UnsupportedError.
func Lookup(epsg int) (CRS, error) {
	switch {
	case epsg == WebMercatorEPSG:
		return CRS{code: epsg, kind: kindWebMercator}, nil
	case epsg == WGS84EPSG:
		return CRS{code: epsg, kind: kindGeographic}, nil
	case epsg >= 32601 && epsg <= 32660:
		return CRS{code: epsg, kind: kindUTM, tm: utmZones()[0][epsg-32600]}, nil
	case epsg >= 32701 && epsg <= 32760:
		return CRS{code: epsg, kind: kindUTM, tm: utmZones()[1][epsg-32700]}, nil
	}
	return CRS{}, &UnsupportedError{EPSG: epsg}
}

// EPSG is the CRS's EPSG code (0 for the zero CRS).
func (c CRS) EPSG() int { return c.code }

// IsWebMercator reports whether the CRS is EPSG:3857.
func (c CRS) IsWebMercator() bool { return c.kind == kindWebMercator }

// IsGeographic reports whether the CRS is EPSG:4326 (coordinates in degrees).
func (c CRS) IsGeographic() bool { return c.kind == kindGeographic }

// Separable reports whether x depends only on longitude and y only on
// latitude (web mercator and geographic), so a grid of points can be mapped a
// row and a column at a time.
func (c CRS) Separable() bool { return c.kind == kindWebMercator || c.kind == kindGeographic }

func (c CRS) String() string {
	switch c.kind {
	case kindWebMercator:
		return "EPSG:3857 (WGS 84 / Pseudo-Mercator)"
	case kindGeographic:
		return "EPSG:4326 (WGS 84)"
	case kindUTM:
		hemi := "N"
		if c.code > 32700 {
			hemi = "S"
		}
		return fmt.Sprintf("EPSG:%d (WGS 84 / UTM zone %d%s)", c.code, c.code%100, hemi)
	}
	return "no CRS"
}

// FromLonLat maps a geographic point (degrees) to the CRS's coordinates.
func (c CRS) FromLonLat(lon, lat float64) (x, y float64) {
	switch c.kind {
	case kindWebMercator:
		return LonLatToMercator(lon, lat)
	case kindGeographic:
		if math.Abs(lat) > 90 {
			return math.NaN(), math.NaN()
		}
		return lon, lat
	case kindUTM:
		return c.tm.Forward(lon, lat)
	}
	return math.NaN(), math.NaN()
}

// ToLonLat maps the CRS's coordinates to a geographic point (degrees).
func (c CRS) ToLonLat(x, y float64) (lon, lat float64) {
	switch c.kind {
	case kindWebMercator:
		return MercatorToLonLat(x, y)
	case kindGeographic:
		if math.Abs(y) > 90 {
			return math.NaN(), math.NaN()
		}
		return x, y
	case kindUTM:
		return c.tm.Inverse(x, y)
	}
	return math.NaN(), math.NaN()
}

// FromMercator maps a web mercator point to the CRS's coordinates, the step
// every resampled XYZ pixel takes.
func (c CRS) FromMercator(mx, my float64) (x, y float64) {
	switch c.kind {
	case kindWebMercator:
		return mx, my
	case kindUTM:
		return c.tm.forward(mx/EarthRadius*rad, math.Sinh(my/EarthRadius))
	}
	return c.FromLonLat(MercatorToLonLat(mx, my))
}

// FromMercatorX is the x of FromMercator for a separable CRS, which depends
// on mx alone; NaN for the others.
func (c CRS) FromMercatorX(mx float64) float64 {
	switch c.kind {
	case kindWebMercator:
		return mx
	case kindGeographic:
		return mx / EarthRadius * rad
	}
	return math.NaN()
}

// FromMercatorY is the y of FromMercator for a separable CRS, which depends
// on my alone; NaN for the others.
func (c CRS) FromMercatorY(my float64) float64 {
	switch c.kind {
	case kindWebMercator:
		return my
	case kindGeographic:
		return MercatorLat(my)
	}
	return math.NaN()
}

// ToMercator maps the CRS's coordinates to web mercator.
func (c CRS) ToMercator(x, y float64) (mx, my float64) {
	if c.kind == kindWebMercator {
		return x, y
	}
	return LonLatToMercator(c.ToLonLat(x, y))
}
