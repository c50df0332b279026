package iiif

import (
	"net/url"
	"strings"
)

// RouteKind is what an IIIF path asks for.
type RouteKind uint8

// The kinds of IIIF paths.
const (
	RouteBase     RouteKind = iota + 1 // /iiif/3/{id}: redirected to its info.json
	RouteInfo                          // /iiif/3/{id}/info.json
	RouteManifest                      // /iiif/3/{id}/manifest.json: a Presentation 3.0 manifest of the image
	RouteImage                         // /iiif/3/{id}/{region}/{size}/{rotation}/{quality}.{format}
)

// Route is an IIIF path: /iiif/{2|3}/{id}[/…], the id one path segment
// with its slashes escaped (%2F), as the Image API requires.
type Route struct {
	Version Version
	ID      string // decoded: "maps/a" for maps%2Fa
	Kind    RouteKind
	// Params are region, size, rotation and quality.format of RouteImage.
	Params [4]string
}

// maxIDBytes bounds an id, decoded.
const maxIDBytes = 1024

// ParsePath reads an escaped request path as an IIIF route. ok is false for
// a path outside /iiif/2/ and /iiif/3/ (every path under them is an IIIF
// route, so they are reserved); err is a 400 for one under them that names
// no image request (a bad escape, an empty or too long id, extra
// segments).
func ParsePath(escaped string) (r Route, ok bool, err error) {
	rest, found := strings.CutPrefix(escaped, "/iiif/3/")
	r.Version = V3
	if !found {
		if rest, found = strings.CutPrefix(escaped, "/iiif/2/"); !found {
			return Route{}, false, nil
		}
		r.Version = V2
	}
	segs := strings.Split(rest, "/")
	id, err := url.PathUnescape(segs[0])
	if err != nil || id == "" || len(id) > maxIDBytes || strings.ContainsAny(id, "\x00\r\n") {
		return Route{}, true, badRequest("the image id %q is not an escaped path segment", segs[0])
	}
	r.ID = id
	switch {
	case len(segs) == 1:
		r.Kind = RouteBase
	case len(segs) == 2 && segs[1] == "info.json":
		r.Kind = RouteInfo
	case len(segs) == 2 && segs[1] == "manifest.json" && r.Version == V3:
		r.Kind = RouteManifest
	case len(segs) == 5:
		r.Kind = RouteImage
		for i, seg := range segs[1:] {
			// Browsers escape what they like (a size's ^ as %5E).
			if r.Params[i], err = url.PathUnescape(seg); err != nil {
				return Route{}, true, badRequest("%q is not an escaped path segment", seg)
			}
		}
	default:
		return Route{}, true, notFound("no such IIIF resource: want {id}/info.json or {id}/{region}/{size}/{rotation}/{quality}.{format}")
	}
	return r, true, nil
}

// Dir is the key directory of the route's image at its version:
// "iiif/3/maps%2Fa/". Every answer about the image at that version is kept
// under it, so one purge of it drops them all.
func (r Route) Dir() string { return "iiif/" + r.Version.String() + "/" + url.PathEscape(r.ID) + "/" }

// ParseKey reads a key under a route's Dir back into the route: the
// inverse of Dir and the canonical answer names. ok is false for any other
// key.
func ParseKey(key string) (r Route, ok bool) {
	r, ok, err := ParsePath("/" + key)
	return r, ok && err == nil && r.Kind != RouteBase
}
