package tileserver

import (
	"net/http"

	"github.com/tilesieve/tilesieve/shared/tileserver/internal/httpspec"
)

// corsFields adds the CORS fields of a tile answer.
func (s *Server) corsFields(req *Request, resp *Response) {
	switch {
	case s.cors.Any:
		resp.set("Access-Control-Allow-Origin", allowAny)
		resp.set("Access-Control-Expose-Headers", exposeHeaders)
	case s.cors.Reflect:
		if o := req.get(HdrOrigin); s.cors.Origins[o] {
			resp.origin = o
			resp.setString("Access-Control-Allow-Origin", o)
			resp.set("Access-Control-Expose-Headers", exposeHeaders)
		}
	}
}

// answerPreflight answers OPTIONS on a tile path: a CORS preflight when
// CORS is on, else 405.
func (s *Server) answerPreflight(req *Request, resp *Response) {
	if !s.cors.Any && !s.cors.Reflect {
		resp.set("Allow", s.allow)
		s.answerPlain(req, resp, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if s.cors.Reflect {
		resp.set("Vary", varyOrigin)
	}
	s.corsFields(req, resp)
	resp.set("Allow", s.allow)
	resp.set("Access-Control-Allow-Methods", allowMethods)
	if h := req.get(HdrAccessControlRequestHeaders); h != "" && httpspec.TokenList(h) {
		resp.setString("Access-Control-Allow-Headers", h)
	}
	resp.set("Access-Control-Max-Age", preflightMaxAge)
	resp.set("Cache-Control", []string{"public, max-age=86400"})
	resp.Status = http.StatusNoContent
}
