// Package app composes the tile function from its configuration: the S3
// client, the memory and disk tiers, staging, the purge journal follower, the
// admin purges' pipeline (journal, then the CDN invalidation handed to the
// sync worker) and the handler, each built once. The Lambda entry
// (functions/tiles) and the local stack (infra/devstack) both start here, so
// what runs locally is what runs on Lambda.
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
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/tilesieve/tilesieve/shared/awsclient"
	"github.com/tilesieve/tilesieve/shared/config"
	"github.com/tilesieve/tilesieve/shared/formats/pmtiles"
	"github.com/tilesieve/tilesieve/shared/obs"
	"github.com/tilesieve/tilesieve/shared/origin"
	"github.com/tilesieve/tilesieve/shared/origin/archive"
	"github.com/tilesieve/tilesieve/shared/origin/sources"
	"github.com/tilesieve/tilesieve/shared/origin/stage"
	"github.com/tilesieve/tilesieve/shared/purge"
	"github.com/tilesieve/tilesieve/shared/purge/follower"
	"github.com/tilesieve/tilesieve/shared/purge/journal"
	"github.com/tilesieve/tilesieve/shared/tiers"
	"github.com/tilesieve/tilesieve/shared/tiers/disk"
	"github.com/tilesieve/tilesieve/shared/tiers/memory"
	"github.com/tilesieve/tilesieve/shared/tileserver"
)

// App is a composed tile function.
type App struct {
	Handler http.Handler // the tile server, behind the journal follower
	Server  *tileserver.Server
	Origin  *origin.Client // the default source: TILES_BUCKET under TILES_PREFIX
	// Router reads each tileset from its source (SOURCES) and the rest
	// through Origin; the tiers, archives and catalog read through it.
	Router   *origin.Router
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

	archiveFiles []*os.File // the staged archives' copies, read by UseLocalArchive
}

// Close drains and closes the server (tileserver.Server.Close) and closes
// the staged archives' files. Call it after the last request; on Lambda the
// environment ends without it.
func (a *App) Close() error {
	errs := []error{a.Server.Close()}
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
}

// WithHandoff hands admin purges' CDN invalidations to h instead of the
// queue PURGE_QUEUE_URL names (the local stack hands them to its worker).
func WithHandoff(h purge.Handoff) Option { return func(o *options) { o.handoff = h } }

// WithMetrics writes the CloudWatch EMF metric lines (when METRICS is on)
// to w, the function's log stream on Lambda.
func WithMetrics(w io.Writer) Option { return func(o *options) { o.metricsOut = w } }

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
func NewWithOrigin(ctx context.Context, cfg config.Tiles, o *origin.Client, log *slog.Logger, opts ...Option) (*App, error) {
	var op options
	for _, f := range opts {
		f(&op)
	}
	mem, err := memory.New(memory.Config{MaxBytes: cfg.MemBytes})
	if err != nil {
		return nil, fmt.Errorf("app: memory tier: %w", err)
	}
	a := &App{Origin: o, Router: origin.NewRouter(o, cfg.Table()), Memory: mem}
	if cfg.Metrics.Enabled && op.metricsOut != nil {
		a.Metrics, err = obs.NewTileMetrics(obs.MetricsConfig{
			Namespace:    cfg.Metrics.Namespace,
			FunctionName: cmp.Or(lambdacontext.FunctionName, "tilesieve-tiles"),
			Interval:     cfg.Metrics.Interval,
			MaxTileSets:  cfg.Metrics.MaxTileSets,
		}, op.metricsOut, time.Now())
		if err != nil {
			return nil, fmt.Errorf("app: metrics: %w", err)
		}
	}

	if cfg.DiskAuto || cfg.DiskBytes > 0 {
		began := time.Now()
		d, err := disk.Open(disk.Config{Dir: cfg.DiskDir, MaxBytes: cfg.DiskBytes, Fsync: cfg.DiskFsync}, log)
		a.Init.DiskIndex = time.Since(began)
		if err != nil {
			log.Warn("disk tier off: it could not open; serving from memory and S3", "dir", cfg.DiskDir, "err", err)
		} else {
			a.Disk = d
		}
	}
	a.Journal = journal.New(o.S3(), cfg.Bucket, cfg.JournalPrefix, journal.Options{Logger: log})
	handoff := op.handoff
	if handoff == nil && cfg.PurgeQueueURL != "" {
		if handoff, err = NewQueueHandoff(ctx, cfg.PurgeQueueURL, awsclient.Settings{}); err != nil {
			return nil, err
		}
	}
	a.Purger = purge.NewPurger(a.Journal, purge.PurgerConfig{Handoff: handoff}, log)
	// The journal follower is built with the tiers it purges (Deps.Follow).
	fcfg := follower.Config{Interval: cfg.SyncInterval, Timeout: cfg.SyncTimeout}
	if a.Disk != nil {
		fcfg.Position = journal.PositionFile{Path: filepath.Join(a.Disk.Dir(), journal.PositionFileName), Fsync: cfg.DiskFsync}
	}
	if a.Metrics != nil {
		fcfg.Observer = a.Metrics
		a.Metrics.WatchTiers(func() obs.TierSize {
			st := mem.Stats()
			return obs.TierSize{Bytes: st.Bytes, Entries: st.Entries}
		}, a.diskSize())
	}
	// NAME.mbtiles is staged whole beside the disk tier (SQLite reads a
	// local file), within the space the disk tier will never claim.
	var stager archive.Stager
	if a.Disk != nil {
		stager = routedStager{r: a.Router, dir: filepath.Join(a.Disk.Dir(), "archives"), room: a.Disk.Spare}
	}
	srv, err := tileserver.New(tileserver.Config{
		CacheControl:         cfg.CacheControl,
		NegativeCacheControl: cfg.NegativeCacheControl,
		StaleCacheControl:    cfg.StaleCacheControl,
		CORSAllowOrigins:     cfg.CORSAllowOrigins,
		// On Lambda in BUFFERED mode a memory hit answers with its payload
		// encoded once, when the tile entered the memory tier.
		Payloads:            cfg.OnLambda && cfg.InvokeMode != "RESPONSE_STREAM",
		MissingTile:         cfg.MissingTile,
		MaxTileBytes:        cfg.MaxTileBytes,
		RevalidateAfter:     cfg.RevalidateAfter,
		OriginTimeout:       cfg.OriginTimeout,
		MaxOriginFetches:    cfg.MaxOriginFetches,
		OriginFailureWindow: cfg.OriginFailureWindow,
		StrictOutage:        !cfg.OutageStale,
		AdminToken:          cfg.AdminToken,
		PublicURL:           cfg.PublicURL,
		CDNSecret:           cfg.CDNSecret,
	}, tileserver.Deps{
		Memory:   mem,
		Disk:     a.Disk,
		Origin:   a.Router,
		Archives: a.Router, // NAME.pmtiles serves NAME/ through the same tiers
		Stager:   stager,
		Purger:   a.Purger,
		Metrics:  a.tileMetrics(),
		Logger:   log,
		Follow: func(eng *tiers.Engine) tiers.Syncer {
			a.Follower = follower.New(a.Journal, eng, fcfg, log)
			return a.Follower
		},
	})
	if err != nil {
		return nil, err
	}
	a.Server = srv

	// A STAGE_PREFIXES entry NAME.pmtiles or NAME.mbtiles names a tileset
	// archive: copied whole beside the disk tier, and its tiles then read
	// from the copy.
	var tilePrefixes, archiveKeys []string
	for _, p := range cfg.StagePrefixes {
		if (strings.HasSuffix(p, archive.Ext) || strings.HasSuffix(p, archive.MBTilesExt)) && !strings.Contains(p, "/") {
			archiveKeys = append(archiveKeys, p)
		} else {
			tilePrefixes = append(tilePrefixes, p)
		}
	}
	staging := a.Disk != nil && (len(tilePrefixes) > 0 || cfg.StageManifest != "" || len(archiveKeys) > 0)
	empty := emptyTiers(a.Disk, fcfg.Position)
	if !staging && empty {
		// Tiers that hold nothing need no purge before the first answer:
		// the first check runs beside init and the first requests instead
		// of holding them up (see purge.Follower.Defer for why that keeps
		// every purge).
		a.Follower.Defer(time.Now())
		srv.Engine().CheckBeside(ctx)
	} else {
		// The journal is read before the disk tier is trusted or staging
		// begins: a disk tier kept from an earlier process gets every purge
		// it missed (or is dropped), and the position saved with it moves
		// on with it.
		// Over tiers that hold nothing (a cold start that stages) there is
		// nothing to drop: the head read becomes the position.
		start := a.Follower.Start
		if empty {
			start = a.Follower.StartEmpty
		}
		began := time.Now()
		err = start(ctx)
		a.Init.JournalHead = time.Since(began)
		if err != nil {
			// Until a check succeeds, cached copies are trusted only for
			// SYNC_INTERVAL + SYNC_TIMEOUT after they were fetched; older
			// ones are revalidated with S3.
			log.Warn("purge journal not read at start; cached copies are revalidated until it is", "err", err)
		}
	}
	if staging {
		began := time.Now()
		budget := cmp.Or(cfg.StageBudget, stage.DefaultBudget)
		a.stageArchives(ctx, budget, archiveKeys, log)
		a.Staged = stage.Run(ctx, stage.Config{
			Prefixes: tilePrefixes,
			Manifest: cfg.StageManifest,
			Budget:   max(time.Millisecond, budget-time.Since(began)), // one budget for both
		}, o, a.Disk, log)
		a.Init.Staging = time.Since(began)
		// Purges recorded while staging copied tiles apply to them before
		// the first answer.
		if err := a.Follower.Sync(ctx); err != nil {
			log.Warn("purge journal not read after staging; staged copies are revalidated until it is", "err", err)
		}
	}
	a.Handler = srv
	return a, nil
}

// emptyTiers reports whether the tiers start with nothing a purge could
// concern: no disk tier, or one that holds no tile and no saved journal
// position (a position file means a disk tier kept from an earlier
// process, which is read against the journal first, as is one that cannot
// be read).
func emptyTiers(d *disk.Store, pos journal.PositionStore) bool {
	if d == nil {
		return true
	}
	if d.Len() > 0 || pos == nil {
		return false
	}
	_, saved, err := pos.Load()
	return err == nil && !saved
}

// stageArchives copies the named archives beside the disk tier within the
// staging budget, each only if it fits the space the disk tier will never
// claim; one that does not fit, or fails, is read from S3 by range.
func (a *App) stageArchives(ctx context.Context, budget time.Duration, keys []string, log *slog.Logger) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	dir := filepath.Join(a.Disk.Dir(), "archives")
	for _, key := range keys {
		if name, ok := strings.CutSuffix(key, archive.MBTilesExt); ok {
			// Staged as its first request would stage it; past the budget
			// the copy goes on, and requests wait for it.
			if err := a.Server.StageMBTiles(ctx, name); err != nil {
				if ctx.Err() != nil {
					log.Warn("mbtiles still staging past the staging budget; its first requests wait for it", "key", key)
					continue
				}
				log.Warn("mbtiles not staged at start", "key", key, "err", err)
				continue
			}
			a.StagedArchives = append(a.StagedArchives, key)
			continue
		}
		room, err := a.Disk.Spare()
		if err != nil {
			log.Warn("archive not staged", "key", key, "err", err)
			continue
		}
		c, objectKey, adir, ok := a.locate(key, dir)
		if !ok {
			log.Warn("archive not staged: its source is a directory, without NAME.pmtiles", "key", key)
			continue
		}
		f, etag, err := stage.Archive(ctx, c, objectKey, adir, room)
		if err != nil {
			log.Warn("archive not staged; its tiles are read from S3 by range", "key", key, "err", err)
			continue
		}
		name := strings.TrimSuffix(key, ".pmtiles")
		a.archiveFiles = append(a.archiveFiles, f)
		a.Server.UseLocalArchive(name, etag, pmtiles.ReaderAt(f))
		// Opened now, as its first request would open it, so a malformed
		// archive is reported at start (once, by the probe), not per tile.
		if err := a.Server.OpenArchive(ctx, name); err != nil {
			continue
		}
		a.StagedArchives = append(a.StagedArchives, key)
		log.Info("archive staged", "key", key, "etag", etag, "path", f.Name())
	}
}

// locate returns the client an archive key is staged from, its key there,
// and the directory of its copy: a source's archives are kept apart, so
// that copies of one key in two buckets never replace each other. ok is
// false when the key's source has no such archive.
func (a *App) locate(key, dir string) (c *origin.Client, objectKey, adir string, ok bool) {
	c, objectKey, ok = a.Router.Locate(key)
	if c == a.Origin {
		return c, key, dir, true
	}
	return c, objectKey, filepath.Join(dir, "sources", sources.Name(key)), ok
}

// routedStager stages NAME.mbtiles from the tileset's source.
type routedStager struct {
	r    *origin.Router
	dir  string
	room func() (int64, error)
}

func (s routedStager) Stage(ctx context.Context, key, etag string, size int64) (string, error) {
	c, objectKey, ok := s.r.Locate(key)
	if !ok {
		return "", fmt.Errorf("app: stage %s: %w", key, origin.ErrNotFound)
	}
	f := stage.Files{Origin: c, Dir: s.dir, Room: s.room}
	if c == s.r.Default() {
		return f.Stage(ctx, key, etag, size)
	}
	f.Dir = filepath.Join(s.dir, "sources", sources.Name(key))
	return f.Stage(ctx, objectKey, etag, size)
}

// tileMetrics is a.Metrics as the server's Metrics (nil when off: a nil
// *TileMetrics in the interface would not be nil).
func (a *App) tileMetrics() tileserver.Metrics {
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
