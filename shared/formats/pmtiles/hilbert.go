package pmtiles

import (
	"fmt"
	"math/bits"
)

// MaxZoom is the deepest zoom a tile id can address: the ids of zooms 0-31
// fill all but the top two bits of a uint64.
const MaxZoom = 31

// ZXY is a tile's zoom, column and row (XYZ scheme, y grows southwards).
type ZXY struct {
	Z    uint8
	X, Y uint32
}

func (t ZXY) String() string { return fmt.Sprintf("%d/%d/%d", t.Z, t.X, t.Y) }

// ID is ZXYToID(t.Z, t.X, t.Y).
func (t ZXY) ID() (uint64, error) { return ZXYToID(t.Z, t.X, t.Y) }

// zoomBase is the id of tile z/0/0: the number of tiles in zooms 0..z-1,
// (4^z - 1) / 3.
func zoomBase(z uint8) uint64 { return ((uint64(1) << (2 * uint(z))) - 1) / 3 }

// maxID is one past the last valid id (that of zoom MaxZoom+1's first tile).
var maxID = zoomBase(MaxZoom) + uint64(1)<<(2*MaxZoom)

// ZXYToID is the tile's position on the PMTiles sequence of Hilbert curves:
// all tiles of zoom 0, then of zoom 1 in Hilbert order, and so on.
func ZXYToID(z uint8, x, y uint32) (uint64, error) {
	if z > MaxZoom {
		return 0, fmt.Errorf("pmtiles: zoom %d above %d", z, MaxZoom)
	}
	n := uint64(1) << z
	if uint64(x) >= n || uint64(y) >= n {
		return 0, fmt.Errorf("pmtiles: tile %d/%d/%d outside its zoom's %d×%d grid", z, x, y, n, n)
	}
	var d uint64
	xx, yy := uint64(x), uint64(y)
	for s := n / 2; s > 0; s /= 2 {
		var rx, ry uint64
		if xx&s != 0 {
			rx = 1
		}
		if yy&s != 0 {
			ry = 1
		}
		d += s * s * ((3 * rx) ^ ry)
		xx, yy = rotate(s, xx&(s-1), yy&(s-1), rx, ry)
	}
	return zoomBase(z) + d, nil
}

// IDToZXY inverts ZXYToID.
func IDToZXY(id uint64) (ZXY, error) {
	if id >= maxID {
		return ZXY{}, fmt.Errorf("pmtiles: tile id %d beyond zoom %d", id, MaxZoom)
	}
	// zoomBase(z) <= id  <=>  4^z <= 3*id+1 (no overflow: id < 2^63).
	z := uint8((bits.Len64(3*id+1) - 1) / 2)
	t := id - zoomBase(z)
	var x, y uint64
	for s := uint64(1); s < uint64(1)<<z; s *= 2 {
		rx := 1 & (t / 2)
		ry := 1 & (t ^ rx)
		x, y = rotate(s, x, y, rx, ry)
		x += s * rx
		y += s * ry
		t /= 4
	}
	return ZXY{Z: z, X: uint32(x), Y: uint32(y)}, nil
}

// rotate turns a quadrant of side s so the curve inside it is oriented like
// the curve of the whole square.
func rotate(s, x, y, rx, ry uint64) (uint64, uint64) {
	if ry == 0 {
		if rx == 1 {
			x = s - 1 - x
			y = s - 1 - y
		}
		x, y = y, x
	}
	return x, y
}
