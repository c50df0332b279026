package iiifinfo

import (
	"errors"
	"fmt"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// ContextPresentation3 is the context of a Presentation API 3.0 document.
const ContextPresentation3 = "http://iiif.io/api/presentation/3/context.json"

// ManifestOptions name a one-image manifest.
type ManifestOptions struct {
	// ID is the manifest's own URI; its canvas, annotation page and
	// annotation are named under it.
	ID string
	// Label is shown by viewers as the manifest's title.
	Label string
	// Service is the image service's id, as given to Info for version 3.
	Service string
}

type manifestJSON struct {
	Context string        `json:"@context"`
	ID      string        `json:"id"`
	Type    string        `json:"type"`
	Label   labelJSON     `json:"label"`
	Items   [1]canvasJSON `json:"items"`
}

type labelJSON struct {
	None [1]string `json:"none"`
}

type canvasJSON struct {
	ID     string      `json:"id"`
	Type   string      `json:"type"`
	Width  int64       `json:"width"`
	Height int64       `json:"height"`
	Items  [1]pageJSON `json:"items"`
}

type pageJSON struct {
	ID    string            `json:"id"`
	Type  string            `json:"type"`
	Items [1]annotationJSON `json:"items"`
}

type annotationJSON struct {
	ID         string   `json:"id"`
	Type       string   `json:"type"`
	Motivation string   `json:"motivation"`
	Body       bodyJSON `json:"body"`
	Target     string   `json:"target"`
}

type bodyJSON struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Format  string         `json:"format"`
	Width   int64          `json:"width"`
	Height  int64          `json:"height"`
	Service [1]serviceJSON `json:"service"`
}

type serviceJSON struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Profile string `json:"profile"`
}

// Manifest is a minimal Presentation API 3.0 manifest showing img: one
// Canvas of the full image's size, painted by one Image annotation whose
// body is the image at size max (full/max/0/default.jpg, its size within
// lim) and carries the level 2 ImageService3, so viewers such as Mirador
// deep-zoom through the service. Output is compact and deterministic.
func Manifest(opt ManifestOptions, img iiif.Image, lim iiif.Limits) ([]byte, error) {
	if err := errors.Join(img.Validate(), lim.Validate()); err != nil {
		return nil, err
	}
	if opt.ID == "" || opt.Service == "" {
		return nil, fmt.Errorf("iiifinfo: a manifest needs its id and its image service's id")
	}
	W, H := int64(img.Levels[0].Width), int64(img.Levels[0].Height)
	w, h := lim.MaxSize(W, H)
	canvas := opt.ID + "/canvas/1"
	return marshal(manifestJSON{
		Context: ContextPresentation3, ID: opt.ID, Type: "Manifest",
		Label: labelJSON{None: [1]string{opt.Label}},
		Items: [1]canvasJSON{{
			ID: canvas, Type: "Canvas", Width: W, Height: H,
			Items: [1]pageJSON{{
				ID: opt.ID + "/page/1", Type: "AnnotationPage",
				Items: [1]annotationJSON{{
					ID: opt.ID + "/annotation/1", Type: "Annotation", Motivation: "painting",
					Body: bodyJSON{
						ID: opt.Service + "/full/max/0/default.jpg", Type: "Image", Format: "image/jpeg",
						Width: w, Height: h,
						Service: [1]serviceJSON{{ID: opt.Service, Type: "ImageService3", Profile: "level2"}},
					},
					Target: canvas,
				}},
			}},
		}},
	})
}
