package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/tilesieve/tilesieve/shared/docs"
)

// serveCatalog answers GET /_tilesieve/catalog: the tilesets under
// TILES_PREFIX (docs.Docs.Tilesets), each with its TileJSON URL, and the
// images at its top level (docs.Docs.Images), each with its IIIF info.json
// and manifest URLs, all under the request's public base URL.
func (s *Handler) serveCatalog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		notAllowed(w, "GET, HEAD")
		return
	}
	if s.catalog == nil {
		plain(w, http.StatusNotFound, "no catalog: archives are off")
		return
	}
	entries, err := s.catalog(r.Context())
	var images []docs.ImageEntry
	if err == nil && s.images != nil {
		images, err = s.images(r.Context())
	}
	if err != nil {
		s.log.Warn("catalog not listed", "err", err)
		plain(w, http.StatusBadGateway, "catalog: origin error")
		return
	}
	base := s.baseURL(r)
	out := docs.Catalog{Tilesets: make([]docs.CatalogEntry, 0, len(entries)), Images: make([]docs.ImageEntry, 0, len(images))}
	for _, e := range entries {
		e.TileJSON = base + "/" + url.PathEscape(e.TileJSON)
		out.Tilesets = append(out.Tilesets, e)
	}
	for _, im := range images {
		// Escaped already: the id is one path segment of each.
		im.Info, im.Info2, im.Manifest = base+"/"+im.Info, base+"/"+im.Info2, base+"/"+im.Manifest
		out.Images = append(out.Images, im)
	}
	if s.publicCORS {
		w.Header().Set("Access-Control-Allow-Origin", "*")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(b.Bytes())
	}
}
