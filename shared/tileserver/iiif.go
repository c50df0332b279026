package tileserver

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/images/iiifinfo"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// serveIIIF answers an IIIF path (Deps.Images): the base URI redirected to
// its info.json; info.json and the manifest rendered for the answer's base
// URL, their media type negotiated; an image request under its canonical
// key, with the canonical and profile Link headers. Answers come through
// the tiers like tiles, with the same conditionals, ranges and CORS.
func (s *Server) serveIIIF(ctx context.Context, req *Request, resp *Response, r iiif.Route, perr error, now, start time.Time) {
	if perr != nil {
		s.answerIIIFError(req, resp, perr)
		return
	}
	if r.Kind == iiif.RouteBase {
		s.eng.Check(ctx, now, false)
		s.corsFields(req, resp)
		resp.setString("Location", s.baseURL(req)+"/"+r.Dir()+"info.json")
		resp.set("Cache-Control", s.cacheControl)
		resp.Status = http.StatusSeeOther
		return
	}
	key, err := s.images.Key(ctx, r)
	if err != nil {
		s.eng.Check(ctx, now, false)
		s.answerIIIFError(req, resp, err)
		s.logRequest(ctx, req, "", resp.Status, 0, start)
		return
	}
	res, err := s.eng.Get(ctx, key, now)
	resp.lease = res.Lease
	t, src := res.Tile, res.Source
	switch {
	case err == nil && res.Stream != nil:
		s.answerStream(req, resp, key, t, res.Stream, start)
	case err == nil && r.Kind != iiif.RouteImage:
		doc := *s.docs.Render(key, s.baseURL(req), t)
		doc.ContentType, doc.Prepared = iiifinfo.ManifestMediaType(req.get(HdrAccept)), nil
		if r.Kind == iiif.RouteInfo {
			doc.ContentType = iiifinfo.InfoMediaType(r.Version, req.get(HdrAccept))
		}
		s.answerTile(req, resp, key, &doc, src, start)
		resp.addVary("Accept")
	case err == nil:
		s.answerTile(req, resp, key, t, src, start)
		if resp.Status < 300 {
			resp.setString("Link", iiifinfo.LinkCanonical(s.baseURL(req)+"/"+key)+", "+iiifinfo.LinkProfile(r.Version))
		}
	case errors.Is(err, tile.ErrNotFound):
		s.answerNotFound(req, resp, key, src)
	default:
		s.answerIIIFError(req, resp, err)
	}
	s.costField(resp, res.Cost)
	s.logRequest(ctx, req, key, resp.Status, src, start)
	s.record(key, src, resp, start)
}

// answerIIIFError answers a request the IIIF specification refuses with
// its status and message, an unknown image with 404, and any other error as
// a tile's.
func (s *Server) answerIIIFError(req *Request, resp *Response, err error) {
	var ie *iiif.Error
	switch {
	case errors.As(err, &ie):
		if ie.Status() < 500 {
			s.stats.badRequests.Add(1)
		}
		s.answerPlain(req, resp, ie.Status(), ie.Message())
	case errors.Is(err, tile.ErrNotFound):
		s.stats.notFound.Add(1)
		resp.set("Cache-Control", s.negativeCacheControl)
		s.answerPlain(req, resp, http.StatusNotFound, "no such image")
	default:
		s.answerError(req, resp, "", err)
	}
}

// addVary adds name to the answer's Vary field.
func (r *Response) addVary(name string) {
	for i, f := range r.Fields() {
		if f.Name == "Vary" {
			r.fields[i] = Field{Name: "Vary", Values: []string{f.Values[0] + ", " + name}}
			return
		}
	}
	r.setString("Vary", name)
}
