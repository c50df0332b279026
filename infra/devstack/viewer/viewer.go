// Package viewer is the local stack's pages: a map page, a small slippy map
// written in plain JavaScript (no library, nothing fetched from the
// internet) that pans and zooms a tileset through the tile function,
// fetches every tile with fetch() so it can show which tier answered (the
// X-Cache header), lists the catalog and shows the function's
// /_tilesieve/health; and, under AssetsPrefix, a MapLibre page (StylePage)
// and an IIIF image page (IIIFPage) over vendored builds of MapLibre GL JS
// and OpenSeadragon.
//
// The map page records its progress on <body> for tests and curious users:
// data-requested, data-loaded, data-failed, data-pending, data-aborted and
// data-tiers (a JSON count per X-Cache value), data-covered (visible tiles
// that a panel overlaps: the panels sit beside the map, so 0); each failure
// is also listed in #failures. Opened as /?tileset=NAME, it lists the
// catalog and draws that tileset at once, and records its name
// (data-tileset) and the catalog's tilesets and images (data-tilesets,
// data-images).
package viewer

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:embed index.html
var page string

var tmpl = template.Must(template.New("index.html").Parse(page))

// Config is what the page shows.
type Config struct {
	Title string
	// Template is the tile URL path with {z}, {x} and {y}, e.g.
	// "/demo/{z}/{x}/{y}.png".
	Template string
	MinZoom  int
	MaxZoom  int
	Zoom     int      // the zoom level the page opens at
	Hints    []Hint   // shown in a collapsible "try it" box
	Actions  []Action // buttons that POST to the server, then refresh the tiles
	// Image is the IIIF id of an image the page links to in the IIIF
	// viewer (IIIFPageOf); "" for none.
	Image string
}

// Action is a button of the page: it POSTs to Path with Header set to "1"
// and refreshes the visible tiles; with Duration (seconds) it counts down
// and refreshes again when the effect is over.
type Action struct {
	Label    string
	Path     string
	Header   string
	Title    string
	Duration int
}

// Hint is one command the page suggests.
type Hint struct {
	Label   string
	Command string
}

// ImagePage is the path of the IIIF page of Config.Image.
func (c Config) ImagePage() string { return IIIFPageOf(c.Image) }

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []string
	if !strings.HasPrefix(c.Template, "/") || !strings.Contains(c.Template, "{z}") ||
		!strings.Contains(c.Template, "{x}") || !strings.Contains(c.Template, "{y}") {
		errs = append(errs, fmt.Sprintf("template %q: want a path with {z}, {x} and {y}", c.Template))
	}
	for _, a := range c.Actions {
		if !strings.HasPrefix(a.Path, "/") || a.Label == "" {
			errs = append(errs, fmt.Sprintf("action %q at %q: want a label and a path", a.Label, a.Path))
		}
	}
	if c.MinZoom < 0 || c.MaxZoom < c.MinZoom || c.MaxZoom > 30 || c.Zoom < c.MinZoom || c.Zoom > c.MaxZoom {
		errs = append(errs, fmt.Sprintf("zoom %d in %d-%d: want 0 ≤ min ≤ zoom ≤ max ≤ 30", c.Zoom, c.MinZoom, c.MaxZoom))
	}
	if len(errs) > 0 {
		return fmt.Errorf("viewer: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Handler serves the page.
func Handler(cfg Config) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Title == "" {
		cfg.Title = "tilesieve"
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, cfg); err != nil {
		return nil, fmt.Errorf("viewer: render: %w", err)
	}
	body := buf.Bytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		// Everything the page needs is inline or same-origin.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(body))
	}), nil
}

// readOnly reports whether r is a GET or HEAD, and answers 405 when not.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// Mount serves page at exactly "/", the MapLibre and IIIF pages under
// AssetsPrefix (Assets), and everything else with tiles, so the page
// shadows no tile (no tile key is empty) and the other pages only keys
// under _viewer/.
func Mount(page, tiles http.Handler) http.Handler {
	assets := Assets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			page.ServeHTTP(w, r)
		case strings.HasPrefix(r.URL.Path, AssetsPrefix):
			assets.ServeHTTP(w, r)
		default:
			tiles.ServeHTTP(w, r)
		}
	})
}

// AssetsPrefix is where Mount serves the MapLibre page (StylePage), the
// IIIF page (IIIFPage) and the builds of MapLibre GL JS and OpenSeadragon
// they load.
const AssetsPrefix = "/_viewer/"

// StylePage is the path of the MapLibre page: StylePage+"?style=/NAME/style.json"
// renders that style with MapLibre GL JS, StylePage+"?tilejson=/NAME.json"
// the raster tileset of that TileJSON (an elevation model's as hillshade
// and terrain: MapLibre's raster-dem source with the TileJSON's encoding).
// It records on <body> its state (data-state: loading, idle or error), its
// errors (data-errors) and the URLs MapLibre asked for by resource type
// (data-requests: Style, Source, Tile, SpriteJSON, SpriteImage, Glyphs).
const StylePage = AssetsPrefix + "style.html"

// IIIFPage is the path of the IIIF page: IIIFPage+"?id=ID" opens the image
// ID served by this host (its IIIF Image API 3.0 info.json),
// IIIFPage+"?info=URL" any info.json, in OpenSeadragon, each tile labelled
// with the tier that answered it. It records on <body> its state
// (data-state: loading, idle once the view is still and no tile is being
// fetched, or error),
// the tiles loaded and failed (data-loaded, data-failed), the count per
// X-Cache value (data-tiers), its errors (data-errors) and the first tile
// URLs it asked for (data-urls).
const IIIFPage = AssetsPrefix + "iiif.html"

// IIIFPageOf is the path of the IIIF page of the image id.
func IIIFPageOf(id string) string { return IIIFPage + "?id=" + url.QueryEscape(id) }

var (
	//go:embed style.html
	stylePage []byte
	//go:embed iiif.html
	iiifPage []byte
)

// The MapLibre GL JS release the MapLibre page runs (maplibre/VERSION) and
// the OpenSeadragon release the IIIF page runs (openseadragon/VERSION),
// vendored gzip-compressed so the pages need nothing from the internet.
var (
	//go:embed maplibre/maplibre-gl.js.gz
	maplibreJS []byte
	//go:embed maplibre/maplibre-gl.css.gz
	maplibreCSS []byte
	//go:embed openseadragon/openseadragon.min.js.gz
	openseadragonJS []byte
)

// pageCSP is the Content-Security-Policy of the MapLibre and IIIF pages:
// MapLibre runs its workers from blob: URLs, OpenSeadragon shows tiles it
// fetched through blob: URLs; everything else is same-origin (a style's
// URLs name this host once rewritten).
const pageCSP = "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; worker-src blob:; child-src blob:; connect-src 'self'"

// Assets serves the MapLibre and IIIF pages under AssetsPrefix.
func Assets() http.Handler {
	files := map[string]struct {
		body        []byte
		contentType string
		gzipped     bool
	}{
		StylePage:                             {stylePage, "text/html; charset=utf-8", false},
		IIIFPage:                              {iiifPage, "text/html; charset=utf-8", false},
		AssetsPrefix + "maplibre-gl.js":       {maplibreJS, "text/javascript; charset=utf-8", true},
		AssetsPrefix + "maplibre-gl.css":      {maplibreCSS, "text/css; charset=utf-8", true},
		AssetsPrefix + "openseadragon.min.js": {openseadragonJS, "text/javascript; charset=utf-8", true},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if !readOnly(w, r) {
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == StylePage || r.URL.Path == IIIFPage {
			h.Set("Content-Security-Policy", pageCSP)
		}
		body := f.body
		if f.gzipped {
			h.Add("Vary", "Accept-Encoding")
			if acceptsGzip(r.Header.Get("Accept-Encoding")) {
				h.Set("Content-Encoding", "gzip")
			} else {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err == nil {
					body, err = io.ReadAll(zr)
				}
				if err != nil {
					http.Error(w, "viewer: "+err.Error(), http.StatusInternalServerError)
					return
				}
			}
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

// acceptsGzip reports whether an Accept-Encoding value names gzip (without
// q=0).
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
