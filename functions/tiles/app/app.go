// Package app composes the tile function from its configuration, each part
// built once, in the order the parts depend on each other: the tiers, the
// origin and the formats behind it, the engine, the journal follower, the
// admin purges' pipeline, the documents, the HTTP contract and the admin
// API. The Lambda entry (functions/tiles) and the local stack
// (infra/devstack) both start here, so what runs locally is what runs on
// Lambda.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tilesieve/tilesieve/shared/admin"
	"github.com/tilesieve/tilesieve/shared/admin/adminpurge"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/docs"
	"github.com/tilesieve/tilesieve/shared/formats/registry"
	"github.com/tilesieve/tilesieve/shared/images"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/purge/queue"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tile/coding"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// App is a composed tile function.
type App struct {
	Handler http.Handler // the whole instance: tiles, the health check and the admin API
	Server  *tileserver.Server
	Engine  *tiers.Engine
	Origin  *origin.Client // the default source: TILES_BUCKET under TILES_PREFIX
	// Router reads each tileset from its source (SOURCES) and the rest
	// through Origin; the archives and the catalog read through it.
	Router   *origin.Router
	Archives *archive.Origin // tilesets stored as one object, in front of Router
	Images   *images.Service // images served as IIIF, in front of Archives
	Docs     *docs.Docs
	Admin    *admin.Handler
	Memory   *memory.Cache
	Disk     *disk.Store // nil when the disk tier is off or could not open
	Journal  *journal.Journal
	Purger   *purge.Purger // admin purges: the journal, then the handoff to the worker
	Follower *follower.Follower
	Staged   stage.Report
	// StagedArchives are the tileset archives copied beside the disk tier.
	StagedArchives []string
	Metrics        *obs.TileMetrics // nil when metrics are off
	// Init is how long the parts of the init phase took (Config is the
	// caller's to fill in).
	Init obs.InitDurations

	archiveFiles []*os.File // the staged archives' copies
}

// Stats returns the tier and handler counters, as GET /_tilesieve/stats
// answers them.
func (a *App) Stats() admin.Stats { return a.Admin.Stats() }

// Drain waits for the revalidations and journal checks started beside
// answers (tiers.Engine.Drain).
func (a *App) Drain() { a.Engine.Drain() }

// Close drains the engine, then closes the databases and copies the
// archive origin holds open and the staged archives' files. Call it after
// the last request; on Lambda the environment ends without it. It is safe
// to call more than once.
func (a *App) Close() error {
	a.Engine.Drain()
	errs := []error{a.Archives.Close()}
	for _, f := range a.archiveFiles {
		errs = append(errs, f.Close())
	}
	a.archiveFiles = nil
	return errors.Join(errs...)
}

// Option adds to what New composes.
type Option func(*options)

type options struct {
	handoff    purge.Handoff
	metricsOut io.Writer
	extra      tileserver.ExtraFunc
	onOffHeap  func(int64)
	onRender   func(int64)
}

// WithHandoff hands admin purges' CDN invalidations to h instead of the
// queue PURGE_QUEUE_URL names (the local stack hands them to its worker).
func WithHandoff(h purge.Handoff) Option { return func(o *options) { o.handoff = h } }

// WithMetrics writes the CloudWatch EMF metric lines (when METRICS is on)
// to w, the function's log stream on Lambda.
func WithMetrics(w io.Writer) Option { return func(o *options) { o.metricsOut = w } }

// WithExtra keeps what f builds beside each tile in the memory tier
// (tileserver.ExtraFunc): the Lambda adapter's buffered payload.
func WithExtra(f tileserver.ExtraFunc) Option { return func(o *options) { o.extra = f } }

// WithOffHeap tells f the bytes the memory tier holds off the heap as they
// change (memory.Config.OnOffHeap): the process lowers its Go memory limit
// by them.
func WithOffHeap(f func(resident int64)) Option { return func(o *options) { o.onOffHeap = f } }

// WithRendering tells f the bytes of pixels the IIIF answers being made
// hold as they change (pixel.Config.OnInFlight): off Lambda the process
// raises its Go memory limit by them.
func WithRendering(f func(inFlight int64)) Option { return func(o *options) { o.onRender = f } }

// New builds the tile function. Problems with optional parts (the disk tier,
// staging, the journal's head) are logged and the function runs without
// them; only what it cannot serve without is an error.
func New(ctx context.Context, cfg config.Tiles, log *slog.Logger, opts ...Option) (*App, error) {
	o, err := origin.New(ctx, OriginConfig(cfg))
	if err != nil {
		return nil, err
	}
	return NewWithOrigin(ctx, cfg, o, log, opts...)
}

// OriginConfig is the S3 origin the configuration describes.
func OriginConfig(cfg config.Tiles) origin.Config {
	return origin.Config{
		Bucket:    cfg.Bucket,
		Prefix:    cfg.TilesPrefix,
		Endpoint:  cfg.Endpoint,
		PathStyle: cfg.PathStyle,
		Timeout:   cfg.OriginTimeout,
		// Staging's large objects (archives) go through the ranged
		// downloader, which this bound does not limit.
		MaxObjectBytes: cfg.MaxTileBytes,
		// The engine runs at most this many fetches at once; the bound
		// keeps the sockets an S3 hang leaves behind to the same number.
		// Staging and the journal read through S3(), a pool of its own.
		MaxConns: cfg.MaxOriginFetches,
	}
}

// NewWithOrigin is New with a ready origin client (tests, the local stack).
// It is the straight list of the parts; the helpers below only build one
// part each.
func NewWithOrigin(ctx context.Context, cfg config.Tiles, o *origin.Client, log *slog.Logger, opts ...Option) (*App, error) {
	var op options
	for _, f := range opts {
		f(&op)
	}
	a := &App{Origin: o, Router: origin.NewRouter(o, cfg.Table())}
	var err error
	if a.Memory, err = memory.New(memory.Config{MaxBytes: cfg.MemBytes, OffHeap: true, OnOffHeap: op.onOffHeap}); err != nil {
		return nil, fmt.Errorf("app: memory tier: %w", err)
	}
	a.Disk = a.openDisk(cfg, log)
	if a.Metrics, err = newMetrics(cfg, op.metricsOut); err != nil {
		return nil, err
	}
	if a.Archives, err = archive.New(archiveConfig(cfg), archive.Deps{Next: a.Router, Store: a.Router, Stager: a.stager(),
		Formats: registry.Opener, Decode: coding.Stored, Logger: log}); err != nil {
		return nil, err
	}
	if a.Images, err = images.New(imagesConfig(cfg, op.onRender), a.Archives, a.Archives, log); err != nil {
		return nil, err
	}
	answers, err := tileserver.NewAnswers(serverConfig(cfg, op.extra))
	if err != nil {
		return nil, err
	}
	if a.Engine, err = tiers.New(tiersConfig(cfg), tiers.Deps{Memory: a.Memory, Disk: a.Disk, Origin: a.Images,
		Metrics: a.tiersMetrics(), Logger: log, Prepare: answers.Prepare}); err != nil {
		return nil, err
	}
	a.Journal = journal.New(o.S3(), cfg.Bucket, cfg.JournalPrefix, journal.Options{Logger: log})
	a.Follower = follower.New(a.Journal, a.Engine, a.followerConfig(cfg), log)
	a.Engine.Follow(a.Follower)
	a.Archives.Follow(a.Engine)
	if a.Purger, err = newPurger(ctx, cfg, a.Journal, op.handoff, log); err != nil {
		return nil, err
	}
	if a.Docs, err = docs.New(a.Engine, docs.Deps{Prepare: answers.Prepare, Decode: coding.Stored, Archives: a.Archives, Logger: log}); err != nil {
		return nil, err
	}
	if a.Server, err = tileserver.New(answers, a.Engine, tileserver.Deps{Docs: a.Docs, Images: a.Images, Metrics: a.tileMetrics(), Logger: log}); err != nil {
		return nil, err
	}
	if a.Admin, err = admin.New(admin.Config{Token: cfg.AdminToken}, admin.Deps{Engine: a.Engine, Memory: a.Memory, Disk: a.Disk,
		Purger: adminpurge.Purger{P: a.Purger}, Handler: a.handlerStats, Catalog: a.Docs.Tilesets, Images: a.Docs.Images, IIIF: a.Images,
		BaseURL: a.Server.BaseURL, PublicCORS: answers.CORSAny(), Logger: log}); err != nil {
		return nil, err
	}
	a.Handler = tileserver.Route(a.Server, a.Admin)
	a.start(ctx, cfg, log)
	return a, nil
}

// openDisk opens the disk tier, or logs why it is off.
func (a *App) openDisk(cfg config.Tiles, log *slog.Logger) *disk.Store {
	if !cfg.DiskAuto && cfg.DiskBytes <= 0 {
		return nil
	}
	began := time.Now()
	d, err := disk.Open(disk.Config{Dir: cfg.DiskDir, MaxBytes: cfg.DiskBytes, Fsync: cfg.DiskFsync}, log)
	a.Init.DiskIndex = time.Since(began)
	if err != nil {
		log.Warn("disk tier off: it could not open; serving from memory and S3", "dir", cfg.DiskDir, "err", err)
		return nil
	}
	return d
}

// newMetrics is the CloudWatch metrics of the tile function, nil when they
// are off or have nowhere to go.
func newMetrics(cfg config.Tiles, out io.Writer) (*obs.TileMetrics, error) {
	if !cfg.Metrics.Enabled || out == nil {
		return nil, nil
	}
	m, err := obs.NewTileMetrics(obs.MetricsConfig{
		Namespace:    cfg.Metrics.Namespace,
		FunctionName: cmp.Or(lambdacontext.FunctionName, "tilesieve-tiles"),
		Interval:     cfg.Metrics.Interval,
		MaxTileSets:  cfg.Metrics.MaxTileSets,
	}, out, time.Now())
	if err != nil {
		return nil, fmt.Errorf("app: metrics: %w", err)
	}
	return m, nil
}

// newPurger is the admin purges' pipeline: the journal, then the CDN
// invalidation handed to the worker (h, or the queue PURGE_QUEUE_URL
// names; none: the CDN is left alone).
func newPurger(ctx context.Context, cfg config.Tiles, j *journal.Journal, h purge.Handoff, log *slog.Logger) (*purge.Purger, error) {
	if h == nil && cfg.PurgeQueueURL != "" {
		var err error
		if h, err = queue.NewHandoff(ctx, cfg.PurgeQueueURL, awsSettings()); err != nil {
			return nil, err
		}
	}
	return purge.NewPurger(j, purge.PurgerConfig{Handoff: h}, log), nil
}

// followerConfig is the journal follower's: its position is kept beside
// the disk tier, and its checks are counted in the metrics.
func (a *App) followerConfig(cfg config.Tiles) follower.Config {
	fcfg := follower.Config{Interval: cfg.SyncInterval, Timeout: cfg.SyncTimeout, Position: a.position(cfg)}
	if a.Metrics != nil {
		fcfg.Observer = a.Metrics
		a.Metrics.WatchTiers(func() obs.TierSize {
			st := a.Memory.Stats()
			return obs.TierSize{Bytes: st.Bytes, Entries: st.Entries}
		}, a.diskSize())
	}
	return fcfg
}

// position is where the follower keeps its journal position: beside the
// disk tier, which it describes; nil without one.
func (a *App) position(cfg config.Tiles) journal.PositionStore {
	if a.Disk == nil {
		return nil
	}
	return journal.PositionFile{Path: filepath.Join(a.Disk.Dir(), journal.PositionFileName), Fsync: cfg.DiskFsync}
}

// handlerStats are the HTTP layer's own counters, which the admin API's
// stats complete with the engine's.
func (a *App) handlerStats() admin.HandlerStats {
	c := a.Server.Counters()
	return admin.HandlerStats{Requests: c.Requests, NotFound: c.NotFound, BadRequests: c.BadRequests}
}

// tileMetrics is a.Metrics as the server's Metrics (nil when off: a nil
// *TileMetrics in the interface would not be nil).
func (a *App) tileMetrics() tileserver.Metrics {
	if a.Metrics == nil {
		return nil
	}
	return a.Metrics
}

// tiersMetrics is a.Metrics as the engine's Metrics.
func (a *App) tiersMetrics() tiers.Metrics {
	if a.Metrics == nil {
		return nil
	}
	return a.Metrics
}

func (a *App) diskSize() func() obs.TierSize {
	if a.Disk == nil {
		return nil
	}
	return func() obs.TierSize {
		st := a.Disk.Stats()
		return obs.TierSize{Bytes: st.Bytes, Entries: st.Entries}
	}
}
