package tiff

import (
	"context"
	"fmt"
	"image"

	"github.com/tilesieve/tilesieve/shared/formats/tiff/internal/rangeio"
)

// Raw is the stored bytes of one tile, as ReadTiles returns them.
type Raw struct {
	Tile image.Point // column and row of the tile in its level
	// Data is the tile's stored (compressed) bytes; nil when Sparse.
	Data []byte
	// Sparse is a tile with no bytes in the file (TileOffset and
	// TileByteCount 0): it decodes as nodata or transparent.
	Sparse bool
	// HasMask says the mask was asked for and the level has one; Mask is
	// then its tile's stored bytes, nil when that tile is sparse
	// (all transparent).
	HasMask bool
	Mask    []byte
}

// ReadOptions says how ReadTiles reads. A zero field takes its default.
type ReadOptions struct {
	// Mask reads each tile's mask tile too, when the level has a mask.
	Mask bool
	// MaxGap is the largest gap between two stored tiles that are read in
	// one range rather than two: 64 KiB. Reading a gap costs less than a
	// round trip to S3 up to a few hundred KiB.
	MaxGap int64
	// MaxSpan bounds the length of a read that merges several tiles: 4 MiB.
	// A single tile longer than it is read alone.
	MaxSpan int64
	// Parallel is the number of range reads in flight at once: 4.
	Parallel int
}

func (o ReadOptions) withDefaults() ReadOptions {
	if o.MaxGap <= 0 {
		o.MaxGap = 64 << 10
	}
	if o.MaxSpan <= 0 {
		o.MaxSpan = 4 << 20
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	return o
}

// ReadTiles reads the stored bytes of tiles of l (and of their mask tiles
// with o.Mask) through r, one Raw per tile in the order asked. Tiles whose
// stored bytes lie at most o.MaxGap apart are read in one range, up to
// o.MaxSpan; in a COG, where a level's tiles are stored row by row, a
// block of adjacent tiles costs one read per row of the block or fewer,
// and a tile with its mask one read. stats counts the reads made.
func (l *Level) ReadTiles(ctx context.Context, r RangeReader, tiles []image.Point, o ReadOptions) ([]Raw, ReadStats, error) {
	if !l.Tiled {
		return nil, ReadStats{}, fmt.Errorf("%w: %dx%d image stored in strips", ErrNotTiled, l.Width, l.Height)
	}
	o = o.withDefaults()
	if len(tiles) > l.opts.MaxTilesPerLevel {
		return nil, ReadStats{}, &LimitError{"tiles in one read", uint64(len(tiles)), uint64(l.opts.MaxTilesPerLevel)}
	}
	raws := make([]Raw, len(tiles))
	// A range's ID is twice its tile's index, plus one for a mask tile.
	var ranges []rangeio.Range
	for i, p := range tiles {
		if p.X < 0 || p.Y < 0 || p.X >= l.TilesAcross || p.Y >= l.TilesDown {
			return nil, ReadStats{}, fmt.Errorf("tiff: tile %v outside the level's %dx%d tiles", p, l.TilesAcross, l.TilesDown)
		}
		raws[i].Tile = p
		off, n, ok := l.TileRange(p.X, p.Y)
		raws[i].Sparse = !ok
		if ok {
			ranges = append(ranges, rangeio.Range{Off: off, N: n, ID: 2 * i})
		}
		if o.Mask && l.Mask != nil {
			raws[i].HasMask = true
			if off, n, ok := l.Mask.TileRange(p.X, p.Y); ok {
				ranges = append(ranges, rangeio.Range{Off: off, N: n, ID: 2*i + 1})
			}
		}
	}
	for _, rg := range ranges {
		if rg.N > l.opts.MaxStoredTileBytes {
			return nil, ReadStats{}, &LimitError{"stored tile bytes", uint64(rg.N), uint64(l.opts.MaxStoredTileBytes)}
		}
	}
	read := func(ctx context.Context, off, n int64) ([]byte, error) { return readExact(ctx, r, off, n) }
	got := func(rg rangeio.Range, b []byte) {
		if rg.ID%2 == 0 {
			raws[rg.ID/2].Data = b
		} else {
			raws[rg.ID/2].Mask = b
		}
	}
	count, bytes, err := rangeio.Do(ctx, rangeio.Plan(ranges, o.MaxGap, o.MaxSpan), o.Parallel, read, got)
	stats := ReadStats{Reads: count, Bytes: bytes}
	if err != nil {
		return nil, stats, fmt.Errorf("tiff: %w", err)
	}
	return raws, stats, nil
}
