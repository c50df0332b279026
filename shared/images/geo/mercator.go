package geo

import "math"

// Web mercator (EPSG:3857): the spherical mercator projection of WGS 84
// longitude/latitude onto a sphere of the WGS 84 semi-major axis.
const (
	// EarthRadius is the WGS 84 semi-major axis, the sphere's radius.
	EarthRadius = 6378137.0
	// MercatorHalfWorld is the x of the antimeridian (and the y at
	// MaxMercatorLat): the square world of the XYZ tiling spans ±this.
	MercatorHalfWorld = math.Pi * EarthRadius
	// MaxMercatorLat is the latitude whose y is MercatorHalfWorld, the edge of
	// the XYZ tiling: atan(sinh(π)) in degrees.
	MaxMercatorLat = 85.051128779806592
)

const (
	deg = math.Pi / 180
	rad = 180 / math.Pi
)

// LonLatToMercator maps degrees to web mercator metres. A pole maps to ±Inf;
// a latitude beyond ±90 or a non-finite input to NaN.
func LonLatToMercator(lon, lat float64) (x, y float64) {
	if !(math.Abs(lat) <= 90) || math.IsInf(lon, 0) || math.IsNaN(lon) {
		return math.NaN(), math.NaN()
	}
	return EarthRadius * lon * deg, EarthRadius * math.Atanh(math.Sin(lat*deg))
}

// MercatorToLonLat maps web mercator metres to degrees. It is the exact
// inverse of LonLatToMercator; x is not wrapped into ±180°.
func MercatorToLonLat(x, y float64) (lon, lat float64) {
	return x / EarthRadius * rad, math.Atan(math.Sinh(y/EarthRadius)) * rad
}

// MercatorLat is the latitude of a web mercator y, the one half of
// MercatorToLonLat that a row of pixels shares.
func MercatorLat(y float64) float64 {
	return math.Atan(math.Sinh(y/EarthRadius)) * rad
}
