// Package floor is the baseline every tile server is measured against: a
// minimal net/http handler that writes preloaded bytes from a map with the
// same headers the tile server sends with its default settings
// (Content-Type, ETag, Last-Modified, Cache-Control, X-Cache, Server-Timing,
// Accept-Ranges, Content-Length, and the two CORS fields of
// CORS_ALLOW_ORIGINS=*). Nothing can serve a tile from memory in Go with
// much less work.
package floor

import (
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/tilesieve/tilesieve/bench/e2e/tileset"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

type entry struct {
	body   []byte
	header http.Header
}

// Handler serves a fixed map of tiles.
type Handler struct {
	tiles map[string]entry
}

// New preloads tiles (key → body; served at "/"+key) with their headers.
func New(tiles map[string][]byte) *Handler {
	lm := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC).Format(http.TimeFormat)
	h := &Handler{tiles: make(map[string]entry, len(tiles))}
	for k, b := range tiles {
		sum := md5.Sum(b)
		h.tiles["/"+k] = entry{body: b, header: http.Header{
			"Content-Type":   {tileset.ContentType(k)},
			"Etag":           {`"` + hex.EncodeToString(sum[:]) + `"`},
			"Last-Modified":  {lm},
			"Cache-Control":  {config.DefaultCacheControl},
			"X-Cache":        {"HIT-MEMORY"},
			"Server-Timing":  {"memory;dur=0.001"},
			"Accept-Ranges":  {"bytes"},
			"Content-Length": {strconv.Itoa(len(b))},
			// What the tile server's default CORS policy adds to every tile.
			"Access-Control-Allow-Origin":   {"*"},
			"Access-Control-Expose-Headers": {tileserver.ExposeHeaders},
		}}
	}
	return h
}

// ServeHTTP writes the tile at the request's path, or 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, ok := h.tiles[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	wh := w.Header()
	for k, v := range e.header {
		wh[k] = v
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(e.body)
	}
}
