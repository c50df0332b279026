package iiif

import (
	"context"
	"errors"
	"fmt"
	"image"
	"net/http"

	"github.com/tilesieve/tilesieve/shared/images/pixel"
)

// Renderer makes answers from decoded tiles with a pixel.Pipeline.
type Renderer struct {
	pipe       *pixel.Pipeline
	maxDecoded int64
}

// NewRenderer makes a Renderer on pipe that refuses plans decoding more than
// maxDecodedPixels pixels.
func NewRenderer(pipe *pixel.Pipeline, maxDecodedPixels int64) (*Renderer, error) {
	if pipe == nil || maxDecodedPixels < 1 {
		return nil, fmt.Errorf("iiif: a renderer needs a pipeline and a positive decode bound, not %d", maxDecodedPixels)
	}
	return &Renderer{pipe: pipe, maxDecoded: maxDecodedPixels}, nil
}

// Render makes the answer to res, planned as plan, from img's tiles. A plan
// over the decode bound is refused before any decode with 501 (a valid
// request this image's levels cannot answer within the bound), and an
// encoded answer over the pipeline's byte bound with 501 too: the request
// is within the limits info.json advertises, the server cannot send it.
func (r *Renderer) Render(ctx context.Context, res Resolved, plan Plan, img Image, src TileSource) ([]byte, error) {
	if plan.DecodedPixels > r.maxDecoded {
		return nil, notImplemented("the region needs %d decoded pixels at the smallest sufficient level, over the limit of %d",
			plan.DecodedPixels, r.maxDecoded)
	}
	job := pixel.Job{
		Source:   plan.Source,
		Area:     pixel.Rect{X0: plan.area[0], Y0: plan.area[1], X1: plan.area[2], Y1: plan.area[3]},
		TileSize: image.Pt(plan.TileWidth, plan.TileHeight),
		Tile: func(ctx context.Context, col, row int) (image.Image, error) {
			return src.Tile(ctx, plan.Level, col, row)
		},
		Width:   res.Width,
		Height:  res.Height,
		Rotate:  res.Rotation,
		Mirror:  res.Mirror,
		Quality: pixel.Color,
		Format:  pixel.JPEG,
		Alpha:   img.HasAlpha,
	}
	switch res.Quality {
	case QualityGray:
		job.Quality = pixel.Gray
	case QualityBitonal:
		job.Quality = pixel.Bitonal
	}
	if res.Format == FormatPNG {
		job.Format = pixel.PNG
	}
	out, err := r.pipe.Run(ctx, job)
	var tooLarge *pixel.TooLargeError
	switch {
	case errors.As(err, &tooLarge) && tooLarge.What == "encoded answer":
		return nil, &Error{status: http.StatusNotImplemented, err: err,
			msg: fmt.Sprintf("the answer is over %d bytes: ask for a smaller size or for jpg", tooLarge.Limit)}
	case errors.As(err, &tooLarge):
		return nil, &Error{status: http.StatusNotImplemented, err: err,
			msg: fmt.Sprintf("the answer needs a %s of %d pixels, over the limit of %d", tooLarge.What, tooLarge.Size, tooLarge.Limit)}
	case err != nil:
		return nil, fmt.Errorf("iiif: rendering %s: %w", res.Canonical, err)
	}
	return out, nil
}
