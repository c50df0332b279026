package iiifinfo

import (
	"strconv"
	"strings"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
)

// Media types of the JSON documents.
const (
	mediaJSON      = "application/json"
	mediaJSONLD    = "application/ld+json"
	mediaJSONLDV3  = `application/ld+json;profile="` + ContextV3 + `"`
	mediaJSONLDV2  = `application/ld+json;profile="` + ContextV2 + `"`
	mediaJSONLDP3  = `application/ld+json;profile="` + ContextPresentation3 + `"`
	maxAcceptBytes = 4096
)

// InfoMediaType is the Content-Type of info.json for a request of version v
// with Accept header accept ("" when absent). Answers vary with Accept, so
// the HTTP layer adds "Vary: Accept".
//
// 3.0 (section 5.1): JSON-LD with the context as profile when there is no
// Accept header or the client accepts JSON-LD at least as much as JSON
// (wildcards count); application/json when it prefers JSON.
// 2.1 (section 5.1): JSON-LD only when the client names
// application/ld+json explicitly (at least as much as JSON), else
// application/json.
func InfoMediaType(v iiif.Version, accept string) string {
	if v == iiif.V2 {
		ld, js, _ := acceptQ(accept)
		if ld > 0 && ld >= js {
			return mediaJSONLDV2
		}
		return mediaJSON
	}
	if prefersJSON(accept) {
		return mediaJSON
	}
	return mediaJSONLDV3
}

// ManifestMediaType is the Content-Type of a manifest, with the same rules
// as InfoMediaType for 3.0 (Presentation 3.0 section 6.1).
func ManifestMediaType(accept string) string {
	if prefersJSON(accept) {
		return mediaJSON
	}
	return mediaJSONLDP3
}

// prefersJSON reports whether accept ranks application/json above JSON-LD.
func prefersJSON(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return false
	}
	ld, js, wild := acceptQ(accept)
	if ld < 0 {
		ld = wild
	}
	if js < 0 {
		js = wild
	}
	return js > 0 && js > ld
}

// acceptQ is the quality an Accept header gives JSON-LD and JSON by name,
// and the best it gives a wildcard that covers them; -1 where none is
// named. Only the header's first maxAcceptBytes are read.
func acceptQ(accept string) (ld, js, wildcard float64) {
	ld, js, wildcard = -1, -1, -1
	if len(accept) > maxAcceptBytes {
		accept = accept[:maxAcceptBytes]
	}
	for accept != "" {
		var part string
		part, accept, _ = strings.Cut(accept, ",")
		mt, params, _ := strings.Cut(part, ";")
		q := qValue(params)
		switch mt = strings.TrimSpace(mt); {
		case strings.EqualFold(mt, mediaJSONLD):
			ld = max(ld, q)
		case strings.EqualFold(mt, mediaJSON):
			js = max(js, q)
		case mt == "*/*" || strings.EqualFold(mt, "application/*"):
			wildcard = max(wildcard, q)
		}
	}
	return ld, js, wildcard
}

// qValue is the q parameter among params ("q=0.5;x=y"), 1 when absent or
// malformed.
func qValue(params string) float64 {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, _ := strings.Cut(p, "=")
		if strings.EqualFold(strings.TrimSpace(k), "q") {
			if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && q >= 0 && q <= 1 {
				return q
			}
		}
	}
	return 1
}

// ProfileURI is the level 2 profile document of version v.
func ProfileURI(v iiif.Version) string {
	if v == iiif.V2 {
		return ProfileV2
	}
	return ProfileV3
}

// LinkProfile is the value of a Link header naming the level 2 profile of
// version v, for image and info.json answers (section 6 of each version).
func LinkProfile(v iiif.Version) string { return "<" + ProfileURI(v) + `>;rel="profile"` }

// LinkCanonical is the value of a Link header naming uri, an image
// request's canonical URI (its service id, "/" and Resolved.Canonical).
func LinkCanonical(uri string) string { return "<" + uri + `>;rel="canonical"` }
