package geotiff

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// GeoTIFF tags.
const (
	TagModelPixelScale     = 33550
	TagModelTiepoint       = 33922
	TagModelTransformation = 34264
	TagKeyDirectory        = 34735
	TagDoubleParams        = 34736
	TagASCIIParams         = 34737
)

// Keys read by this package.
const (
	KeyModelType        = 1024
	KeyRasterType       = 1025
	KeyCitation         = 1026
	KeyGeographicType   = 2048
	KeyGeogCitation     = 2049
	KeyGeogLinearUnits  = 2052
	KeyGeogAngularUnits = 2054
	KeyProjectedCSType  = 3072
	KeyPCSCitation      = 3073
	KeyProjLinearUnits  = 3076
	KeyVerticalCSType   = 4096
	KeyVerticalUnits    = 4099
)

// Key values.
const (
	UserDefined        = 32767
	RasterPixelIsArea  = 1
	RasterPixelIsPoint = 2
)

// maxKeys bounds the directory; real files hold a dozen keys.
const maxKeys = 1024

// Entry is the value of one key: a short, doubles or a string.
type Entry struct {
	Shorts  []uint16
	Doubles []float64
	ASCII   string
}

// Short is the first short of the entry, or 0, false.
func (e Entry) Short() (int, bool) {
	if len(e.Shorts) == 0 {
		return 0, false
	}
	return int(e.Shorts[0]), true
}

// Keys is a decoded key directory.
type Keys struct {
	Version, Revision, Minor int
	Keys                     map[uint16]Entry
}

// Short is the short value of key, or 0, false when absent or not a short.
func (d Keys) Short(key uint16) (int, bool) {
	return d.Keys[key].Short()
}

// ParseKeys decodes a key directory with its doubles and ASCII parameters.
// Keys whose values lie in an unknown tag are left out; keys whose values
// point outside their tag are an error.
func ParseKeys(dir []uint16, doubles []float64, ascii string) (Keys, error) {
	if len(dir) < 4 {
		return Keys{}, fmt.Errorf("geotiff: GeoKey directory of %d shorts, want at least 4", len(dir))
	}
	d := Keys{Version: int(dir[0]), Revision: int(dir[1]), Minor: int(dir[2])}
	if d.Version != 1 {
		return Keys{}, fmt.Errorf("geotiff: GeoKey directory version %d, want 1", d.Version)
	}
	n := int(dir[3])
	if n > maxKeys || n > (len(dir)-4)/4 {
		return Keys{}, fmt.Errorf("geotiff: GeoKey directory says %d keys, holds %d", n, (len(dir)-4)/4)
	}
	d.Keys = make(map[uint16]Entry, n)
	for i := range n {
		k := dir[4+4*i : 8+4*i]
		id, loc, count, val := k[0], k[1], int(k[2]), int(k[3])
		var e Entry
		switch loc {
		case 0:
			e.Shorts = []uint16{uint16(val)}
		case TagKeyDirectory:
			if val+count > len(dir) {
				return Keys{}, fmt.Errorf("geotiff: GeoKey %d: shorts %d+%d past the directory (%d)", id, val, count, len(dir))
			}
			e.Shorts = dir[val : val+count]
		case TagDoubleParams:
			if val+count > len(doubles) {
				return Keys{}, fmt.Errorf("geotiff: GeoKey %d: doubles %d+%d past GeoDoubleParams (%d)", id, val, count, len(doubles))
			}
			e.Doubles = doubles[val : val+count]
		case TagASCIIParams:
			if val+count > len(ascii) {
				return Keys{}, fmt.Errorf("geotiff: GeoKey %d: characters %d+%d past GeoAsciiParams (%d)", id, val, count, len(ascii))
			}
			// Each string ends with '|' in GeoAsciiParams.
			e.ASCII = strings.TrimRight(ascii[val:val+count], "|\x00")
		default:
			continue
		}
		d.Keys[id] = e
	}
	return d, nil
}

// ErrNoTransform is a file with no model tags to compute a transform from.
var ErrNoTransform = errors.New("geotiff: no ModelTransformation, or ModelTiepoint with ModelPixelScale")

// Transform is the affine geotransform, in GDAL's six-number form (origin
// x, pixel width, row rotation, origin y, column rotation, pixel height),
// of the corner of the top-left pixel. With pixelIsPoint the model
// coordinates name pixel centres, and the origin moves half a pixel up and
// left, as GDAL does by default.
func Transform(scale, tiepoints, matrix []float64, pixelIsPoint bool) ([6]float64, error) {
	var gt [6]float64
	switch {
	case len(matrix) > 0:
		if len(matrix) != 16 {
			return gt, fmt.Errorf("geotiff: ModelTransformation of %d values, want 16", len(matrix))
		}
		gt = [6]float64{matrix[3], matrix[0], matrix[1], matrix[7], matrix[4], matrix[5]}
	case len(tiepoints) > 0 && len(scale) > 0:
		if len(tiepoints) != 6 {
			return gt, fmt.Errorf("geotiff: %d ModelTiepoint values: ground control points (not an affine grid) are not supported", len(tiepoints))
		}
		if len(scale) < 2 {
			return gt, fmt.Errorf("geotiff: ModelPixelScale of %d values, want 3", len(scale))
		}
		i, j, x, y := tiepoints[0], tiepoints[1], tiepoints[3], tiepoints[4]
		sx, sy := scale[0], scale[1]
		gt = [6]float64{x - i*sx, sx, 0, y + j*sy, 0, -sy}
	default:
		return gt, ErrNoTransform
	}
	for _, v := range gt {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return gt, fmt.Errorf("geotiff: geotransform %v is not finite", gt)
		}
	}
	if gt[1]*gt[5]-gt[2]*gt[4] == 0 {
		return gt, fmt.Errorf("geotiff: geotransform %v is degenerate", gt)
	}
	if pixelIsPoint {
		gt[0] -= 0.5*gt[1] + 0.5*gt[2]
		gt[3] -= 0.5*gt[4] + 0.5*gt[5]
	}
	return gt, nil
}
