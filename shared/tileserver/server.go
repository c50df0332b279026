// Package tileserver is the HTTP contract of the tile origin, on top of the
// tier engine (shared/tiers): tile answers with conditional requests, ranges,
// gzip pass-through, X-Cache and Server-Timing, and CORS. It knows nothing of
// Lambda: the Lambda entry wraps it, and `make run` and the tests serve it as
// it is. New composes what answers beside it, each in its own package: the
// archive origin (shared/origin/archive) in front of S3, the documents that name
// their own URL (shared/docs), and the reserved path space /_tilesieve/
// (shared/admin), which Serve leaves to ServeHTTP (Response.Admin).
//
// The engine decides where a tile comes from (memory, disk, S3) and what a
// purge removes; this package decides how it is answered, and prepares each
// tile's answer as the tile enters the memory tier (the engine's Prepare
// hook), so a memory hit formats nothing. A tile stored with a content
// coding is decoded for clients without it at most once per tile version,
// within MAX_TILE_BYTES: kept beside the tile in the memory tier (where a
// purge of the tile removes it), or decoded as it is sent when it is too
// large for it. The handler is safe for concurrent use.
package tileserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/internal/defaults"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
)

// Origin is where tiles come from on a miss: S3, through shared/origin.
type Origin = tiers.Origin

// Config is the handler's behaviour.
type Config struct {
	CacheControl         string        // tiles; its stale-if-error bounds serving stale copies
	NegativeCacheControl string        // 404 and sparse answers
	MissingTile          string        // "404", "204" or "empty"
	RevalidateAfter      time.Duration // age after which a cached tile is revalidated
	OriginTimeout        time.Duration // deadline of one origin fetch
	MaxOriginFetches     int           // origin fetches at once; default 64
	OriginFailureWindow  time.Duration // after an origin failure, how long stale copies go out without waiting; default 5s, negative off
	StaleCacheControl    string        // a copy served stale because the origin failed; short, so a CDN does not keep it long
	// StrictOutage: when neither the journal nor S3 answers, copies the
	// journal no longer vouches for fail rather than go out stale.
	StrictOutage     bool
	AdminToken       string // empty disables the admin API
	CORSAllowOrigins string // "*" (default), "none", or origins to reflect; never on the admin API
	// Payloads keeps, beside each tile in the memory tier, its buffered
	// function-URL answer encoded once (Lambda in BUFFERED mode), charged
	// to the memory tier's bound.
	Payloads bool
	// PublicURL is the base URL answers that name their own URL (TileJSON,
	// the catalog, IIIF info.json ids) use; "" takes it from the request's
	// forwarded or own host.
	PublicURL string
	// CDNSecret is the value of CDNSecretHeader on requests that came
	// through the CDN; only those may name the host (X-Forwarded-Host) the
	// answers' URLs use. "" believes no forwarded host.
	CDNSecret string
	// ArchiveTTL is how long a tileset name is believed not to be a PMTiles
	// archive, and how long an archive's ETag counts as checked when its
	// tiles are revalidated; default archive.DefaultTTL.
	ArchiveTTL time.Duration
	// ArchiveMaxNames bounds the tileset names remembered; zero:
	// archive.MaxNames.
	ArchiveMaxNames int
	// MaxTileBytes (MAX_TILE_BYTES) also bounds a tile decoded for a client
	// without its coding; zero or negative: the decoder's own bounds only.
	MaxTileBytes int64
	Now          func() time.Time
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	switch c.MissingTile {
	case "", "404", "204", "empty":
	default:
		errs = append(errs, fmt.Errorf("tileserver: MissingTile %q: want 404, 204 or empty", c.MissingTile))
	}
	if c.RevalidateAfter < 0 || c.OriginTimeout < 0 {
		errs = append(errs, errors.New("tileserver: durations must not be negative"))
	}
	if _, err := parseCORS(c.CORSAllowOrigins); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Metrics records what the server answers; *obs.TileMetrics is one.
type Metrics interface {
	Request(tileset string, tier obs.Tier, bytes int64, elapsed time.Duration)
	OriginFetch(elapsed time.Duration, err error)
	MaybeFlush(now time.Time) error
}

// Deps are the parts the handler composes. Memory and Origin are required;
// the rest may be nil (no disk tier, admin purges of this instance only).
type Deps struct {
	Memory  *memory.Cache
	Disk    *disk.Store
	Origin  Origin
	Purger  admin.Purger
	Metrics Metrics // nil records nothing
	Logger  *slog.Logger
	// Archives, when set, serves PMTiles archives (NAME.pmtiles) as the
	// tilesets NAME/, and the catalog; nil serves objects only.
	Archives archive.Store
	// Stager, with Archives, serves MBTiles databases (NAME.mbtiles) as the
	// tilesets NAME/, each staged whole to local disk through it; nil: off.
	Stager archive.Stager
	// Directories keeps archives' decoded leaf directories; nil: a cache
	// of archive.DefaultDirectoryBytes.
	Directories *memory.Cache
	// Follow, when set, builds the journal follower: it is given the tier
	// engine to purge and returns the Syncer the engine consults (see
	// tiers.Engine.Get and Check). nil: every cached copy is trusted.
	Follow func(*tiers.Engine) tiers.Syncer
}

// Server is the tile handler.
type Server struct {
	cfg     Config
	eng     *tiers.Engine
	mem     *memory.Cache // the engine's, for the admin API's listings
	disk    *disk.Store   // the engine's, for the admin API's listings; nil: none
	origin  Origin        // what the engine fetches from: S3, behind archives when they are on
	log     *slog.Logger
	now     func() time.Time
	empty   map[string]emptyTile
	metrics Metrics // nil: none
	cors    corsPolicy

	// Field values shared by every answer.
	cacheControl, negativeCacheControl, staleCacheControl, allow []string

	stats    counters
	decoding decodeFlights   // decodes of stored tiles for clients without their coding
	archives *archive.Origin // nil: objects only
	docs     *docs.Docs      // documents rendered for a base URL, glyph stacks, the catalog
	admin    *admin.Handler  // the reserved path space, /_tilesieve/
	base     docs.Base       // what a request's public base URL is chosen from
}

// counters are the handler's own statistics; the engine keeps the tiers'.
type counters struct {
	requests, notFound, badRequests atomic.Int64
	decodes                         atomic.Int64 // whole decodes of a stored tile for a client without its coding
}

// New builds the handler.
func New(cfg Config, d Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Memory == nil || d.Origin == nil {
		return nil, errors.New("tileserver: Memory and Origin are required")
	}
	// Zero fields take config's defaults, the ones the variables have.
	cfg.MissingTile = cmp.Or(cfg.MissingTile, config.DefaultMissingTile)
	cfg.CacheControl = cmp.Or(cfg.CacheControl, config.DefaultCacheControl)
	cfg.NegativeCacheControl = cmp.Or(cfg.NegativeCacheControl, config.DefaultNegativeCacheControl)
	cfg.StaleCacheControl = cmp.Or(cfg.StaleCacheControl, config.DefaultStaleCacheControl)
	// The archive probes read these beside the engine.
	cfg.RevalidateAfter = cmp.Or(cfg.RevalidateAfter, tiers.DefaultRevalidateAfter)
	cfg.OriginTimeout = cmp.Or(cfg.OriginTimeout, tiers.DefaultOriginTimeout)
	now := defaults.Clock(cfg.Now)
	log := defaults.Logger(d.Logger)
	s := &Server{
		cfg: cfg, mem: d.Memory, disk: d.Disk, origin: d.Origin,
		log: log, now: now, metrics: d.Metrics,
	}
	if cfg.MissingTile == "empty" {
		// Encoding them takes over a millisecond of a cold start that
		// answers no missing tile with one otherwise.
		s.empty = makeEmptyTiles()
	}
	s.base = docs.Base{PublicURL: cfg.PublicURL, CDNSecret: cfg.CDNSecret}
	s.cors, _ = parseCORS(cfg.CORSAllowOrigins) // validated above
	s.cacheControl = []string{cfg.CacheControl}
	s.negativeCacheControl = []string{cfg.NegativeCacheControl}
	s.staleCacheControl = []string{cfg.StaleCacheControl}
	var err error
	if d.Archives != nil {
		s.archives, err = archive.New(archive.Config{TTL: cfg.ArchiveTTL, OriginTimeout: cfg.OriginTimeout, Now: now, MaxNames: cfg.ArchiveMaxNames}, archive.Deps{
			Next: s.origin, Store: d.Archives, Stager: d.Stager, Directories: d.Directories,
			Decode: decodeStored, Logger: log,
			// The engine is built below, over the archives; an archive
			// changes under a read only once requests run.
			Purge:   func(prefix string) { _, _ = s.eng.Purge(prefix) },
			Trusted: func(storedAt, now time.Time) bool { return s.eng.Trusted(storedAt, now) },
		})
		if err != nil {
			return nil, err
		}
		s.origin = s.archives
	}
	if s.docs, err = docs.New(docs.Deps{Prepare: s.prepare, Decode: decodeStored, Archives: s.archives, Logger: log, Now: now}); err != nil {
		return nil, err
	}
	var metrics tiers.Metrics
	if d.Metrics != nil {
		metrics = d.Metrics
	}
	s.eng, err = tiers.New(tiers.Config{
		RevalidateAfter:     cfg.RevalidateAfter,
		OriginTimeout:       cfg.OriginTimeout,
		MaxOriginFetches:    max(cfg.MaxOriginFetches, 0),
		OriginFailureWindow: cfg.OriginFailureWindow,
		StrictOutage:        cfg.StrictOutage,
		StaleIfError:        directiveSeconds(cfg.CacheControl, "stale-if-error"),
		// A 404 is remembered as long as the CDN may cache it, and never past
		// the revalidation age; the journal purges it on upload either way.
		NegativeTTL: min(directiveSeconds(cfg.NegativeCacheControl, "max-age"), cfg.RevalidateAfter),
		Now:         now,
	}, tiers.Deps{
		Memory: d.Memory, Disk: d.Disk, Origin: s.origin, Metrics: metrics, Logger: log,
		Prepare: s.prepare, Purged: s.purged, Follow: d.Follow,
	})
	if err != nil {
		return nil, err
	}
	ad := admin.Deps{
		Engine: s.eng, Memory: d.Memory, Disk: d.Disk, Purger: d.Purger,
		Hidden: isVariantKey, Handler: s.handlerStats,
		BaseURL: s.httpBaseURL, PublicCORS: s.cors.any, Logger: log,
	}
	if s.archives != nil {
		ad.Catalog = s.docs.Tilesets
	}
	if s.admin, err = admin.New(admin.Config{Token: cfg.AdminToken, Now: now}, ad); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	s.allow = []string{"GET, HEAD"}
	if s.cors.any || s.cors.reflect {
		s.allow = allowMethods
	}
	return s, nil
}

// adminPrefix is the reserved path space of the health check and admin API.
const adminPrefix = admin.Prefix

// Engine is the tier engine the server answers from: its Purge is what the
// journal follower drives, and what an admin purge applies here.
func (s *Server) Engine() *tiers.Engine { return s.eng }

// Stats returns the tier and handler counters, as GET /_tilesieve/stats
// answers them.
func (s *Server) Stats() admin.Stats { return s.admin.Stats() }

// handlerStats are the counters this layer keeps; the engine keeps the
// tiers'.
func (s *Server) handlerStats() admin.HandlerStats {
	return admin.HandlerStats{Requests: s.stats.requests.Load(), NotFound: s.stats.notFound.Load(), BadRequests: s.stats.badRequests.Load()}
}

// nowAt is the server's clock at real, a time just read from time.Now:
// real itself, unless Config.Now replaces the clock.
func (s *Server) nowAt(real time.Time) time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return real
}

// purged runs inside every purge of prefix on this instance: archives it
// covers are opened afresh, and renderings of what it covers are dropped.
func (s *Server) purged(prefix string) {
	s.docs.Purged(prefix)
	if s.archives != nil {
		s.archives.Forget(prefix)
	}
}

// Drain waits for the revalidations started in the background for requests
// answered stale (each bounded by OriginTimeout); call it at shutdown.
func (s *Server) Drain() { s.eng.Drain() }

// Close drains the server (Drain) and closes the databases its archive
// origin holds open (archive.Origin.Close). Call it once the last request
// has been answered: a request after it that reaches an archive or
// database tileset's origin is answered an error. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.eng.Drain()
	if s.archives == nil {
		return nil
	}
	return s.archives.Close()
}

// directiveSeconds reads a delta-seconds directive from a Cache-Control value.
func directiveSeconds(cc, name string) time.Duration {
	for part := range strings.SplitSeq(cc, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !strings.EqualFold(k, name) {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(v, `"`))
		if err != nil || n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	return 0
}

// UseLocalArchive serves tileset name's archive, while S3 holds version
// etag of it, from src (a copy staged to local disk) instead of ranged
// GETs (archive.Origin.UseLocal); a no-op when archives are off.
func (s *Server) UseLocalArchive(name, etag string, src pmtiles.RangeReader) {
	if s.archives != nil {
		s.archives.UseLocal(name, etag, src)
	}
}

// OpenArchive opens NAME.pmtiles now, as its first request would (sharing
// that probe), and returns why it is refused (archive.Origin.Refusal):
// nil when it serves, is not an archive, or could not be asked before ctx
// ended. A refusal is logged once, by the probe.
func (s *Server) OpenArchive(ctx context.Context, name string) error {
	if s.archives == nil {
		return nil
	}
	return s.archives.Refusal(ctx, name)
}

// StageMBTiles stages and opens NAME.mbtiles now, as its first request
// would (archive.Origin.StageMBTiles).
func (s *Server) StageMBTiles(ctx context.Context, name string) error {
	if s.archives == nil {
		return errors.New("tileserver: mbtiles are off")
	}
	return s.archives.StageMBTiles(ctx, name)
}
