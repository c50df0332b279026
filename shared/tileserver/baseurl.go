package tileserver

// CDNSecretHeader carries Config.CDNSecret on the requests the CDN sends to
// the origin (a CloudFront origin custom header, which replaces any value a
// viewer sent under that name).
const CDNSecretHeader = "X-Tilesieve-Cdn"

// baseURL is the public base URL of req (docs.Base.URL).
func (s *Server) baseURL(req *Request) string {
	return s.base.URL(req.get(HdrCDNSecret), req.get(HdrXForwardedHost), req.get(HdrHost))
}
