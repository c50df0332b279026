package tileserver

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/tilesieve/tilesieve/shared/internal/httpurl"
)

// corsPolicy is CORS_ALLOW_ORIGINS: "*" (any origin), "none", or a list of
// origins that are reflected, with Vary: Origin so a CDN keeps them apart.
// The admin API never answers cross-origin.
type corsPolicy struct {
	any     bool
	reflect bool
	origins map[string]bool
}

func parseCORS(v string) (corsPolicy, error) {
	v = strings.TrimSpace(v)
	switch v {
	case "", "*":
		return corsPolicy{any: true}, nil
	case "none":
		return corsPolicy{}, nil
	}
	p := corsPolicy{reflect: true, origins: map[string]bool{}}
	for o := range strings.SplitSeq(v, ",") {
		o = strings.TrimSpace(o)
		// An origin is scheme://host[:port]: nothing after the host.
		if u, ok := httpurl.Parse(o); !ok || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
			return corsPolicy{}, fmt.Errorf("tileserver: CORS origin %q: want scheme://host[:port], or * or none", o)
		}
		p.origins[o] = true
	}
	return p, nil
}

// corsFields adds the CORS fields of a tile answer.
func (s *Server) corsFields(req *Request, resp *Response) {
	switch {
	case s.cors.any:
		resp.set("Access-Control-Allow-Origin", allowAny)
		resp.set("Access-Control-Expose-Headers", exposeHeaders)
	case s.cors.reflect:
		if o := req.get(HdrOrigin); s.cors.origins[o] {
			resp.origin = o
			resp.setString("Access-Control-Allow-Origin", o)
			resp.set("Access-Control-Expose-Headers", exposeHeaders)
		}
	}
}

// answerPreflight answers OPTIONS on a tile path: a CORS preflight when
// CORS is on, else 405.
func (s *Server) answerPreflight(req *Request, resp *Response) {
	if !s.cors.any && !s.cors.reflect {
		resp.set("Allow", s.allow)
		s.answerPlain(req, resp, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if s.cors.reflect {
		resp.set("Vary", varyOrigin)
	}
	s.corsFields(req, resp)
	resp.set("Allow", s.allow)
	resp.set("Access-Control-Allow-Methods", allowMethods)
	if h := req.get(HdrAccessControlRequestHeaders); h != "" && tokenList(h) {
		resp.setString("Access-Control-Allow-Headers", h)
	}
	resp.set("Access-Control-Max-Age", preflightMaxAge)
	resp.set("Cache-Control", []string{"public, max-age=86400"})
	resp.Status = http.StatusNoContent
}

// tokenList reports whether v is a comma-separated list of header names.
func tokenList(v string) bool {
	if len(v) > 512 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c == ',' || c == ' ' || c == '-' || c == '_' || c == '.' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
