package pixel

import (
	"context"
	"fmt"
	"image"
	"image/draw"
	"sync"
	"sync/atomic"
)

// assemble makes the source image, with Source's top-left corner at (0, 0):
// the part of one tile when Source lies in one (no copy), else a canvas the
// covered tiles are pasted into. Tiles are decoded concurrently, each once.
// When Area passes Source's far edges, the canvas has one more column and
// row repeating the last ones, for the scale step to sample.
func assemble(ctx context.Context, p *Pipeline, job *Job, f *frame) error {
	ts := job.TileSize
	tiles := image.Rect(job.Source.Min.X/ts.X, job.Source.Min.Y/ts.Y,
		(job.Source.Max.X+ts.X-1)/ts.X, (job.Source.Max.Y+ts.Y-1)/ts.Y)
	padX, padY := job.Area.X1 > float64(job.Source.Max.X), job.Area.Y1 > float64(job.Source.Max.Y)
	size := job.Source.Size()
	newCanvas := func() *image.RGBA {
		return image.NewRGBA(image.Rect(0, 0, size.X+b2i(padX), size.Y+b2i(padY)))
	}
	var canvas *image.RGBA
	if tiles.Dx() == 1 && tiles.Dy() == 1 {
		img, part, err := p.decode(ctx, job, tiles.Min)
		if err != nil {
			return err
		}
		sub, ok := img.(interface {
			SubImage(image.Rectangle) image.Image
		})
		if ok && !padX && !padY {
			f.img = sub.SubImage(part)
			return nil
		}
		canvas = newCanvas()
		draw.Draw(canvas, image.Rectangle{Max: size}, img, part.Min, draw.Src)
	} else {
		canvas = newCanvas()
		if err := p.pasteAll(ctx, job, tiles, canvas); err != nil {
			return err
		}
	}
	extendEdges(canvas, size, padX, padY)
	f.img = canvas
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// extendEdges copies column size.X-1 into column size.X and row size.Y-1
// into row size.Y, where the canvas has them.
func extendEdges(m *image.RGBA, size image.Point, padX, padY bool) {
	if padX {
		for y := range size.Y {
			i := m.PixOffset(size.X-1, y)
			copy(m.Pix[i+4:i+8], m.Pix[i:i+4])
		}
	}
	if padY {
		last := m.Pix[m.PixOffset(0, size.Y-1):][:4*m.Rect.Dx()]
		copy(m.Pix[m.PixOffset(0, size.Y):][:4*m.Rect.Dx()], last)
	}
}

// pasteAll decodes the tiles of range tiles and pastes each into canvas
// (whose origin is job.Source.Min), with as many workers as the decode
// bound allows. Tiles cover disjoint pixels, so pasting needs no lock.
func (p *Pipeline) pasteAll(ctx context.Context, job *Job, tiles image.Rectangle, canvas *image.RGBA) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := int64(tiles.Dx() * tiles.Dy())
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range min(n, int64(cap(p.sem))) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < n && ctx.Err() == nil; i = next.Add(1) - 1 {
				t := image.Pt(tiles.Min.X+int(i)%tiles.Dx(), tiles.Min.Y+int(i)/tiles.Dx())
				img, part, err := p.decode(ctx, job, t)
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				at := image.Pt(t.X*job.TileSize.X, t.Y*job.TileSize.Y).Add(part.Min.Sub(img.Bounds().Min))
				dst := image.Rectangle{Min: at, Max: at.Add(part.Size())}.Sub(job.Source.Min)
				draw.Draw(canvas, dst, img, part.Min, draw.Src)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pixel: %w", err)
	}
	return nil
}

// decode decodes tile t under the shared bound and returns it with the
// rectangle of its own pixels that lies in job.Source.
func (p *Pipeline) decode(ctx context.Context, job *Job, t image.Point) (image.Image, image.Rectangle, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, image.Rectangle{}, fmt.Errorf("pixel: %w", ctx.Err())
	}
	img, err := job.Tile(ctx, t.X, t.Y)
	<-p.sem
	if err != nil {
		return nil, image.Rectangle{}, fmt.Errorf("pixel: tile %d,%d: %w", t.X, t.Y, err)
	}
	if img == nil {
		return nil, image.Rectangle{}, fmt.Errorf("pixel: tile %d,%d is nil", t.X, t.Y)
	}
	origin := image.Pt(t.X*job.TileSize.X, t.Y*job.TileSize.Y)
	need := job.Source.Intersect(image.Rectangle{Min: origin, Max: origin.Add(job.TileSize)})
	part := need.Sub(origin).Add(img.Bounds().Min)
	if !part.In(img.Bounds()) {
		return nil, image.Rectangle{}, fmt.Errorf("pixel: tile %d,%d is %v, which does not hold %v of the level",
			t.X, t.Y, img.Bounds().Size(), need)
	}
	return img, part, nil
}
