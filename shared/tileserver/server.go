// Package tileserver is the tile origin as one http.Handler: memory tier, then
// disk tier, then S3, with the HTTP contract of DESIGN.md (conditional
// requests, ranges, gzip pass-through, X-Cache and Server-Timing, stale copies
// on origin errors) and the admin API. It knows nothing of Lambda: the Lambda
// entry wraps it, and `make run` and the tests serve it as it is.
//
// A miss in one tier fills the tiers above it; concurrent misses for one key
// make one origin request; a fill that began before a purge of its key was
// applied is not inserted (see guard). The handler is safe for concurrent use.
package tileserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tilesieve/tilesieve/shared/cache"
	"github.com/tilesieve/tilesieve/shared/disk"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/tile"
)

// Origin is where tiles come from on a miss: S3, through shared/origin.
type Origin interface {
	// Get fetches key; with ifNoneMatch set, origin.ErrNotModified means the
	// cached copy is still current. origin.ErrNotFound means no such tile.
	Get(ctx context.Context, key, ifNoneMatch string) (*tile.Tile, error)
}

// Purger carries an admin purge to every instance (the journal) and to the
// CDN (through the sync worker); *purge.Purger is one.
type Purger interface {
	Purge(ctx context.Context, r purge.Request) (purge.Outcome, error)
}

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
	AdminToken           string        // empty disables the admin API
	CORSAllowOrigins     string        // "*" (default), "none", or origins to reflect; never on the admin API
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
	// tiles are revalidated; default DefaultArchiveTTL.
	ArchiveTTL time.Duration
	Now        func() time.Time
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
	Memory  *cache.Cache
	Disk    *disk.Store
	Origin  Origin
	Purger  Purger
	Metrics Metrics // nil records nothing
	Logger  *slog.Logger
	// Archives, when set, serves PMTiles archives (NAME.pmtiles) as the
	// tilesets NAME/, and the catalog; nil serves objects only.
	Archives ArchiveStore
	// Directories keeps archives' decoded leaf directories; nil: a cache
	// of DefaultDirectoryBytes.
	Directories *cache.Cache
}

// Server is the tile handler.
type Server struct {
	cfg          Config
	mem          *cache.Cache
	disk         *disk.Store
	origin       Origin
	purger       Purger
	log          *slog.Logger
	now          func() time.Time
	staleIfError time.Duration
	negativeTTL  time.Duration // how long a 404 is remembered in memory
	empty        map[string]emptyTile
	adminToken   [32]byte // sha256 of the token; compared in constant time
	sy           Syncer   // the journal follower, set by WithSync before serving; nil: every copy is trusted
	metrics      Metrics  // nil: none
	cors         corsPolicy

	// Field values shared by every answer.
	cacheControl, negativeCacheControl, staleCacheControl, allow []string

	flight     flight
	guard      guard
	slots      chan struct{}  // one per origin fetch in flight
	downUntil  atomic.Int64   // unix ns until which the origin counts as down
	background sync.WaitGroup // revalidations run for requests answered stale
	stats      counters
	archives   *archives    // nil: objects only
	docs       *cache.Cache // TileJSON and info.json answers rendered for a base URL
	catalog    catalogCache
}

// counters are the handler's own statistics.
type counters struct {
	requests, memoryHits, diskHits, misses, revalidated, stale atomic.Int64
	negativeHits                                               atomic.Int64 // 404s answered from a remembered miss
	originFetches, originErrors, merged, notFound, badRequests atomic.Int64
	dropped                                                    atomic.Int64 // fills not inserted because a purge overtook them
	diskWriteErrors                                            atomic.Int64
	relooked                                                   atomic.Int64 // tiles looked up again after a purge applied beside their request
	inFlight, inFlightPeak                                     atomic.Int64 // origin fetches running now, and the most at once
}

// New builds the handler.
func New(cfg Config, d Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Memory == nil || d.Origin == nil {
		return nil, errors.New("tileserver: Memory and Origin are required")
	}
	if cfg.MissingTile == "" {
		cfg.MissingTile = "404"
	}
	if cfg.CacheControl == "" {
		cfg.CacheControl = "public, max-age=86400, stale-while-revalidate=60, stale-if-error=86400"
	}
	if cfg.NegativeCacheControl == "" {
		cfg.NegativeCacheControl = "public, max-age=60"
	}
	if cfg.StaleCacheControl == "" {
		cfg.StaleCacheControl = "public, max-age=60"
	}
	if cfg.RevalidateAfter == 0 {
		cfg.RevalidateAfter = time.Hour
	}
	if cfg.OriginTimeout == 0 {
		cfg.OriginTimeout = 10 * time.Second
	}
	if cfg.MaxOriginFetches <= 0 {
		cfg.MaxOriginFetches = 64
	}
	if cfg.OriginFailureWindow == 0 {
		cfg.OriginFailureWindow = 5 * time.Second
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg: cfg, mem: d.Memory, disk: d.Disk, origin: d.Origin,
		purger: d.Purger, log: log, now: now, metrics: d.Metrics,
		staleIfError: directiveSeconds(cfg.CacheControl, "stale-if-error"),
		// A 404 is remembered as long as the CDN may cache it, and never past
		// the revalidation age; the journal purges it on upload either way.
		negativeTTL: min(directiveSeconds(cfg.NegativeCacheControl, "max-age"), cfg.RevalidateAfter),
		empty:       makeEmptyTiles(),
	}
	if cfg.AdminToken != "" {
		s.adminToken = hashToken(cfg.AdminToken)
	}
	s.cors, _ = parseCORS(cfg.CORSAllowOrigins) // validated above
	s.cacheControl = []string{cfg.CacheControl}
	s.negativeCacheControl = []string{cfg.NegativeCacheControl}
	s.staleCacheControl = []string{cfg.StaleCacheControl}
	s.slots = make(chan struct{}, cfg.MaxOriginFetches)
	if err := s.withArchives(d); err != nil {
		return nil, err
	}
	s.allow = []string{"GET, HEAD"}
	if s.cors.any || s.cors.reflect {
		s.allow = allowMethods
	}
	return s, nil
}

// adminPrefix is the reserved path space of the health check and admin API.
const adminPrefix = "/_tilesieve/"

// PurgePrefix removes every tile under prefix ("" is everything) from both
// tiers of this instance, and keeps in-flight fills from putting them back
// or handing them to requests that arrive after it. It is the purge.Target
// the journal follower drives; its error reports files the disk could not
// unlink, which would come back after a restart.
func (s *Server) PurgePrefix(prefix string) error {
	memN, diskN, err := s.purgeTiers(prefix)
	s.log.Debug("purged", "prefix", prefix, "memory_entries", memN, "disk_entries", diskN)
	return err
}

// PurgePrefixCount is PurgePrefix that also reports how many entries left
// the tiers (purge.CountingTarget).
func (s *Server) PurgePrefixCount(prefix string) (int, error) {
	memN, diskN, err := s.purgeTiers(prefix)
	return memN + diskN, err
}

// purgeTiers removes prefix from both tiers under the guard, and unlinks the
// disk files after it: a purge of many files must not hold up fills and
// disk hits of other keys while it unlinks.
func (s *Server) purgeTiers(prefix string) (memN, diskN int, err error) {
	var detached disk.Detached
	s.guard.purge(prefix, func() {
		memN, _ = s.mem.DeletePrefix(prefix)
		if s.disk != nil {
			detached = s.disk.Detach(prefix)
		}
		s.purged(prefix) // what the server derived from what the prefix covers
	})
	return memN, detached.Entries, detached.Unlink()
}

// Syncer brings an instance up to date with the purge journal; it runs on the
// request path (Lambda freezes idle instances, so nothing runs between
// requests) and must return quickly whatever happens. The journal follower
// (purge.Follower) is one.
type Syncer interface {
	// Due reports, cheaply, whether MaybeSync would check at now.
	Due(now time.Time) bool
	// MaybeSync checks the journal if a check is due and applies what it
	// finds, through PurgePrefix.
	MaybeSync(ctx context.Context)
	// Trusted reports, cheaply, whether a copy fetched from S3 at storedAt
	// may be answered with at now: false when the journal could not be read
	// for long enough that a purge of it may have been missed. Such a copy
	// is revalidated with S3 instead (fail closed).
	Trusted(storedAt, now time.Time) bool
}

// nowAt is the server's clock at real, a time just read from time.Now:
// real itself, unless Config.Now replaces the clock.
func (s *Server) nowAt(real time.Time) time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return real
}

// Drain waits for the revalidations started in the background for requests
// answered stale (each bounded by OriginTimeout); call it at shutdown.
func (s *Server) Drain() { s.background.Wait() }

// WithSync makes the server follow sy: sy's check runs on the requests that
// find it due, before they are answered, and every cached copy is served
// only while sy trusts it. Call it once, before serving; it returns the
// server.
//
// A tile request does not wait for the check before looking the tile up: the
// check (an S3 round trip) and the lookup run side by side, and the answer
// waits for both. A tile fetched from S3 now is as fresh as the check could
// make it, so a miss costs one round trip, not two. A tile found in memory or
// on disk is looked up again if the check applied a purge meanwhile, so no
// answer reflects less than the check found. Other requests (admin, health)
// wait for the check first.
func (s *Server) WithSync(sy Syncer) *Server {
	s.sy = sy
	return s
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
