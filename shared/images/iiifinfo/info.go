// Package iiifinfo writes what an IIIF image service says about one image:
// its image information document (info.json) in versions 3.0 and 2.1, a
// one-image Presentation 3.0 manifest, and the Content-Type and Link header
// values the HTTP layer sends with them. Documents are compact JSON with
// their keys in a fixed order, so equal inputs give equal bytes.
package iiifinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// Contexts and profiles of the versions served.
const (
	ContextV3   = "http://iiif.io/api/image/3/context.json"
	ContextV2   = "http://iiif.io/api/image/2/context.json"
	ProfileV3   = "http://iiif.io/api/image/3/level2.json"
	ProfileV2   = "http://iiif.io/api/image/2/level2.json"
	protocolURI = "http://iiif.io/api/image"
)

// InfoOptions are what info.json says about the HTTP layer serving it.
type InfoOptions struct {
	// LinkHeaders is true when image answers carry the canonical and profile
	// Link headers (see LinkCanonical and LinkProfile): info.json then
	// advertises canonicalLinkHeader and profileLinkHeader.
	LinkHeaders bool
}

type sizeJSON struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

type tilesJSON struct {
	Width        int     `json:"width"`
	Height       int     `json:"height"`
	ScaleFactors []int64 `json:"scaleFactors"`
}

type infoV3 struct {
	Context        string      `json:"@context"`
	ID             string      `json:"id"`
	Type           string      `json:"type"`
	Protocol       string      `json:"protocol"`
	Profile        string      `json:"profile"`
	Width          int64       `json:"width"`
	Height         int64       `json:"height"`
	MaxWidth       int64       `json:"maxWidth"`
	MaxHeight      int64       `json:"maxHeight"`
	MaxArea        int64       `json:"maxArea"`
	Sizes          []sizeJSON  `json:"sizes,omitempty"`
	Tiles          []tilesJSON `json:"tiles,omitempty"`
	ExtraQualities []string    `json:"extraQualities,omitempty"`
	ExtraFeatures  []string    `json:"extraFeatures,omitempty"`
}

type infoV2 struct {
	Context  string      `json:"@context"`
	ID       string      `json:"@id"`
	Protocol string      `json:"protocol"`
	Width    int64       `json:"width"`
	Height   int64       `json:"height"`
	Sizes    []sizeJSON  `json:"sizes,omitempty"`
	Tiles    []tilesJSON `json:"tiles,omitempty"`
	Profile  [2]any      `json:"profile"`
}

type profileV2 struct {
	Qualities []string `json:"qualities,omitempty"`
	Supports  []string `json:"supports,omitempty"`
	MaxWidth  int64    `json:"maxWidth"`
	MaxHeight int64    `json:"maxHeight"`
	MaxArea   int64    `json:"maxArea"`
}

// Info is the image information document (info.json) of img for version v,
// served at id (the image service's base URI: scheme, host, prefix and
// identifier, without a trailing slash). The output is compact JSON with its
// keys in a fixed order, so equal inputs give equal bytes.
//
// It lists only what the level 2 profile does not already promise: in 3.0
// extraQualities (color, gray and bitonal: the profile names only default)
// and extraFeatures (mirroring, sizeUpscaling, and the Link headers when
// opt says so); in 2.1 the profile object's qualities (color, gray) and
// supports (mirroring, regionSquare, sizeAboveFull, the Link headers).
// A gray image does not list color, as 3.0 section 4.4 asks.
func Info(v iiif.Version, id string, img iiif.Image, lim iiif.Limits, opt InfoOptions) ([]byte, error) {
	if err := errors.Join(img.Validate(), lim.Validate()); err != nil {
		return nil, err
	}
	if id == "" || strings.HasSuffix(id, "/") {
		return nil, fmt.Errorf("iiifinfo: info.json id %q is empty or ends with a slash", id)
	}
	var doc any
	switch v {
	case iiif.V3:
		features := []string{"mirroring", "sizeUpscaling"}
		if opt.LinkHeaders {
			features = append(features, "canonicalLinkHeader", "profileLinkHeader")
		}
		slices.Sort(features)
		qualities := []string{"color", "gray", "bitonal"}
		if img.Gray {
			qualities = qualities[1:]
		}
		doc = infoV3{
			Context: ContextV3, ID: id, Type: "ImageService3", Protocol: protocolURI, Profile: "level2",
			Width: int64(img.Levels[0].Width), Height: int64(img.Levels[0].Height),
			MaxWidth: lim.MaxWidth, MaxHeight: lim.MaxHeight, MaxArea: lim.MaxArea,
			Sizes: sizes(img, lim), Tiles: tiles(img, lim),
			ExtraQualities: qualities, ExtraFeatures: features,
		}
	case iiif.V2:
		supports := []string{"mirroring", "regionSquare", "sizeAboveFull"}
		if opt.LinkHeaders {
			supports = append(supports, "canonicalLinkHeader", "profileLinkHeader")
		}
		slices.Sort(supports)
		qualities := []string{"color", "gray"}
		if img.Gray {
			qualities = qualities[1:]
		}
		doc = infoV2{
			Context: ContextV2, ID: id, Protocol: protocolURI,
			Width: int64(img.Levels[0].Width), Height: int64(img.Levels[0].Height),
			Sizes: sizes(img, lim), Tiles: tiles(img, lim),
			Profile: [2]any{ProfileV2, profileV2{
				Qualities: qualities, Supports: supports,
				MaxWidth: lim.MaxWidth, MaxHeight: lim.MaxHeight, MaxArea: lim.MaxArea,
			}},
		}
	default:
		return nil, fmt.Errorf("iiifinfo: unknown version %d", v)
	}
	return marshal(doc)
}

// marshal is compact JSON without HTML escaping (ids keep their "&").
func marshal(doc any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("iiifinfo: encoding a document: %w", err)
	}
	return b.Bytes(), nil
}

// sizes lists the sizes of img's levels within lim, smallest first. Viewers
// take the level sizes from here (OpenSeadragon when they are one per scale
// factor), so tile requests name the levels as they are stored.
func sizes(img iiif.Image, lim iiif.Limits) []sizeJSON {
	var out []sizeJSON
	for l := len(img.Levels) - 1; l >= 0; l-- {
		lv := img.Levels[l]
		w, h := int64(lv.Width), int64(lv.Height)
		if w > lim.MaxWidth || h > lim.MaxHeight || w*h > lim.MaxArea {
			continue
		}
		if n := len(out); n > 0 && out[n-1] == (sizeJSON{lv.Width, lv.Height}) {
			continue
		}
		out = append(out, sizeJSON{lv.Width, lv.Height})
	}
	return out
}

// tiles lists the halving levels as tiles entries, one per tile size, each
// with its scale factors ascending. A factor appears once (the first level
// having it), and tiles beyond lim are left out.
func tiles(img iiif.Image, lim iiif.Limits) []tilesJSON {
	var out []tilesJSON
	seen := map[int64]bool{}
	for l, lv := range img.Levels {
		s, ok := img.ScaleFactor(l)
		tw, th := int64(lv.TileWidth), int64(lv.TileHeight)
		if !ok || seen[s] || tw > lim.MaxWidth || th > lim.MaxHeight || tw*th > lim.MaxArea {
			continue
		}
		seen[s] = true
		i := slices.IndexFunc(out, func(t tilesJSON) bool { return t.Width == lv.TileWidth && t.Height == lv.TileHeight })
		if i < 0 {
			out = append(out, tilesJSON{Width: lv.TileWidth, Height: lv.TileHeight})
			i = len(out) - 1
		}
		out[i].ScaleFactors = append(out[i].ScaleFactors, s)
	}
	for _, t := range out {
		slices.Sort(t.ScaleFactors)
	}
	return out
}
