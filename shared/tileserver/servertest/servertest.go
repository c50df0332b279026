// Package servertest assembles a tile server over given tiers and an
// origin, the way functions/tiles/app assembles the tile function, for the
// tests and benchmarks of the HTTP contract: one Config of every setting a
// test turns, and the parts built in the same order (archive origin,
// answers, engine, follower, documents, server, admin API). Zero settings
// take the variables' defaults (shared/config).
package servertest

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/admin/adminpurge"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/formats"
	"github.com/tilesieve/tilesieve/shared/images"
	"github.com/tilesieve/tilesieve/shared/images/pixel"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile/coding"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// Config is every setting of the assembled server.
type Config struct {
	CacheControl, NegativeCacheControl, StaleCacheControl, MissingTile string
	CORSAllowOrigins, PublicURL, CDNSecret, AdminToken                 string
	RevalidateAfter, OriginTimeout, OriginFailureWindow, ArchiveTTL    time.Duration
	MaxOriginFetches, ArchiveMaxNames                                  int
	MaxTileBytes                                                       int64
	StrictOutage                                                       bool
	// Images bounds the IIIF answers; the zero value is images' defaults.
	Images images.Config
	Extra  tileserver.ExtraFunc
	Now    func() time.Time
}

// Origin is what the engine reads from on a miss: S3 through
// shared/origin, or a wrapper of it.
type Origin = tiers.Origin

// Metrics records the answers and the origin fetches; *obs.TileMetrics
// is one.
type Metrics interface {
	tileserver.Metrics
	tiers.Metrics
}

// Deps are the parts the server is assembled over. Memory and Origin are
// required.
type Deps struct {
	Memory  *memory.Cache
	Disk    *disk.Store
	Origin  Origin
	Purger  *purge.Purger // nil: admin purges of this instance only
	Metrics Metrics       // nil records nothing
	Logger  *slog.Logger
	// Archives, when set, serves tilesets stored as one object, and the
	// catalog; nil serves objects only.
	Archives archive.Store
	// Stager, with Archives, serves the formats read whole (MBTiles).
	Stager archive.Stager
	// Directories keeps archives' decoded directories; nil: a cache of
	// archive.DefaultDirectoryBytes.
	Directories *memory.Cache
	// Follow, when set, builds the journal follower over the engine.
	Follow func(*tiers.Engine) tiers.Syncer
}

// Stack is an assembled server.
type Stack struct {
	*tileserver.Server
	Handler  http.Handler // the server with the admin API routed in
	Admin    *admin.Handler
	Docs     *docs.Docs
	Archives *archive.Origin // nil: objects only
	Images   *images.Service // IIIF; nil without archives
}

// New assembles the server.
func New(cfg Config, d Deps) (*Stack, error) {
	if d.Memory == nil || d.Origin == nil {
		return nil, errors.New("servertest: Memory and Origin are required")
	}
	st := &Stack{}
	origin := d.Origin
	var err error
	if d.Archives != nil {
		if st.Archives, err = archive.New(archive.Config{TTL: cfg.ArchiveTTL, OriginTimeout: cfg.OriginTimeout, Now: cfg.Now, MaxNames: cfg.ArchiveMaxNames},
			archive.Deps{Next: d.Origin, Store: d.Archives, Stager: d.Stager, Directories: d.Directories, Decode: coding.Stored, Logger: d.Logger}); err != nil {
			return nil, err
		}
		if st.Images, err = images.New(imagesConfig(cfg.Images), st.Archives, st.Archives, d.Logger); err != nil {
			return nil, err
		}
		origin = st.Images
	}
	answers, err := tileserver.NewAnswers(serverConfig(cfg))
	if err != nil {
		return nil, err
	}
	eng, err := tiers.New(tiersConfig(cfg), tiers.Deps{Memory: d.Memory, Disk: d.Disk, Origin: origin,
		Metrics: tiersMetrics(d), Logger: d.Logger, Prepare: answers.Prepare})
	if err != nil {
		return nil, err
	}
	if d.Follow != nil {
		eng.Follow(d.Follow(eng))
	}
	var catalog docs.Archives
	if st.Archives != nil {
		st.Archives.Follow(eng)
		catalog = st.Archives
	}
	if st.Docs, err = docs.New(eng, docs.Deps{Prepare: answers.Prepare, Decode: coding.Stored, Archives: catalog, Logger: d.Logger, Now: cfg.Now}); err != nil {
		return nil, err
	}
	sd := tileserver.Deps{Docs: st.Docs, Metrics: serverMetrics(d), Logger: d.Logger}
	if st.Images != nil {
		sd.Images = st.Images
	}
	if st.Server, err = tileserver.New(answers, eng, sd); err != nil {
		return nil, err
	}
	ad := admin.Deps{Engine: eng, Memory: d.Memory, Disk: d.Disk, Handler: st.handlerStats,
		IIIF: st.Images, BaseURL: st.BaseURL, PublicCORS: answers.CORSAny(), Logger: d.Logger}
	if d.Purger != nil {
		ad.Purger = adminpurge.Purger{P: d.Purger}
	}
	if st.Archives != nil {
		ad.Catalog, ad.Images = st.Docs.Tilesets, st.Docs.Images
	}
	if st.Admin, err = admin.New(admin.Config{Token: cfg.AdminToken, Now: cfg.Now}, ad); err != nil {
		return nil, err
	}
	st.Handler = tileserver.Route(st.Server, st.Admin)
	return st, nil
}

func serverConfig(cfg Config) tileserver.Config {
	return tileserver.Config{
		CacheControl:         cmp.Or(cfg.CacheControl, config.DefaultCacheControl),
		NegativeCacheControl: cmp.Or(cfg.NegativeCacheControl, config.DefaultNegativeCacheControl),
		StaleCacheControl:    cmp.Or(cfg.StaleCacheControl, config.DefaultStaleCacheControl),
		MissingTile:          cmp.Or(cfg.MissingTile, config.DefaultMissingTile),
		CORSAllowOrigins:     cmp.Or(cfg.CORSAllowOrigins, "*"),
		PublicURL:            cfg.PublicURL, CDNSecret: cfg.CDNSecret,
		MaxTileBytes: cfg.MaxTileBytes, Extra: cfg.Extra, Now: cfg.Now,
	}
}

// tiersConfig is the engine's Config as the configuration derives it
// (config.Tiles.StaleIfError and NegativeTTL).
func tiersConfig(cfg Config) tiers.Config {
	c := config.Tiles{
		CacheControl:         cmp.Or(cfg.CacheControl, config.DefaultCacheControl),
		NegativeCacheControl: cmp.Or(cfg.NegativeCacheControl, config.DefaultNegativeCacheControl),
		RevalidateAfter:      cmp.Or(cfg.RevalidateAfter, tiers.DefaultRevalidateAfter),
	}
	return tiers.Config{
		RevalidateAfter: c.RevalidateAfter, OriginTimeout: cfg.OriginTimeout,
		MaxOriginFetches: max(cfg.MaxOriginFetches, 0), OriginFailureWindow: cfg.OriginFailureWindow,
		StrictOutage: cfg.StrictOutage, StaleIfError: c.StaleIfError(), NegativeTTL: c.NegativeTTL(), Now: cfg.Now,
	}
}

func tiersMetrics(d Deps) tiers.Metrics {
	if d.Metrics == nil {
		return nil
	}
	return d.Metrics
}

func serverMetrics(d Deps) tileserver.Metrics {
	if d.Metrics == nil {
		return nil
	}
	return d.Metrics
}

func (st *Stack) handlerStats() admin.HandlerStats {
	c := st.Counters()
	return admin.HandlerStats{Requests: c.Requests, NotFound: c.NotFound, BadRequests: c.BadRequests}
}

// ServeHTTP serves the whole instance, the admin API included.
func (st *Stack) ServeHTTP(w http.ResponseWriter, r *http.Request) { st.Handler.ServeHTTP(w, r) }

// Stats returns the tier and handler counters, as GET /_tilesieve/stats
// answers them.
func (st *Stack) Stats() admin.Stats { return st.Admin.Stats() }

// Drain waits for the work the engine started beside answers.
func (st *Stack) Drain() { st.Engine().Drain() }

// Close drains the engine and closes what the archive origin holds open.
func (st *Stack) Close() error {
	st.Drain()
	if st.Archives == nil {
		return nil
	}
	return st.Archives.Close()
}

// UseLocalArchive reads tileset name's archive, while S3 holds version
// etag of it, from src (archive.Origin.UseLocal).
func (st *Stack) UseLocalArchive(name, etag string, src formats.RangeReader) {
	if st.Archives != nil {
		st.Archives.UseLocal(name, etag, src)
	}
}

// OpenArchive opens NAME.pmtiles as its first request would and returns
// why it is refused (archive.Origin.Refusal).
func (st *Stack) OpenArchive(ctx context.Context, name string) error {
	if st.Archives == nil {
		return nil
	}
	return st.Archives.Refusal(ctx, name)
}

// StageMBTiles stages and opens NAME.mbtiles now (archive.Origin.Open).
func (st *Stack) StageMBTiles(ctx context.Context, name string) error {
	if st.Archives == nil {
		return errors.New("servertest: archives are off")
	}
	return st.Archives.Open(ctx, name+".mbtiles")
}

// ArchiveNames is how many tileset names the archive origin remembers.
func (st *Stack) ArchiveNames() int { return st.Archives.Names() }

// imagesConfig is c, the zero value being images' defaults.
func imagesConfig(c images.Config) images.Config {
	if reflect.ValueOf(c).IsZero() {
		return images.Config{Limits: images.DefaultLimits, MaxDecodedPixels: images.DefaultMaxDecodedPixels, Pixel: pixel.DefaultConfig()}
	}
	return c
}
