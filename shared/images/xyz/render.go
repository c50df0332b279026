package xyz

import (
	"context"
	"errors"
	"fmt"
	"image"
	"sync"
	"sync/atomic"
)

// TileSource reads the decoded stored tiles of a raster.
type TileSource interface {
	// Tile returns stored tile (x, y) of a level. A sparse tile (never
	// written) is a zero Block, not an error.
	Tile(ctx context.Context, level, x, y int) (Block, error)
}

// TileSourceFunc adapts a function to TileSource.
type TileSourceFunc func(ctx context.Context, level, x, y int) (Block, error)

// Tile calls f.
func (f TileSourceFunc) Tile(ctx context.Context, level, x, y int) (Block, error) {
	return f(ctx, level, x, y)
}

// Block is one decoded stored tile. Its pixel Bounds().Min is the tile's
// top-left pixel; a block smaller than the tile (cut at the raster's edge)
// leaves the rest as no data.
type Block struct {
	Image image.Image // an 8-bit raster's pixels
	Float *FloatImage // a float raster's pixels
	Mask  *image.Alpha
}

// RenderImage resamples the XYZ tile a Plan describes from an 8-bit raster
// into a TileSize × TileSize image, transparent where there is no data. A
// Stored plan is decoded as it is. An Empty plan, or a tile with no data
// pixel, is ErrNoData.
func (t *Tileset) RenderImage(ctx context.Context, src TileSource, p Plan) (*image.NRGBA, error) {
	if t.raster.Float {
		return nil, errors.New("xyz: a float raster renders with RenderFloat")
	}
	j, tiles, err := t.jobFor(p)
	if err != nil {
		return nil, err
	}
	m := newMosaic8(j.src)
	defer m.release()
	if err := t.fetch(ctx, src, j.level, tiles, func(ti TileIndex, b Block) error {
		return m.put(t, j.level, ti, b)
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := image.NewNRGBA(image.Rect(0, 0, t.tileSize, t.tileSize))
	if !j.sample8(m, out) {
		return nil, fmt.Errorf("%w: %d/%d/%d", ErrNoData, p.Z, p.X, p.Y)
	}
	return out, nil
}

// RenderFloat is RenderImage for a float raster (a DEM): no data is NaN.
func (t *Tileset) RenderFloat(ctx context.Context, src TileSource, p Plan) (*FloatImage, error) {
	if !t.raster.Float {
		return nil, errors.New("xyz: an 8-bit raster renders with RenderImage")
	}
	j, tiles, err := t.jobFor(p)
	if err != nil {
		return nil, err
	}
	m := newMosaicF(j.src)
	defer m.release()
	if err := t.fetch(ctx, src, j.level, tiles, func(ti TileIndex, b Block) error {
		return m.put(t, j.level, ti, b)
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := NewFloatImage(image.Rect(0, 0, t.tileSize, t.tileSize))
	if !j.sampleF(m, out) {
		return nil, fmt.Errorf("%w: %d/%d/%d", ErrNoData, p.Z, p.X, p.Y)
	}
	return out, nil
}

// jobFor returns the job of a plan made by this Tileset: a Stored plan is
// resampled at its own pixel positions, which copies the tile.
func (t *Tileset) jobFor(p Plan) (*job, []TileIndex, error) {
	switch p.Kind {
	case Empty:
		return nil, nil, fmt.Errorf("%w: %d/%d/%d", ErrNoData, p.Z, p.X, p.Y)
	case Resample:
		if p.job == nil || p.job.ts != t {
			return nil, nil, errors.New("xyz: the plan was not made by this tileset")
		}
		return p.job, p.Tiles, nil
	case Stored:
		if z, ok := t.Aligned(p.Level); !ok || z != p.Z {
			return nil, nil, errors.New("xyz: the plan was not made by this tileset")
		}
		full := image.Rect(0, 0, t.tileSize, t.tileSize)
		j, _, err := t.newJob(p.Z, p.X, p.Y, p.Level, full)
		if err != nil {
			return nil, nil, err
		}
		if j == nil {
			return nil, nil, fmt.Errorf("%w: %d/%d/%d", ErrNoData, p.Z, p.X, p.Y)
		}
		// Only the stored tile: its neighbours' pixels weigh nothing here.
		g := &t.levels[p.Level]
		x0, y0 := p.Stored.X*g.TileWidth, p.Stored.Y*g.TileHeight
		j.src = image.Rect(x0, y0, min(x0+g.TileWidth, g.Width), min(y0+g.TileHeight, g.Height))
		return j, []TileIndex{p.Stored}, nil
	}
	return nil, nil, fmt.Errorf("xyz: unknown plan kind %v", p.Kind)
}

// fetch reads tiles through src, at most Config.Fetchers at once, and hands
// each to put (which may run concurrently for different tiles). The first
// error cancels the rest.
func (t *Tileset) fetch(ctx context.Context, src TileSource, level int, tiles []TileIndex,
	put func(TileIndex, Block) error) error {
	if len(tiles) == 1 {
		b, err := src.Tile(ctx, level, tiles[0].X, tiles[0].Y)
		if err != nil {
			return fmt.Errorf("xyz: reading tile %d/%d of level %d: %w", tiles[0].X, tiles[0].Y, level, err)
		}
		return put(tiles[0], b)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for range min(t.cfg.Fetchers, len(tiles)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(tiles)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				ti := tiles[i]
				b, err := src.Tile(ctx, level, ti.X, ti.Y)
				if err == nil {
					err = put(ti, b)
				} else {
					err = fmt.Errorf("xyz: reading tile %d/%d of level %d: %w", ti.X, ti.Y, level, err)
				}
				if err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}
