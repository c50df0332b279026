// Package tileserver is the HTTP contract of the tile origin, on top of the
// tier engine (shared/tiers): tile answers with conditional requests,
// ranges, content codings decoded for clients without them, X-Cache and
// Server-Timing, CORS and errors. It knows nothing of Lambda or of where
// tiles come from: the Lambda entry wraps it, `make run` and the tests serve
// it as it is, and functions/tiles/app assembles what it answers from.
//
// The engine decides where a tile comes from (memory, disk, S3) and what a
// purge removes; this package decides how it is answered. Answers prepares
// each tile's answer as the tile enters the memory tier (the engine's
// Prepare hook), so a memory hit formats nothing. A tile stored with a
// content coding is decoded for clients without it at most once per tile
// version, within MAX_TILE_BYTES: kept beside the tile in the memory tier
// through the engine (tiers.Engine.Derived, so a purge of the tile removes
// it), or decoded as it is sent when it is too large for it. The server is
// safe for concurrent use.
package tileserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/images/iiif"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tile"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/httpspec"
	"github.com/tilesieve/tilesieve/shared/tileserver/internal/variant"
)

// Config is how tiles are answered. shared/config builds it with the
// defaults of the variables; every field but Now and Extra is required.
type Config struct {
	CacheControl         string // tiles; its stale-if-error bounds serving stale copies
	NegativeCacheControl string // 404 and sparse answers
	MissingTile          string // "404", "204" or "empty"
	StaleCacheControl    string // a copy served stale because the origin failed; short, so a CDN does not keep it long
	CORSAllowOrigins     string // "*", "none", or origins to reflect; never on the admin API
	// PublicURL is the base URL answers that name their own URL (TileJSON,
	// the catalog, IIIF info.json ids) use; "" takes it from the request's
	// forwarded or own host.
	PublicURL string
	// CDNSecret is the value of CDNSecretHeader on requests that came
	// through the CDN; only those may name the host (X-Forwarded-Host) the
	// answers' URLs use. "" believes no forwarded host.
	CDNSecret string
	// MaxTileBytes (MAX_TILE_BYTES) also bounds a tile decoded for a client
	// without its coding; zero or negative: the decoder's own bounds only.
	MaxTileBytes int64
	// Extra, when set, builds what an adapter keeps beside each tile in
	// the memory tier (see ExtraFunc).
	Extra ExtraFunc
	Now   func() time.Time
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	switch c.MissingTile {
	case "404", "204", "empty":
	default:
		errs = append(errs, fmt.Errorf("tileserver: MissingTile %q: want 404, 204 or empty", c.MissingTile))
	}
	if c.CacheControl == "" || c.NegativeCacheControl == "" || c.StaleCacheControl == "" {
		errs = append(errs, errors.New("tileserver: CacheControl, NegativeCacheControl and StaleCacheControl are required"))
	}
	if _, err := httpspec.ParseCORS(c.CORSAllowOrigins); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Metrics records what the server answers; *obs.TileMetrics is one.
type Metrics interface {
	Request(tileset string, tier obs.Tier, bytes int64, elapsed time.Duration)
	MaybeFlush(now time.Time) error
}

// Deps are what the server answers from besides the engine. Docs is
// required.
type Deps struct {
	Docs *docs.Docs
	// Images turns IIIF requests (/iiif/3/…, /iiif/2/…) into the keys of
	// their answers; nil: those paths are tile paths like any other.
	Images  Images
	Metrics Metrics // nil records nothing
	Logger  *slog.Logger
}

// Images turns an IIIF request into the key of its answer in the tiers
// (*images.Service is one): its canonical form. An *iiif.Error is a request
// the specification refuses, with its status; tile.ErrNotFound an image
// that does not exist.
type Images interface {
	Key(ctx context.Context, r iiif.Route) (string, error)
}

// Server is the tile handler.
type Server struct {
	*Answers
	eng      *tiers.Engine
	docs     *docs.Docs // documents rendered for a base URL, glyph stacks
	images   Images     // nil: no IIIF routes
	log      *slog.Logger
	now      func() time.Time
	metrics  Metrics   // nil: none
	base     docs.Base // what a request's public base URL is chosen from
	variants *variant.Decoder
	stats    counters
}

// counters are the handler's own statistics; the engine keeps the tiers'.
type counters struct {
	requests, notFound, badRequests atomic.Int64
}

// Counters are the handler's own statistics.
type Counters struct {
	Requests, NotFound, BadRequests int64
}

// New builds the server over the engine eng, answering as ans prepares
// answers (the engine's Prepare hook must be ans.Prepare).
func New(ans *Answers, eng *tiers.Engine, d Deps) (*Server, error) {
	if ans == nil || eng == nil || d.Docs == nil {
		return nil, errors.New("tileserver: Answers, the engine and Docs are required")
	}
	s := &Server{
		Answers: ans, eng: eng, docs: d.Docs, images: d.Images, metrics: d.Metrics,
		log: defaults.Logger(d.Logger), now: defaults.Clock(ans.cfg.Now),
		base: docs.Base{PublicURL: ans.cfg.PublicURL, CDNSecret: ans.cfg.CDNSecret},
	}
	s.variants = variant.New(eng, ans.cfg.MaxTileBytes, s.log)
	return s, nil
}

// adminPrefix is the reserved path space of the health check and the admin
// API.
const adminPrefix = "/" + tile.ReservedPrefix

// Engine is the tier engine the server answers from.
func (s *Server) Engine() *tiers.Engine { return s.eng }

// Counters returns the handler's own counters.
func (s *Server) Counters() Counters {
	return Counters{Requests: s.stats.requests.Load(), NotFound: s.stats.notFound.Load(), BadRequests: s.stats.badRequests.Load()}
}

// Decodes is how many times a stored tile was decoded whole (or measured)
// for clients without its coding.
func (s *Server) Decodes() int64 { return s.variants.Decodes() }

// nowAt is the server's clock at real, a time just read from time.Now:
// real itself, unless Config.Now replaces the clock.
func (s *Server) nowAt(real time.Time) time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return real
}

// BaseURL is the public base URL of a net/http request (docs.Base.URL): the
// catalog's TileJSON URLs are under it.
func (s *Server) BaseURL(r *http.Request) string {
	var req Request
	HTTPRequest(r, &req)
	return s.baseURL(&req)
}

// Route is the handler of a whole instance: the reserved path space
// /_tilesieve/ (the health check and the admin API) is admin's, after the
// journal check a request that reads no tile makes; every other path is
// srv's. It is where that space is routed for net/http; the function-URL
// adapters route it by Response.Admin and hand it here.
func Route(srv *Server, admin http.Handler) http.Handler { return routed{srv, admin} }

type routed struct {
	srv   *Server
	admin http.Handler
}

func (h routed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		h.srv.stats.requests.Add(1)
		h.srv.eng.Check(r.Context(), h.srv.now(), true)
		h.admin.ServeHTTP(w, r)
		return
	}
	h.srv.ServeHTTP(w, r)
}
